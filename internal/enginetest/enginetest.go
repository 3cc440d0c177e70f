package enginetest

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
)

// Engine is the variant a test runs on, as Each hands it.
type Engine struct {
	v    *variant
	same *groups
}

// Name is the variant's name, as in GYRE_ENGINES and the subtest name.
func (e Engine) Name() string { return e.v.name }

// Multinode tells whether nodes made with Same share channels, history
// and presence. The memory engine's nodes share nothing.
func (e Engine) Multinode() bool { return e.v.multinode }

// Config returns cfg with Broker, PresenceManager and MapBroker set to a
// fresh engine of the variant, sharing nothing with any other engine:
// every call has a key prefix of its own. The memory variant leaves
// Broker and PresenceManager unset, so the node makes its own, and gives
// a memory MapBroker of its own.
func (e Engine) Config(t testing.TB, cfg gyre.Config) gyre.Config {
	t.Helper()
	return e.with(t, cfg, nextPrefix())
}

// Same is Config for nodes of one cluster: every call of one test (by
// t.Name()) with the same group gets an engine under the same prefix, so
// its nodes share channels, history and presence. A variant whose nodes
// cannot share (see Multinode) skips t.
func (e Engine) Same(t testing.TB, cfg gyre.Config, group string) gyre.Config {
	t.Helper()
	if !e.v.multinode {
		t.Skipf("%s: nodes cannot share an engine", e.v.name)
	}
	return e.with(t, cfg, e.same.prefix(t.Name()+"\x00"+group))
}

func (e Engine) with(t testing.TB, cfg gyre.Config, prefix string) gyre.Config {
	t.Helper()
	return e.v.open(t, prefix).set(t, cfg)
}

// parts are what a variant opens for one engine; nil parts leave the
// node's default.
type parts struct {
	broker   broker.Broker
	presence broker.PresenceManager
	maps     broker.MapBroker
	// occupancy makes the engine's occupancy tracker (one per node).
	occupancy func(t testing.TB) broker.OccupancyTracker
}

// set returns cfg with the parts; and with an occupancy tracker of the
// engine when cfg asks for events (user status, a namespace's state
// events) and has none.
func (p parts) set(t testing.TB, cfg gyre.Config) gyre.Config {
	cfg.Broker, cfg.PresenceManager, cfg.MapBroker = p.broker, p.presence, p.maps
	if cfg.Occupancy == nil && wantsOccupancy(cfg) {
		cfg.Occupancy = p.occupancy(t)
	}
	return cfg
}

// wantsOccupancy tells whether cfg makes channel state or user status
// events.
func wantsOccupancy(cfg gyre.Config) bool {
	if cfg.UserStatusEvents || cfg.Channels.WithoutNamespace.StateEvents {
		return true
	}
	for _, ns := range cfg.Channels.Namespaces {
		if ns.StateEvents {
			return true
		}
	}
	return false
}

// variant is one way of running the engine. Adding one is adding an entry
// to variants.
type variant struct {
	name string
	// multinode: engines opened under one prefix share channels, history
	// and presence between the nodes using them.
	multinode bool
	// require skips or fails t when what the variant runs on is not
	// installed. Nil requires nothing.
	require func(t testing.TB)
	// open returns the parts of an engine under prefix, closed when t
	// ends. A nil Broker or PresenceManager leaves the node's memory
	// one; every variant has a MapBroker.
	open func(t testing.TB, prefix string) parts
}

// groups hands out the prefixes of Same within one Each subtest.
type groups struct {
	mu       sync.Mutex
	prefixes map[string]string
}

func (g *groups) prefix(key string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.prefixes == nil {
		g.prefixes = map[string]string{}
	}
	p, ok := g.prefixes[key]
	if !ok {
		p = nextPrefix()
		g.prefixes[key] = p
	}
	return p
}

var prefixes atomic.Int64

// nextPrefix is a key prefix no engine of this test binary had: tests
// share the servers, and a test run twice (-count) must not find the
// streams of its first run.
func nextPrefix() string { return "et" + strconv.FormatInt(prefixes.Add(1), 10) }

// mainRan is set by Main: shared servers are stopped only through it.
var mainRan atomic.Bool

// Main runs the package's tests and stops the servers they started, then
// calls each of stops (for servers of other kinds the tests shared). Call
// it from TestMain.
func Main(m *testing.M, stops ...func()) {
	mainRan.Store(true)
	code := m.Run()
	stopServers()
	for _, stop := range stops {
		stop()
	}
	os.Exit(code)
}

// Each runs fn as a subtest per variant, named after it, in the order of
// variants; GYRE_ENGINES narrows them.
func Each(t *testing.T, fn func(t *testing.T, e Engine)) {
	t.Helper()
	if !mainRan.Load() {
		t.Fatal("enginetest: the package's TestMain must call enginetest.Main(m), which stops the shared servers")
	}
	vs, err := selected(os.Getenv("GYRE_ENGINES"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			if v.require != nil {
				v.require(t)
			}
			fn(t, Engine{v: v, same: &groups{}})
		})
	}
}

// selected returns the variants named in list (comma-separated), or all
// when list is empty.
func selected(list string) ([]*variant, error) {
	var out []*variant
	if strings.TrimSpace(list) == "" {
		for i := range variants {
			out = append(out, &variants[i])
		}
		return out, nil
	}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(variants, func(v variant) bool { return v.name == name })
		if i < 0 {
			return nil, fmt.Errorf("enginetest: GYRE_ENGINES names %q; known: %s", name, strings.Join(names(), ", "))
		}
		if !slices.Contains(out, &variants[i]) {
			out = append(out, &variants[i])
		}
	}
	return out, nil
}

func names() []string {
	names := make([]string, len(variants))
	for i, v := range variants {
		names[i] = v.name
	}
	return names
}
