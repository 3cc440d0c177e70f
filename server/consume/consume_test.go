package consume_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/consume"
)

// newNode runs a node whose channels keep history, with cfg's broker.
func newNode(t *testing.T, cfg gyre.Config) *gyre.Node {
	t.Helper()
	cfg.Channels = gyre.ChannelConfig{
		WithoutNamespace: gyre.ChannelOptions{HistorySize: 100, HistoryTTL: time.Minute},
	}
	n, err := gyre.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return n
}

func history(t *testing.T, n *gyre.Node, ch string) string {
	t.Helper()
	pubs, _, err := n.History(ch, -1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pubs {
		out = append(out, string(p.Data))
	}
	return strings.Join(out, " ")
}

func TestDispatchRunsInOrderAndSkipsWhatCannotRun(t *testing.T) {
	n := newNode(t, gyre.Config{})
	d := consume.NewDispatcher("test", "postgresql", api.NewExecutor(n, api.Config{}), nil)
	msgs := []consume.Message{
		{Method: "publish", Payload: []byte(`{"channel":"a","data":1}`), Position: "id 1"},
		{Payload: []byte(`{"method":"publish","payload":{"channel":"a","data":2}}`), Position: "id 2"},
		{Payload: []byte(`{"method":"publish"`), Position: "id 3"},
		{Method: "publish", Payload: []byte(`{"channel":"a","data":3}`), Position: "id 4"},
		{Payload: []byte(`4`), Publication: &consume.Publication{Channels: []string{"a", "b"}}, Position: "id 5"},
		{Method: "nope", Payload: []byte(`{}`), Position: "id 6"},
		{Err: errors.New("bad header"), Position: "id 7"},
		{Method: "batch", Payload: []byte(`{"commands":[{"publish":{"channel":"b","data":5}},{"publish":{"channel":"a","data":6}}]}`), Position: "id 8"},
	}
	done, err := d.Dispatch(context.Background(), msgs)
	if err != nil || done != len(msgs) {
		t.Fatalf("Dispatch = %d, %v; want %d, nil", done, err, len(msgs))
	}
	if got := history(t, n, "a"); got != "1 2 3 4 6" {
		t.Errorf("history of a = %q, want 1 2 3 4 6", got)
	}
	if got := history(t, n, "b"); got != "4 5" {
		t.Errorf("history of b = %q, want 4 5", got)
	}
	s := consumeSnapshot(t, d)
	if s.Processed != 5 || s.Skipped != 3 || s.Retries != 0 {
		t.Errorf("processed %d, skipped %d, retries %d; want 5, 3, 0", s.Processed, s.Skipped, s.Retries)
	}
	if !strings.Contains(s.Error, "bad header") {
		t.Errorf("last error %q, want the malformed message's", s.Error)
	}
}

func consumeSnapshot(t *testing.T, d *consume.Dispatcher) consume.Snapshot {
	t.Helper()
	var set consume.Set
	set.Add(d, nil)
	return set.Snapshots()[0]
}

// While the broker is down, a command is run again and again, the
// messages after it wait, and nothing is reported done; once the broker
// is back, everything runs in order.
func TestDispatchRetriesWhileTheBrokerIsDown(t *testing.T) {
	srv := redistest.Start(t)
	e, err := redis.New(redis.Config{Addresses: []string{srv.Addr}, Prefix: "consumetest", IOTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t, gyre.Config{Broker: e.Broker(), PresenceManager: e.PresenceManager()})
	d := consume.NewDispatcher("test", "kafka", api.NewExecutor(n, api.Config{}), nil)
	pub := func(data string) consume.Message {
		return consume.Message{Method: "publish", Payload: []byte(`{"channel":"r","data":` + data + `}`), Position: "offset " + data}
	}
	if done, err := d.Dispatch(context.Background(), []consume.Message{pub("1")}); done != 1 || err != nil {
		t.Fatalf("Dispatch with Redis up = %d, %v", done, err)
	}

	srv.Kill()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for consumeSnapshot(t, d).Retries < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	done, err := d.Dispatch(ctx, []consume.Message{pub("2"), pub("3")})
	if done != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Dispatch with Redis down, stopped = %d, %v; want 0, context.Canceled", done, err)
	}
	if s := consumeSnapshot(t, d); s.Skipped != 0 || s.Processed != 1 {
		t.Fatalf("processed %d, skipped %d with Redis down; want 1, 0", s.Processed, s.Skipped)
	}

	srv.Restart()
	if done, err := d.Dispatch(context.Background(), []consume.Message{pub("2"), pub("3")}); done != 2 || err != nil {
		t.Fatalf("Dispatch after Redis came back = %d, %v", done, err)
	}
	// Redis came back empty: its history holds what ran since.
	if got := history(t, n, "r"); got != "2 3" {
		t.Errorf("history = %q, want 2 3", got)
	}
}

func TestParsePublication(t *testing.T) {
	p, err := consume.ParsePublication(" a, b ,", "k", "true", "7", "e", map[string]string{"x": "y"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Channels, "|") != "a|b" || !p.Delta || p.Version != 7 || p.IdempotencyKey != "k" || p.VersionEpoch != "e" || p.Tags["x"] != "y" {
		t.Errorf("ParsePublication = %+v", p)
	}
	for _, bad := range []struct{ channels, delta, version string }{
		{"", "", ""}, {" , ", "", ""}, {"a", "maybe", ""}, {"a", "", "-1"}, {"a", "", "x"},
	} {
		if _, err := consume.ParsePublication(bad.channels, "", bad.delta, bad.version, "", nil); err == nil {
			t.Errorf("ParsePublication(%q, delta %q, version %q) succeeded", bad.channels, bad.delta, bad.version)
		}
	}
}
