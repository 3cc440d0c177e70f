package redis

import (
	"bytes"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// TestPatternUndecodable: a message on a scope's (or a channel's) pub/sub
// channel that does not decode may have been a publication its
// subscribers then never get: the broker reports the scope (the channel)
// lost at its place, after what came before it, and delivers what
// follows.
func TestPatternUndecodable(t *testing.T) {
	srv := redistest.Start(t)
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, IOTimeout: time.Second})
	const scope, ch = "bad:", "bad:a"
	if err := b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	waitPattern(t, b, ev, scope, ch, "before")
	expectData(t, ev, ch, "before")

	if _, err := srv.Cli("publish", b.scopeName(scope), "garbage"); err != nil {
		t.Fatal(err)
	}
	waitScopeLost(t, ev, scope)
	if _, err := srv.Cli("publish", b.shard(ch).pubsubName(ch), "garbage"); err != nil {
		t.Fatal(err)
	}
	waitLost(t, ev, ch)
	mustPublish(t, b, ch, "after")
	expectData(t, ev, ch, "after")
}

// slowHandler is an EventHandler that blocks in HandleRuns until open is
// closed, counting pattern publications and recording scope losses.
type slowHandler struct {
	open       chan struct{}
	patterns   atomic.Int64
	scopesLost chan []string
}

func (h *slowHandler) HandleRuns(runs []broker.Run) error {
	<-h.open
	for _, r := range runs {
		if r.Scope != "" {
			h.patterns.Add(int64(len(r.Pubs)))
		}
	}
	return nil
}
func (h *slowHandler) HandleJoin(string, *broker.ClientInfo) error  { return nil }
func (h *slowHandler) HandleLeave(string, *broker.ClientInfo) error { return nil }
func (h *slowHandler) HandleControl([]byte) error                   { return nil }
func (h *slowHandler) HandlePatternScopeLost(scopes []string) error {
	h.scopesLost <- scopes
	return nil
}

// TestPatternSlowReader: a node that reads its pattern connection too
// slowly (its handler is stuck) is dropped by Redis once the connection's
// output buffer passes client-output-buffer-limit pubsub. That is a loss
// like any other: once the node reads again and has subscribed the scope
// again, the scope is reported lost.
func TestPatternSlowReader(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := srv.Cli("config", "set", "client-output-buffer-limit", "pubsub 256kb 128kb 1"); err != nil {
		t.Fatal(err)
	}
	b := newEngine(t, Config{Addresses: []string{srv.Addr}, IOTimeout: time.Second}).Broker()
	h := &slowHandler{open: make(chan struct{}), scopesLost: make(chan []string, 100)}
	if err := b.Run(h); err != nil {
		t.Fatalf("Run: %v", err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(h.open)
		}
	}
	defer release()
	const scope, ch = "slow:", "slow:a"
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	data := bytes.Repeat([]byte("x"), 1024)
	items := make([]broker.PublishItem, 500)
	eventually(t, "Redis to drop the slow pattern connection", func() bool {
		for i := range items {
			items[i] = broker.PublishItem{Channel: ch, Data: data, Opts: broker.PublishOptions{PatternScope: scope}}
		}
		b.PublishMany(items)
		return outputBufferDisconnections(t, srv) > 0
	})
	release()
	select {
	case lost := <-h.scopesLost:
		if len(lost) != 1 || lost[0] != scope {
			t.Errorf("scopes reported lost: %q, want %q", lost, scope)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the scope was never reported lost")
	}
	t.Logf("%d pattern publications handed over", h.patterns.Load())
}

// outputBufferDisconnections is how many clients Redis dropped for
// passing their output buffer limit, from its log (INFO stats counts them
// only from Redis 7.2).
func outputBufferDisconnections(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(srv.Dir, "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(log, []byte("overcoming of output buffer limits"))
}
