package admin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/server/admin"
)

// sseReader reads the events of a tail stream.
type sseReader struct {
	t    *testing.T
	resp *http.Response
	sc   *bufio.Scanner
}

// openTail opens the tail of channel and reads up to its opening comment,
// which comes once the subscription is in place.
func openTail(t *testing.T, e *env, channel, tok string) *sseReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/admin/tail?channel="+channel+"&token="+tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("tail: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := &sseReader{t: t, resp: resp, sc: bufio.NewScanner(resp.Body)}
	if line := r.line(); !strings.HasPrefix(line, ": tail of ") {
		t.Fatalf("tail opened with %q", line)
	}
	return r
}

func (r *sseReader) line() string {
	r.t.Helper()
	if !r.sc.Scan() {
		r.t.Fatalf("tail stream ended: %v", r.sc.Err())
	}
	return r.sc.Text()
}

// event reads up to the next event, skipping comments.
func (r *sseReader) event() (name string, data string) {
	r.t.Helper()
	for {
		line := r.line()
		switch {
		case line == "" && name != "":
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

type tailedPub struct {
	Channel string            `json:"channel"`
	Offset  uint64            `json:"offset"`
	Data    json.RawMessage   `json:"data"`
	B64Data string            `json:"b64data"`
	Tags    map[string]string `json:"tags"`
	TimeMS  int64             `json:"time_ms"`
	Info    *struct {
		User   string `json:"user"`
		Client string `json:"client"`
	} `json:"info"`
}

func (r *sseReader) publication() tailedPub {
	r.t.Helper()
	name, data := r.event()
	if name != "publication" {
		r.t.Fatalf("event %q, want publication", name)
	}
	var p tailedPub
	mustJSON(r.t, data, &p)
	return p
}

// TestTail: a publication through the admin API reaches the tail's
// reader with its data and tags; binary data comes as b64data.
func TestTail(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, eng enginetest.Engine) {
		e := newEnvOn(t, newNode(t, eng.Config(t, nodeConfig("node-a"))), admin.Config{})
		tok := e.token()
		tail := openTail(t, e, "chat:room", tok)
		r := e.postJSON("/admin/api", tok, `{"method":"publish","params":{"channel":"chat:room","data":{"text":"hi"},"tags":{"kind":"greeting"}}}`)
		if r.status != 200 || !strings.Contains(r.body, `"result"`) {
			t.Fatalf("publish: %d %s", r.status, r.body)
		}
		p := tail.publication()
		if p.Channel != "chat:room" || string(p.Data) != `{"text":"hi"}` || p.Tags["kind"] != "greeting" || p.Offset != 1 || p.TimeMS == 0 {
			t.Fatalf("tailed %+v", p)
		}
		if _, err := e.node.Publish("chat:room", []byte{0xff, 0x00}); err != nil {
			t.Fatal(err)
		}
		if p := tail.publication(); p.B64Data != "/wA=" || p.Data != nil || p.Offset != 2 {
			t.Fatalf("binary publication tailed as %+v", p)
		}
	})
}

// TestTailCluster: the tail sees what another node publishes.
func TestTailCluster(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, eng enginetest.Engine) {
		a := newNode(t, eng.Same(t, nodeConfig("node-a"), "cluster"))
		b := newNode(t, eng.Same(t, nodeConfig("node-b"), "cluster"))
		e := newEnvOn(t, a, admin.Config{})
		tail := openTail(t, e, "news", e.token())
		if _, err := b.Publish("news", []byte(`"from b"`), gyre.WithTags(map[string]string{"node": "b"})); err != nil {
			t.Fatal(err)
		}
		if p := tail.publication(); string(p.Data) != `"from b"` || p.Tags["node"] != "b" {
			t.Fatalf("tailed %+v", p)
		}
	})
}

// TestTailPattern: a pattern tails every matching channel, each
// publication naming its own.
func TestTailPattern(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, eng enginetest.Engine) {
		e := newEnvOn(t, newNode(t, eng.Config(t, nodeConfig("node-a"))), admin.Config{})
		tail := openTail(t, e, "wild:room.*", e.token())
		for _, ch := range []string{"wild:room.1", "wild:hall.1", "wild:room.2"} {
			if _, err := e.node.Publish(ch, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		// Two channels: no order between them on a sharded engine.
		got := []string{tail.publication().Channel, tail.publication().Channel}
		slices.Sort(got)
		if !slices.Equal(got, []string{"wild:room.1", "wild:room.2"}) {
			t.Fatalf("tailed channels %v, want wild:room.1 and wild:room.2", got)
		}
	})
}

// TestTailRefused: a channel the node does not know, or none, is a 400
// with a log line; the tail is not counted as a client.
func TestTailRefused(t *testing.T) {
	e := newEnv(t, admin.Config{})
	tok := e.token()
	if r := e.get("/admin/tail?channel=nope:x&token="+tok, ""); r.status != 400 || !strings.Contains(r.body, "nope:x") {
		t.Fatalf("unknown namespace: %d %s", r.status, r.body)
	}
	if r := e.get("/admin/tail?token="+tok, ""); r.status != 400 {
		t.Fatalf("no channel: %d %s", r.status, r.body)
	}
	openTail(t, e, "news", tok)
	info := e.node.LocalInfo()
	if info.NumClients != 0 || info.NumUsers != 0 {
		t.Fatalf("the tail shows as a client: %+v", info)
	}
}

// TestTailPing: the stream carries a comment every PingInterval.
func TestTailPing(t *testing.T) {
	e := newEnv(t, admin.Config{PingInterval: 10 * time.Millisecond})
	tail := openTail(t, e, "news", e.token())
	for tail.line() != ": ping" {
	}
}

// TestTailEnds: when the reader goes, the tail's subscription goes too.
func TestTailEnds(t *testing.T) {
	e := newEnv(t, admin.Config{})
	tail := openTail(t, e, "news", e.token())
	if n := e.node.LocalInfo().NumSubs; n != 1 {
		t.Fatalf("subscriptions with a tail open: %d", n)
	}
	tail.resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for e.node.LocalInfo().NumSubs != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the tail's subscription outlived its reader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The subscription ends with the request's context, on its own
	// goroutine; the handler logs the end on the request's.
	for len(e.logs.Find(slog.LevelInfo, "admin tail ended", map[string]string{"channel": "news"})) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("no log line for the end of the tail")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
