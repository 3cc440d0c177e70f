package occupancytest

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gyrehq/gyre/broker"
)

const (
	channel = broker.OccupancyChannel
	user    = broker.OccupancyUser
)

// testBadKeys: an unknown kind or an empty key is refused; RunOccupancy
// runs once; a closed tracker refuses everything but Close.
func testBadKeys(e *env) {
	n := e.tracker()
	for _, c := range []struct {
		kind broker.OccupancyKind
		key  string
	}{{0, "x"}, {3, "x"}, {channel, ""}, {user, ""}} {
		if err := n.Hold(c.kind, c.key, nil); !errors.Is(err, broker.ErrBadOccupancyKey) {
			e.t.Errorf("Hold(%v, %q): %v, want ErrBadOccupancyKey", c.kind, c.key, err)
		}
		if err := n.Release(c.kind, c.key); !errors.Is(err, broker.ErrBadOccupancyKey) {
			e.t.Errorf("Release(%v, %q): %v, want ErrBadOccupancyKey", c.kind, c.key, err)
		}
	}
	if err := n.RunOccupancy(nil, defaultOptions); err == nil {
		e.t.Error("RunOccupancy with a nil handler: no error")
	}
	if err := n.RunOccupancy(e.rec.handler(n.n, nil), broker.OccupancyOptions{Lease: -time.Second}); err == nil {
		e.t.Error("RunOccupancy with a negative lease: no error")
	}
	e.run(n, defaultOptions, nil)
	if err := n.RunOccupancy(e.rec.handler(n.n, nil), defaultOptions); err == nil {
		e.t.Error("RunOccupancy twice: no error")
	}
	if err := n.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	if err := n.Close(); err != nil {
		e.t.Errorf("Close again: %v", err)
	}
	k := e.key(channel, "closed")
	if err := n.Hold(k.kind, k.name, nil); err == nil {
		e.t.Error("Hold after Close: no error")
	}
	if err := n.Release(k.kind, k.name); err == nil {
		e.t.Error("Release after Close: no error")
	}
}

// testOccupiedOnce: holds of every node make one occupied; releases of
// all but the last make nothing; the last makes one vacated, no sooner
// than the delay after it.
func testOccupiedOnce(e *env) {
	nodes := e.cluster(3, defaultOptions)
	k := e.key(channel, "once")
	for _, n := range nodes {
		e.hold(n, k, nil)
	}
	e.rec.waitLen(k, 1)
	for _, n := range nodes[:len(nodes)-1] {
		e.release(n, k)
	}
	last := time.Now()
	e.release(nodes[len(nodes)-1], k)
	s := e.rec.waitVacated(k, last)
	e.rec.checkSeq(k, true, false)
	e.notBefore(s[1], last, defaultOptions.ChannelDelay, "vacated")
	if s[1].TimeMs < last.UnixMilli()-1 {
		e.t.Errorf("vacated at %d, before the last release at %d", s[1].TimeMs, last.UnixMilli())
	}
	if s[0].ID == s[1].ID {
		e.t.Errorf("occupied and vacated share ID %s", s[0].ID)
	}
}

// testFlapWithinDelay: a release followed within the delay by a hold
// (on another node when there are several) makes no event at all; the
// release after it makes one vacated.
func testFlapWithinDelay(e *env) {
	o := defaultOptions
	o.ChannelDelay = time.Second
	nodes := e.cluster(2, o)
	a, b := nodes[0], nodes[len(nodes)-1]
	k := e.key(channel, "flap")
	e.hold(a, k, nil)
	e.rec.waitLen(k, 1)
	start := time.Now()
	e.release(a, k)
	e.hold(b, k, nil)
	if took := time.Since(start); took >= o.ChannelDelay/2 {
		e.t.Skipf("the release and the hold took %v, too close to the delay of %v to tell a flap", took, o.ChannelDelay)
	}
	last := time.Now()
	e.release(b, k)
	s := e.rec.waitVacated(k, last)
	e.rec.checkSeq(k, true, false)
	e.notBefore(s[1], last, o.ChannelDelay, "vacated")
}

// testKinds: a channel and a user of one name are two keys; a user's
// events carry the info of the holder whose hold put it online.
func testKinds(e *env) {
	nodes := e.cluster(2, defaultOptions)
	a, b := nodes[0], nodes[len(nodes)-1]
	name := e.key(user, "both").name
	u, c := key{user, name}, key{channel, name}
	infoA, infoB := []byte(`{"name":"a"}`), []byte(`{"name":"b"}`)
	e.hold(a, u, infoA)
	e.rec.waitLen(u, 1)
	e.hold(b, u, infoB)
	e.hold(a, c, nil)
	e.rec.waitLen(c, 1)
	e.release(a, u)
	last := time.Now()
	e.release(b, u)
	e.release(a, c)
	su, sc := e.rec.waitVacated(u, last), e.rec.waitVacated(c, last)
	e.rec.checkSeq(u, true, false)
	e.rec.checkSeq(c, true, false)
	for _, a := range su {
		if a.Kind != user || a.Key != name || !bytes.Equal(a.Info, infoA) {
			e.t.Errorf("user event %+v, want kind user, key %q, info %s", a.OccupancyEvent, name, infoA)
		}
	}
	for _, a := range sc {
		if a.Kind != channel || a.Key != name || a.Info != nil {
			e.t.Errorf("channel event %+v, want kind channel, key %q, no info", a.OccupancyEvent, name)
		}
	}
	ids := map[string]bool{}
	for _, a := range append(su, sc...) {
		if ids[a.ID] {
			e.t.Errorf("ID %s given twice", a.ID)
		}
		ids[a.ID] = true
	}
}

// testHoldBeforeRun: holds and releases before RunOccupancy are applied
// once it runs.
func testHoldBeforeRun(e *env) {
	n := e.tracker()
	held, flapped := e.key(channel, "early"), e.key(user, "early")
	e.hold(n, held, nil)
	e.hold(n, flapped, []byte("x"))
	e.release(n, flapped)
	e.run(n, defaultOptions, nil)
	e.rec.waitLen(held, 1)
	last := time.Now()
	e.release(n, held)
	e.rec.waitVacated(held, last)
	e.rec.checkSeq(held, true, false)
	// The early pair may be applied as it happened or not at all; the
	// key ends vacated either way.
	if s := e.rec.seq(flapped); len(s) > 0 {
		e.rec.waitLen(flapped, 2)
		e.rec.checkSeq(flapped, true, false)
	}
}

// testHandlerRetry: events of failed handler calls come again with the
// same IDs and contents, in order.
func testHandlerRetry(e *env) {
	const failures = 3
	var mu sync.Mutex
	failed := map[string]broker.OccupancyEvent{}
	calls := 0
	fail := func(ctx context.Context, events []broker.OccupancyEvent) error {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls > failures {
			return nil
		}
		for _, ev := range events {
			ev.Info = bytes.Clone(ev.Info)
			failed[ev.ID] = ev
		}
		return errors.New("backend down")
	}
	n := e.tracker()
	e.run(n, defaultOptions, fail)
	k := e.key(user, "retry")
	e.hold(n, k, []byte("info"))
	e.rec.waitLen(k, 1)
	last := time.Now()
	e.release(n, k)
	s := e.rec.waitVacated(k, last)
	e.rec.checkSeq(k, true, false)
	mu.Lock()
	defer mu.Unlock()
	if len(failed) == 0 {
		e.t.Fatal("no handler call failed")
	}
	got := map[string]broker.OccupancyEvent{}
	for _, a := range s {
		got[a.ID] = a.OccupancyEvent
	}
	for id, ev := range failed {
		if g, ok := got[id]; !ok || !sameEvent(g, ev) {
			e.t.Errorf("event %+v of a failed call came back as %+v (found %v)", ev, g, ok)
		}
	}
}

// testConcurrentPairs: goroutines of a fresh node each hold a key of
// their own and release it at once: every hold that returned counts,
// each key makes exactly occupied then vacated.
func testConcurrentPairs(e *env) {
	o := defaultOptions
	o.ChannelDelay = 20 * time.Millisecond
	n := e.cluster(1, o)[0]
	const goroutines, each = 8, 20
	keys := make([][]key, goroutines)
	for g := range keys {
		for range each {
			keys[g] = append(keys[g], e.key(channel, "pair"))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for _, k := range keys[g] {
				if err := n.Hold(k.kind, k.name, nil); err != nil {
					errs <- err
					return
				}
				if err := n.Release(k.kind, k.name); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatal(err)
	}
	for _, ks := range keys {
		for _, k := range ks {
			e.rec.waitLen(k, 2)
			e.rec.checkSeq(k, true, false)
		}
	}
}

// testDeadNode: the lease keeps a live node's holds; once a node is
// closed without releasing, the keys only it held are vacated (to
// another node's handler) after its lease and the delay, and the keys
// another node holds stay occupied.
func testDeadNode(e *env) {
	o := defaultOptions
	nodes := e.cluster(2, o)
	a, b := nodes[0], nodes[1]
	alone, shared := e.key(channel, "alone"), e.key(user, "shared")
	e.hold(a, alone, nil)
	e.hold(a, shared, []byte("a"))
	e.hold(b, shared, []byte("b"))
	e.rec.waitLen(alone, 1)
	e.rec.waitLen(shared, 1)
	// Long enough for the lease to run out were it not renewed.
	time.Sleep(o.Lease + o.Lease/2 + o.ChannelDelay)
	e.rec.checkSeq(alone, true)
	closed := time.Now()
	if err := a.Close(); err != nil {
		e.t.Fatal(err)
	}
	// The lease runs out after the close: the node renewed it before.
	s := e.rec.waitVacated(alone, closed)
	e.rec.checkSeq(alone, true, false)
	e.notBefore(s[1], closed, o.ChannelDelay, "vacated of a dead node's key")
	if s[1].node != b.n {
		e.t.Errorf("vacated handed to node %d, want %d (the other is closed)", s[1].node, b.n)
	}
	last := time.Now()
	e.release(b, shared)
	s = e.rec.waitVacated(shared, last)
	e.rec.checkSeq(shared, true, false)
	e.notBefore(s[1], last, o.UserDelay, "offline")
}

// testClosedMidDelivery: the events a node's handler was given when the
// node closed go, with the same IDs, to another node's handler.
func testClosedMidDelivery(e *env) {
	a := e.tracker()
	given := make(chan []broker.OccupancyEvent, 1)
	block := func(ctx context.Context, events []broker.OccupancyEvent) error {
		select {
		case given <- append([]broker.OccupancyEvent(nil), events...):
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	}
	e.run(a, defaultOptions, block)
	k := e.key(channel, "handover")
	e.hold(a, k, nil)
	var first []broker.OccupancyEvent
	select {
	case first = <-given:
	case <-time.After(waitTimeout):
		e.t.Fatal("gave up waiting for the first node's handler")
	}
	b := e.tracker()
	e.run(b, defaultOptions, nil)
	if err := a.Close(); err != nil {
		e.t.Fatal(err)
	}
	s := e.rec.waitLen(k, 1)
	if s[0].node != b.n {
		e.t.Fatalf("handed to node %d, want %d", s[0].node, b.n)
	}
	found := false
	for _, ev := range first {
		if ev.Kind == k.kind && ev.Key == k.name {
			found = true
			if !sameEvent(ev, s[0].OccupancyEvent) {
				e.t.Errorf("the closed node was given %+v, the other %+v", ev, s[0].OccupancyEvent)
			}
		}
	}
	if !found {
		e.t.Fatalf("the closed node's handler was given %+v, not %v", first, k)
	}
	// The key is still held: the closed node's lease ends it.
	e.rec.waitVacated(k, time.UnixMilli(s[0].TimeMs))
	e.rec.checkSeq(k, true, false)
}

// testChurn: many keys held and released at random by every node, two
// goroutines each, with short delays so that some flaps cancel and some
// do not: each key's events alternate and end in the final state; once
// everything is released, every key ends vacated. Handler calls take a
// few milliseconds, so that two nodes handing over one key at once would
// be seen.
func testChurn(e *env) {
	o := broker.OccupancyOptions{ChannelDelay: 40 * time.Millisecond, UserDelay: 20 * time.Millisecond, Lease: defaultOptions.Lease}
	// Handler calls that take a while, as a backend's do: two nodes
	// handing over one key at once would overlap.
	slow := func(context.Context, []broker.OccupancyEvent) error {
		time.Sleep(5 * time.Millisecond)
		return nil
	}
	nodes := e.cluster(2, o, slow)
	const perWorker, workersPerNode, ops = 30, 2, 300
	type worker struct {
		n    *node
		keys []key
		held map[key]bool
	}
	var workers []*worker
	for _, n := range nodes {
		for range workersPerNode {
			w := &worker{n: n, held: map[key]bool{}}
			for i := range perWorker {
				kind := channel
				if i%3 == 0 {
					kind = user
				}
				// The workers of a node use keys of their own (a node's
				// calls for one key are sequential); the nodes share
				// them.
				w.keys = append(w.keys, key{kind, e.key(kind, "churn").name})
			}
			workers = append(workers, w)
		}
	}
	// Give every node's workers the same keys: worker i of each node.
	for i, w := range workers {
		w.keys = workers[i%workersPerNode].keys
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(workers))
	for i, w := range workers {
		rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
		wg.Go(func() {
			for range ops {
				k := w.keys[rng.IntN(len(w.keys))]
				var err error
				if w.held[k] {
					err = w.n.Release(k.kind, k.name)
				} else {
					err = w.n.Hold(k.kind, k.name, []byte(k.name))
				}
				if err != nil {
					errs <- err
					return
				}
				w.held[k] = !w.held[k]
				if rng.IntN(20) == 0 {
					time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatalf("churn: %v", err)
	}
	final := map[key]bool{}
	for _, w := range workers {
		for _, k := range w.keys {
			final[k] = final[k] || w.held[k]
		}
	}
	settled := func() bool {
		for k, held := range final {
			s := e.rec.seq(k)
			if len(s) == 0 && !held {
				continue
			}
			if len(s) == 0 || s[len(s)-1].Occupied != held {
				return false
			}
		}
		return true
	}
	e.rec.waitFor("every key's events to end in its final state", settled)
	for k := range final {
		e.rec.checkSeq(k)
	}
	for _, w := range workers {
		for k, held := range w.held {
			if held {
				e.release(w.n, k)
				w.held[k] = false
			}
		}
	}
	for k := range final {
		final[k] = false
	}
	e.rec.waitFor("every key's events to end vacated", settled)
	events, most := 0, 0
	for k := range final {
		n := len(e.rec.seq(k))
		events, most = events+n, max(most, n)
	}
	e.t.Logf("churn: %d events over %d keys, at most %d for one", events, len(final), most)
	for k := range final {
		e.rec.checkSeq(k)
		for _, a := range e.rec.seq(k) {
			if a.Kind == user && string(a.Info) != k.name {
				e.t.Fatalf("%v: info %q", k, a.Info)
			}
		}
	}
}
