package redis

import (
	"bytes"
	"log/slog"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// newEngine returns an Engine closed when the test ends.
func newEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	if cfg.Logger == nil && testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if cfg.Prefix == "" {
		// A prefix per engine keeps tests sharing a Redis apart.
		cfg.Prefix = "gyretest"
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Engine.Close: %v", err)
		}
	})
	return e
}

// setups are the Redis shapes the contract suites run against.
type setup struct {
	name string
	cfg  func(t testing.TB) Config
}

func setups() []setup {
	return []setup{
		{"Single", func(t testing.TB) Config {
			return Config{Addresses: []string{redistest.Start(t).Addr}}
		}},
		{"SingleRESP2", func(t testing.TB) Config {
			return Config{Addresses: []string{redistest.Start(t).Addr}, ForceRESP2: true}
		}},
		{"Sharded", func(t testing.TB) Config {
			return Config{Addresses: []string{redistest.Start(t).Addr, "redis://" + redistest.Start(t).Addr}, PubSubShards: 2}
		}},
		{"Cluster", func(t testing.TB) Config {
			return Config{ClusterAddresses: redistest.StartCluster(t, 3).Addrs(), ClusterShards: 8}
		}},
	}
}

// events records publications, pattern publications and losses for tests
// outside the suites.
type events struct {
	pubs       chan delivered
	patterns   chan patternDelivered
	lost       chan []string
	scopesLost chan []string
}

type patternDelivered struct {
	scope   string
	channel string
	pub     *broker.Publication
}

type delivered struct {
	channel string
	pub     *broker.Publication
	sp      broker.StreamPosition
	prev    *broker.Publication
}

func newEvents() *events {
	return &events{
		pubs: make(chan delivered, 10000), patterns: make(chan patternDelivered, 10000),
		lost: make(chan []string, 100), scopesLost: make(chan []string, 100),
	}
}

// HandleRuns queues each publication of runs on pubs, or on patterns for
// runs with a scope. What it queues is copied: the runs belong to the
// broker once the call returns.
func (e *events) HandleRuns(runs []broker.Run) error {
	for _, run := range runs {
		for _, rp := range run.Pubs {
			if run.Scope != "" {
				e.patterns <- patternDelivered{run.Scope, run.Channel, clonePub(rp.Pub)}
				continue
			}
			e.pubs <- delivered{run.Channel, clonePub(rp.Pub), rp.Position, clonePub(rp.Prev)}
		}
	}
	return nil
}

func (e *events) HandleJoin(string, *broker.ClientInfo) error  { return nil }
func (e *events) HandleLeave(string, *broker.ClientInfo) error { return nil }
func (e *events) HandleControl([]byte) error                   { return nil }
func (e *events) HandleSubscriptionLost(chs []string) error {
	e.lost <- chs
	return nil
}

func (e *events) HandlePatternScopeLost(scopes []string) error {
	e.scopesLost <- scopes
	return nil
}

var (
	_ SubscriptionLostHandler        = (*events)(nil)
	_ broker.PatternScopeLostHandler = (*events)(nil)
)

// clonePub returns a copy of p that shares nothing with it; nil for nil.
func clonePub(p *broker.Publication) *broker.Publication {
	if p == nil {
		return nil
	}
	c := *p
	c.Data = bytes.Clone(p.Data)
	c.Tags = maps.Clone(p.Tags)
	if p.Info != nil {
		info := *p.Info
		info.ConnInfo = bytes.Clone(info.ConnInfo)
		info.ChanInfo = bytes.Clone(info.ChanInfo)
		c.Info = &info
	}
	return &c
}

// nextPattern waits for the next pattern publication.
func (e *events) nextPattern(t testing.TB) patternDelivered {
	t.Helper()
	select {
	case d := <-e.patterns:
		return d
	case <-time.After(20 * time.Second):
		t.Fatal("gave up waiting for a pattern publication")
		return patternDelivered{}
	}
}

// next waits for the next delivered publication.
func (e *events) next(t testing.TB) delivered {
	t.Helper()
	select {
	case d := <-e.pubs:
		return d
	case <-time.After(20 * time.Second):
		t.Fatal("gave up waiting for a publication")
		return delivered{}
	}
}

// eventually calls check until it returns true, failing after a generous
// deadline; it decides only when to give up, asserting no timing.
func eventually(t testing.TB, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eachRESP runs f as two subtests, with the protocol Redis speaks by
// default (RESP3) and with Config.ForceRESP2.
func eachRESP(t *testing.T, f func(t *testing.T, resp2 bool)) {
	t.Run("RESP3", func(t *testing.T) { f(t, false) })
	t.Run("RESP2", func(t *testing.T) { f(t, true) })
}
