package cluster_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hookSecret signs the event hook requests of every node.
const hookSecret = "gyre-cluster-test-hook-secret"

// hookWait bounds every wait for events: a node killed needs its lease
// (presence TTL) and the delay to pass before its events are made, and a
// backend back after an outage is retried with back-off. A hang guard,
// not a timing assertion.
const hookWait = 60 * time.Second

// hookBackend is the application backend of the event hooks: an HTTP
// server in the test process that every node posts to, at
// /hooks/<node>/<proxy>, so that it knows which node delivered what. It
// checks each request as a backend would (method, content type, the
// signature computed here by hand, the fields of the events), and while
// down answers 503, which the node sends again.
type hookBackend struct {
	url string

	mu   sync.Mutex
	down bool
	// downProxies refuse while the others take.
	downProxies map[string]bool
	// requests are all the requests, refused or taken, in arrival order.
	requests []hookRequest
	// problems are what a request did wrong; the test fails on any.
	problems []string
}

// hookRequest is one request of a node.
type hookRequest struct {
	node, proxy string
	refused     bool
	events      []hookEvent
}

// hookEvent is one event of a request body.
type hookEvent struct {
	ID      string          `json:"id"`
	Channel string          `json:"channel"`
	User    string          `json:"user"`
	Type    string          `json:"type"`
	TimeMs  int64           `json:"time_ms"`
	Info    json.RawMessage `json:"info"`
	B64Info string          `json:"b64info"`
}

// key is the channel or the user the event is about; the tests never
// name a channel like a user.
func (e hookEvent) key() string { return e.Channel + e.User }

// same tells whether two sends of an event carry the same event.
func (e hookEvent) same(o hookEvent) bool {
	return e.ID == o.ID && e.Channel == o.Channel && e.User == o.User && e.Type == o.Type &&
		e.TimeMs == o.TimeMs && string(e.Info) == string(o.Info) && e.B64Info == o.B64Info
}

func startHookBackend(t *testing.T) *hookBackend {
	b := &hookBackend{}
	srv := httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

// endpoint is the URL node posts the events of proxy to.
func (b *hookBackend) endpoint(node, proxy string) string {
	return b.url + "/hooks/" + node + "/" + proxy
}

// proxyTypes are the event types each proxy of the test configuration
// may send.
var proxyTypes = map[string][]string{
	"room":  {"occupied", "vacated"},
	"lobby": {"occupied", "vacated"},
	"users": {"online", "offline"},
}

func (b *hookBackend) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	node, proxy, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/hooks/"), "/")
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s %s: ", node, proxy)+fmt.Sprintf(format, args...))
	}
	if err != nil {
		bad("read body: %v", err)
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		bad("%s with content type %q", r.Method, r.Header.Get("Content-Type"))
	}
	if err := checkHookSignature(r.Header.Get("X-Gyre-Signature"), body, time.Now()); err != nil {
		bad("%v", err)
	}
	var req struct {
		Events []hookEvent `json:"events"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		bad("body %q: %v", body, err)
	}
	types, known := proxyTypes[proxy]
	if !known {
		bad("no such proxy")
	}
	if len(req.Events) == 0 {
		bad("no events in %q", body)
	}
	for _, e := range req.Events {
		channelEvent := proxy != "users"
		if e.ID == "" || !slices.Contains(types, e.Type) || e.TimeMs <= 0 ||
			channelEvent != (e.Channel != "") || channelEvent == (e.User != "") {
			bad("malformed event %+v", e)
		}
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, problems...)
	refused := b.down || b.downProxies[proxy]
	b.requests = append(b.requests, hookRequest{node: node, proxy: proxy, refused: refused, events: req.Events})
	if refused {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{}`)
}

// checkHookSignature verifies X-Gyre-Signature as docs/event-hooks.md
// tells a backend to: t=<unix seconds>,v1=<hex HMAC-SHA256 of
// "<t>.<body>">, and t within five minutes of now.
func checkHookSignature(header string, body []byte, now time.Time) error {
	var ts, sig string
	for kv := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return fmt.Errorf("signature header %q", header)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("signature header %q: t is %v away", header, d)
	}
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write([]byte(ts + "." + string(body)))
	if want := hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(sig), []byte(want)) {
		return fmt.Errorf("signature header %q: v1 is not the HMAC of the body", header)
	}
	return nil
}

// setDown makes the backend refuse (true) or take every request.
func (b *hookBackend) setDown(down bool) {
	b.mu.Lock()
	b.down = down
	b.mu.Unlock()
}

// setProxyDown makes the backend refuse (true) or take the requests of
// one proxy ("room", "lobby", "users").
func (b *hookBackend) setProxyDown(proxy string, down bool) {
	b.mu.Lock()
	if b.downProxies == nil {
		b.downProxies = map[string]bool{}
	}
	b.downProxies[proxy] = down
	b.mu.Unlock()
}

// snapshot returns a copy of the requests so far.
func (b *hookBackend) snapshot() []hookRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// taken returns the events about key that the backend took, in order,
// with the node that delivered each.
func (b *hookBackend) taken(key string) (events []hookEvent, nodes []string) {
	for _, r := range b.snapshot() {
		if r.refused {
			continue
		}
		for _, e := range r.events {
			if e.key() == key {
				events = append(events, e)
				nodes = append(nodes, r.node)
			}
		}
	}
	return events, nodes
}

// types lists the types of events.
func types(events []hookEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

// waitTaken waits until the backend took exactly want for each key, in
// that order, and fails the test as soon as a key got anything else.
func (b *hookBackend) waitTaken(t testing.TB, want map[string][]string) {
	t.Helper()
	deadline := time.Now().Add(hookWait)
	for {
		done := true
		for key, w := range want {
			got, _ := b.taken(key)
			gotTypes := types(got)
			if len(gotTypes) > len(w) || !slices.Equal(gotTypes, w[:len(gotTypes)]) {
				t.Fatalf("backend took %v for %s, want %v", gotTypes, key, w)
			}
			done = done && len(gotTypes) == len(w)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			for key, w := range want {
				got, _ := b.taken(key)
				t.Errorf("backend took %v for %s, want %v", types(got), key, w)
			}
			t.Fatalf("gave up after %v waiting for events", hookWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// expectNow fails the test unless the backend took exactly want for each
// key so far: for what must not happen, checked after the time it would
// have taken.
func (b *hookBackend) expectNow(t testing.TB, want map[string][]string) {
	t.Helper()
	for key, w := range want {
		got, _ := b.taken(key)
		if !slices.Equal(types(got), w) {
			t.Errorf("backend took %v for %s, want %v", types(got), key, w)
		}
	}
}

// waitRequests waits until cond holds for the requests so far.
func (b *hookBackend) waitRequests(t testing.TB, what string, cond func([]hookRequest) bool) {
	t.Helper()
	deadline := time.Now().Add(hookWait)
	for !cond(b.snapshot()) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", hookWait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// check fails the test on what the backend found wrong in any request,
// and checks the delivery of the events about keys: every send of an
// event (same ID) carries the same event, the backend took each event
// once (no ID taken twice: no event was delivered by two nodes, or twice
// by one), each event it refused was taken later, and the events of a
// key came in the order they happened (time_ms). No keys means every
// key.
func (b *hookBackend) check(t testing.TB, keys []string) {
	t.Helper()
	b.mu.Lock()
	for _, p := range b.problems {
		t.Errorf("backend: %s", p)
	}
	b.mu.Unlock()
	first := map[string]hookEvent{}
	takenBy := map[string]string{}
	refused := map[string]bool{}
	last := map[string]hookEvent{}
	for _, r := range b.snapshot() {
		for _, e := range r.events {
			if keys != nil && !slices.Contains(keys, e.key()) {
				continue
			}
			if f, ok := first[e.ID]; !ok {
				first[e.ID] = e
			} else if !f.same(e) {
				t.Errorf("event %s sent as %+v, then as %+v", e.ID, f, e)
			}
			if r.refused {
				refused[e.ID] = true
				continue
			}
			if by, ok := takenBy[e.ID]; ok {
				t.Errorf("event %+v taken twice: from %s, then from %s", e, by, r.node)
			}
			takenBy[e.ID] = r.node
			if l, ok := last[e.key()]; ok && e.TimeMs < l.TimeMs {
				t.Errorf("%s: %+v taken after %+v", e.key(), e, l)
			}
			last[e.key()] = e
		}
	}
	for id := range refused {
		if _, ok := takenBy[id]; !ok {
			t.Errorf("event %+v refused, never taken", first[id])
		}
	}
}
