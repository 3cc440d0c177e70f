package occupancytest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/gyrehq/gyre/broker"
)

// testRoutesIsolated: channels and users on two routes of a
// broker.RoutedOccupancy, on every node; the handler fails every user
// event (their backend is down). Channels must still make occupied and
// vacated, and the users' events come once the backend is back, in
// order, none lost.
func testRoutesIsolated(e *env) {
	if e.o.routes == nil {
		e.t.Skip("needs route trackers (Routes)")
	}
	newRoute := e.o.routes(e.t)
	route := func(kind broker.OccupancyKind, _ string) string { return kind.String() }
	var down atomic.Bool
	var refused atomic.Int64
	down.Store(true)
	failUsers := func(_ context.Context, events []broker.OccupancyEvent) error {
		for _, ev := range events {
			if ev.Kind == broker.OccupancyUser && down.Load() {
				refused.Add(1)
				return errors.New("user status backend down")
			}
		}
		return nil
	}
	count := 1
	if e.o.shared {
		count = 2
	}
	nodes := make([]*node, count)
	for i := range nodes {
		r := broker.NewRoutedOccupancy(route, map[string]broker.OccupancyTracker{
			"channel": newRoute("channel"), "user": newRoute("user"),
		})
		nodes[i] = &node{r, int(e.nodes.Add(1))}
		e.t.Cleanup(func() {
			if err := r.Close(); err != nil {
				e.t.Errorf("Close: %v", err)
			}
		})
		e.run(nodes[i], defaultOptions, failUsers)
	}
	if err := nodes[0].Hold(broker.OccupancyChannel, "", nil); !errors.Is(err, broker.ErrBadOccupancyKey) {
		e.t.Errorf("Hold of an empty channel: %v, want ErrBadOccupancyKey", err)
	}
	stray := broker.NewRoutedOccupancy(func(broker.OccupancyKind, string) string { return "nowhere" }, nil)
	if err := stray.Hold(broker.OccupancyUser, "u", nil); !errors.Is(err, broker.ErrNoOccupancyRoute) {
		e.t.Errorf("Hold of a key without route: %v, want ErrNoOccupancyRoute", err)
	}

	u, c := e.key(user, "down"), e.key(channel, "up")
	last := nodes[len(nodes)-1]
	e.hold(nodes[0], u, []byte("info"))
	e.hold(nodes[0], c, nil)
	e.hold(last, c, nil)
	e.rec.waitLen(c, 1)
	waitCount(e.t, "a user event refused", func() bool { return refused.Load() > 0 })
	e.release(nodes[0], c)
	e.release(last, c)
	e.rec.waitLen(c, 2)
	if got := e.rec.seq(u); len(got) != 0 {
		e.t.Fatalf("user events accepted while their backend is down: %s", describe(got))
	}
	e.release(nodes[0], u)
	down.Store(false)
	e.rec.waitLen(u, 2)
	e.rec.checkSeq(c, true, false)
	e.rec.checkSeq(u, true, false)
}
