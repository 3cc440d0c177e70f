package occupancytest

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// Option tells Run about a property of the trackers that the contract
// leaves open.
type Option func(*options)

type options struct {
	shared   bool
	dropping DroppingNode
	routes   RouteNodes
}

// Shared declares that the trackers made for one subtest are nodes of one
// deployment, sharing their holds (Redis): the tests of several nodes
// then run. Without it they are skipped, and the others use one tracker.
func Shared() Option { return func(o *options) { o.shared = true } }

// DroppingNode makes a tracker, not run yet, that logs to log and keeps
// at most backlog transitions of a key waiting for its handler (of the
// key's partition, when the tracker partitions its keys), dropping the
// oldest past it. The suite closes it.
type DroppingNode func(t testing.TB, backlog int, log *slog.Logger) broker.OccupancyTracker

// Dropping declares that the trackers bound their backlog, and gives the
// suite a maker of trackers with a small one: the test of drops then
// runs. It expects such a tracker to implement broker.OccupancyDropCounter,
// to log a Warn line with an attribute "backlog" when it starts
// dropping, and an Info line with an attribute "dropped", the
// transitions dropped meanwhile, once its handler caught up: one of each
// per episode.
func Dropping(make DroppingNode) Option { return func(o *options) { o.dropping = make } }

// RouteNodes is called once per subtest and returns the maker of that
// subtest's trackers of one route of one node (nodes as for NewNodes:
// the trackers of one route on two nodes share their holds when the
// engine shares them), which have not run. The suite closes them.
type RouteNodes func(t testing.TB) func(route string) broker.OccupancyTracker

// Routes gives the suite a maker of route trackers: the tests of
// broker.RoutedOccupancy then run.
func Routes(make RouteNodes) Option { return func(o *options) { o.routes = make } }

// NewNodes is called once per subtest and returns the maker of that
// subtest's trackers, which have not run. The suite closes them.
type NewNodes func(t testing.TB) func() broker.OccupancyTracker

// Run runs the suite. Select parts with -run, e.g.
// -run 'TestOccupancy/Churn'.
func Run(t *testing.T, newNodes NewNodes, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.shared && !o.shared {
				t.Skip("needs trackers sharing their holds (Shared)")
			}
			tt.fn(&env{t: t, o: o, make: newNodes(t), rec: newRecorder(t)})
		})
	}
}

type test struct {
	name   string
	shared bool // needs several nodes
	fn     func(e *env)
}

var tests = []test{
	{"BadKeys", false, testBadKeys},
	{"OccupiedOnce", false, testOccupiedOnce},
	{"FlapWithinDelay", false, testFlapWithinDelay},
	{"Kinds", false, testKinds},
	{"HoldBeforeRun", false, testHoldBeforeRun},
	{"HandlerRetry", false, testHandlerRetry},
	{"ConcurrentPairs", false, testConcurrentPairs},
	{"DeadNode", true, testDeadNode},
	{"ClosedMidDelivery", true, testClosedMidDelivery},
	{"Churn", false, testChurn},
	{"Drops", false, testDrops},
	{"RoutesIsolated", false, testRoutesIsolated},
}

// defaultOptions are short enough for a quick suite, long enough that a
// busy machine renews its leases in time (a lease that runs out makes
// events of its own, which the tests would take for wrong ones).
var defaultOptions = broker.OccupancyOptions{
	ChannelDelay: 300 * time.Millisecond,
	UserDelay:    150 * time.Millisecond,
	Lease:        2 * time.Second,
}

// env is one subtest's nodes and what their handlers accepted.
type env struct {
	t     *testing.T
	o     options
	make  func() broker.OccupancyTracker
	rec   *recorder
	nodes atomic.Int32
}

// node is one tracker and its number in the subtest.
type node struct {
	broker.OccupancyTracker
	n int
}

// tracker makes a tracker, closed when the subtest ends; it has not run.
func (e *env) tracker() *node {
	e.t.Helper()
	tr := e.make()
	e.t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			e.t.Errorf("Close: %v", err)
		}
	})
	return &node{tr, int(e.nodes.Add(1))}
}

// run runs n with o and the recorder's handler behind h.
func (e *env) run(n *node, o broker.OccupancyOptions, h hook) {
	e.t.Helper()
	if err := n.RunOccupancy(e.rec.handler(n.n, h), o); err != nil {
		e.t.Fatalf("RunOccupancy: %v", err)
	}
}

// cluster returns count running nodes, or one when the trackers do not
// share (they would be separate clusters); their handlers run h first.
func (e *env) cluster(count int, o broker.OccupancyOptions, h ...hook) []*node {
	e.t.Helper()
	if !e.o.shared {
		count = 1
	}
	out := make([]*node, count)
	for i := range out {
		out[i] = e.tracker()
		var first hook
		if len(h) > 0 {
			first = h[0]
		}
		e.run(out[i], o, first)
	}
	return out
}

var keySeq atomic.Uint64

// key names a key of kind that no other subtest, or earlier run against
// a backend that outlives the test, uses.
func (e *env) key(kind broker.OccupancyKind, name string) key {
	sub := strings.NewReplacer("/", ".", " ", "_").Replace(e.t.Name())
	return key{kind, fmt.Sprintf("%s:%s:%d.%d", name, sub, time.Now().UnixNano(), keySeq.Add(1))}
}

func (e *env) hold(n *node, k key, info []byte) {
	e.t.Helper()
	if err := n.Hold(k.kind, k.name, info); err != nil {
		e.t.Fatalf("node %d: Hold %v: %v", n.n, k, err)
	}
}

func (e *env) release(n *node, k key) {
	e.t.Helper()
	if err := n.Release(k.kind, k.name); err != nil {
		e.t.Fatalf("node %d: Release %v: %v", n.n, k, err)
	}
}

// notBefore fails the test if a arrived sooner than d after from. A
// millisecond of slack covers the backend's clock counting whole
// milliseconds.
func (e *env) notBefore(a arrival, from time.Time, d time.Duration, what string) {
	e.t.Helper()
	if early := from.Add(d - time.Millisecond).Sub(a.at); early > 0 {
		e.t.Fatalf("%s arrived %v after its cause, before the %v it must wait", what, a.at.Sub(from), d)
	}
}
