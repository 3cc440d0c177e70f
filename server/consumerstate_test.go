package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/consume"
)

// testSource is a consume.Consumer whose source is the test: it runs what
// the test hands it (batches to dispatch, source failures to report) in
// its own goroutine, as a consumer reading a queue would. The dispatcher,
// the executor and the node behind it are the server's own, so what the
// metrics, /health and the admin route show is what the server counted.
// (The real sources, PostgreSQL, Kafka, Redis and NATS, are exercised by
// the consumers' own tests.)
type testSource struct {
	todo chan func(ctx context.Context, d *consume.Dispatcher)
	d    *consume.Dispatcher
}

func (c *testSource) Run(ctx context.Context) error {
	c.d.SourceOK()
	for {
		select {
		case <-ctx.Done():
			return nil
		case f := <-c.todo:
			f(ctx, c.d)
		}
	}
}

// batch hands msgs to the dispatcher as one batch.
func (c *testSource) batch(msgs ...consume.Message) {
	c.todo <- func(ctx context.Context, d *consume.Dispatcher) { _, _ = d.Dispatch(ctx, msgs) }
}

// down reports that the source failed; up that it is back.
func (c *testSource) down(err error) {
	c.todo <- func(_ context.Context, d *consume.Dispatcher) { d.SourceFailed("poll", err) }
}

func (c *testSource) up() {
	c.todo <- func(_ context.Context, d *consume.Dispatcher) { d.SourceOK() }
}

func (c *testSource) lag(n int64) {
	c.todo <- func(_ context.Context, d *consume.Dispatcher) { d.SetLag(n) }
}

// startTestConsumers adds a consumer of each name (its type after a
// colon: "feed:kafka") to s and starts them; they stop before the node.
func startTestConsumers(t *testing.T, s *Server, names ...string) []*testSource {
	t.Helper()
	var out []*testSource
	for _, n := range names {
		name, typ, _ := strings.Cut(n, ":")
		d := consume.NewDispatcher(name, typ, s.exec, slog.New(slog.DiscardHandler))
		c := &testSource{todo: make(chan func(context.Context, *consume.Dispatcher), 16), d: d}
		s.consumers.Add(d, c)
		out = append(out, c)
	}
	s.consumers.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.consumers.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return out
}

// command is a consumed message holding an API command.
func command(method, payload string) consume.Message {
	return consume.Message{Method: method, Payload: []byte(payload), Position: "test"}
}

// healthBody is the body of /health.
type healthBody struct {
	Error     string `json:"error"`
	Consumers map[string]struct {
		Type      string `json:"type"`
		Running   bool   `json:"running"`
		Connected bool   `json:"connected"`
		Lag       int64  `json:"lag"`
		Error     string `json:"error"`
		ErrorTime int64  `json:"error_time_ms"`
	} `json:"consumers"`
}

func getHealth(t *testing.T, base string) (int, healthBody, string) {
	t.Helper()
	status, text := get(t, base+"/health")
	var b healthBody
	if err := json.Unmarshal([]byte(text), &b); err != nil {
		t.Fatalf("/health: %v: %s", err, text)
	}
	return status, b, text
}

// waitFor polls ok until it holds.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConsumersReported: the consumers' state as /metrics, /health and
// the admin route report it, each from the same consume.Set.
func TestConsumersReported(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.Health.Enabled = true
	c.Prometheus.Enabled = true
	c.Admin.Enabled, c.Admin.Password, c.Admin.Secret = true, "pw", "secret"
	s, base := newServer(t, c)
	src := startTestConsumers(t, s, "orders:postgresql", "feed:kafka")
	orders, feed := src[0], src[1]

	// feed runs two publishes, skips a malformed message and an unknown
	// method, and knows its lag; orders loses its source.
	feed.batch(
		command("publish", `{"channel":"news","data":{"n":1}}`),
		consume.Message{Err: errors.New("version header is not a number"), Position: "test"},
		command("publish", `{"channel":"news","data":{"n":2}}`),
		command("no_such_method", `{}`),
	)
	feed.lag(7)
	orders.lag(-1) // its source cannot tell
	orders.down(errors.New("connection refused"))
	waitFor(t, "the consumers' work counted", func() bool {
		snaps := s.consumers.Snapshots()
		return snaps[1].Processed+snaps[1].Skipped == 4 && snaps[1].Lag == 7 && snaps[0].SourceErrors == 1
	})

	// The publishes ran.
	if _, body := post(t, base+"/api/info", `{}`); !strings.Contains(body, `"num_channels"`) {
		t.Fatalf("info: %s", body)
	}

	p := scrapeMetrics(t, base)
	for series, want := range map[string]float64{
		`gyre_consumer_messages_total{consumer="feed",outcome="processed",type="kafka"}`:        2,
		`gyre_consumer_messages_total{consumer="feed",outcome="skipped",type="kafka"}`:          2,
		`gyre_consumer_messages_total{consumer="orders",outcome="processed",type="postgresql"}`: 0,
		`gyre_consumer_source_errors_total{consumer="orders",type="postgresql"}`:                1,
		`gyre_consumer_retries_total{consumer="feed",type="kafka"}`:                             0,
		`gyre_consumer_lag{consumer="feed",type="kafka"}`:                                       7,
		`gyre_consumer_up{consumer="feed",type="kafka"}`:                                        1,
		`gyre_consumer_up{consumer="orders",type="postgresql"}`:                                 0,
		`centrifugo_consumers_messages_processed_total{consumer_name="feed"}`:                   4,
		`centrifugo_consumers_errors_total{consumer_name="orders"}`:                             1,
	} {
		if got, ok := p.series[series]; !ok || got != want {
			t.Errorf("%s = %v (served %v), want %v", series, got, ok, want)
		}
	}
	if _, ok := p.series[`gyre_consumer_lag{consumer="orders",type="postgresql"}`]; ok {
		t.Error("orders' lag is unknown, yet served")
	}

	// /health: 200, the node being fine though orders' source is down.
	status, h, text := getHealth(t, base)
	if status != 200 || h.Error != "" || len(h.Consumers) != 2 {
		t.Fatalf("/health: %d %s", status, text)
	}
	if o := h.Consumers["orders"]; o.Type != "postgresql" || !o.Running || o.Connected || o.Lag != -1 || !strings.Contains(o.Error, "connection refused") || o.ErrorTime == 0 {
		t.Errorf("/health orders: %+v", o)
	}
	if f := h.Consumers["feed"]; f.Type != "kafka" || !f.Running || !f.Connected || f.Lag != 7 || !strings.Contains(f.Error, "no_such_method") {
		t.Errorf("/health feed: %+v", f)
	}
	orders.up()
	waitFor(t, "orders back", func() bool {
		_, h, _ := getHealth(t, base)
		return h.Consumers["orders"].Connected
	})

	// The admin route: this node's snapshots, behind the login.
	if status, _ := get(t, base+"/admin/consumers"); status != http.StatusUnauthorized {
		t.Fatalf("/admin/consumers without a token: %d", status)
	}
	tok := adminLogin(t, base, "pw")
	var got struct {
		NodeName  string             `json:"node_name"`
		Consumers []consume.Snapshot `json:"consumers"`
	}
	status, text = getWithToken(t, base+"/admin/consumers", tok)
	if err := json.Unmarshal([]byte(text), &got); status != 200 || err != nil {
		t.Fatalf("/admin/consumers: %d %v %s", status, err, text)
	}
	want := s.consumers.Snapshots()
	if len(got.Consumers) != 2 || got.NodeName != s.Node().Name() {
		t.Fatalf("/admin/consumers: %s", text)
	}
	for i := range want {
		if got.Consumers[i] != want[i] {
			t.Errorf("/admin/consumers[%d] = %+v, want %+v", i, got.Consumers[i], want[i])
		}
	}
	if f := got.Consumers[1]; f.Processed != 2 || f.Skipped != 2 || f.LastProcessed == 0 || f.Error == "" {
		t.Errorf("feed: %+v", f)
	}
}

// TestHealthWithConsumers: without consumers /health answers {} as
// before; with them, a node that cannot serve answers 503 with its error
// and still the consumers' state, and a consumer held up by it retries.
func TestHealthWithConsumers(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.Health.Enabled = true
	c.Prometheus.Enabled = true
	s, base := newServer(t, c)
	if status, body := get(t, base+"/health"); status != 200 || body != "{}" {
		t.Fatalf("/health without consumers: %d %s", status, body)
	}
	feed := startTestConsumers(t, s, "feed:redis_stream")[0]
	if status, body := get(t, base+"/health"); status != 200 || !strings.Contains(body, `"feed":{"type":"redis_stream","running":true`) {
		t.Fatalf("/health with a consumer: %d %s", status, body)
	}

	// A node shutting down cannot publish: the consumed publish fails
	// for a reason that may pass, and is retried.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Node().Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	feed.batch(command("publish", `{"channel":"news","data":{}}`))
	waitFor(t, "a retry", func() bool { return s.consumers.Snapshots()[0].Retries > 0 })
	status, h, text := getHealth(t, base)
	if status != http.StatusServiceUnavailable || h.Error == "" {
		t.Fatalf("/health of a node shutting down: %d %s", status, text)
	}
	if f := h.Consumers["feed"]; !f.Running || f.Error == "" {
		t.Fatalf("/health of a node shutting down, feed: %s", text)
	}
	p := scrapeMetrics(t, base)
	retries := p.value(`gyre_consumer_retries_total{consumer="feed",type="redis_stream"}`)
	if retries == 0 || p.value(`centrifugo_consumers_errors_total{consumer_name="feed"}`) != retries {
		t.Errorf("retries %v, errors %v", retries, p.value(`centrifugo_consumers_errors_total{consumer_name="feed"}`))
	}
}

func adminLogin(t *testing.T, base, password string) string {
	t.Helper()
	resp, err := http.PostForm(base+"/admin/auth", url.Values{"password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Token == "" {
		t.Fatalf("login: %d %v", resp.StatusCode, err)
	}
	return v.Token
}

func getWithToken(t *testing.T, url, tok string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String()
}
