package gyre_test

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/condwait"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// fanOuts is a gyre.DeliveryTracer that records what it is told.
type fanOuts struct {
	mu   sync.Mutex
	cond *sync.Cond
	got  []gyre.FanOut
}

func newFanOuts() *fanOuts {
	r := &fanOuts{}
	r.cond = sync.NewCond(&r.mu)
	return r
}

func (r *fanOuts) FannedOut(f *gyre.FanOut) {
	c := *f
	c.Trace = bytes.Clone(f.Trace) // the engine reuses f and its bytes
	r.mu.Lock()
	r.got = append(r.got, c)
	r.cond.Broadcast()
	r.mu.Unlock()
}

// wait waits until n fan-outs were recorded and returns all recorded.
func (r *fanOuts) wait(t *testing.T, n int) []gyre.FanOut {
	t.Helper()
	if !condwait.Until(r.cond, 10*time.Second, func() bool { return len(r.got) >= n }) {
		t.Fatalf("%d fan-outs recorded, want %d: %+v", len(r.all()), n, r.all())
	}
	return r.all()
}

func (r *fanOuts) all() []gyre.FanOut {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// traceOf is a trace context of the usual 25 bytes that differs with seed.
func traceOf(seed byte) []byte {
	return bytes.Repeat([]byte{seed}, 25)
}

// checkFanOut fails the test unless f is the fan-out of the publication
// with trace tc at offset in channel (pattern for a pattern path), with
// the counts of want.
func checkFanOut(t *testing.T, f gyre.FanOut, tc []byte, channel, pattern string, offset uint64, want gyre.FanOut) {
	t.Helper()
	if !bytes.Equal(f.Trace, tc) || f.Channel != channel || f.Pattern != pattern || f.Offset != offset {
		t.Errorf("fan-out of trace %x, channel %q, pattern %q, offset %d; want %x, %q, %q, %d", f.Trace, f.Channel, f.Pattern, f.Offset, tc, channel, pattern, offset)
	}
	if f.Subscribers != want.Subscribers || f.Reached != want.Reached || f.Filtered != want.Filtered || f.Dropped != want.Dropped {
		t.Errorf("%s (pattern %q): subscribers %d, reached %d, filtered %d, dropped %d; want %d, %d, %d, %d", channel, pattern,
			f.Subscribers, f.Reached, f.Filtered, f.Dropped, want.Subscribers, want.Reached, want.Filtered, want.Dropped)
	}
	if pubs := max(want.Publications, 1); f.Publications != pubs {
		t.Errorf("%s (pattern %q): a report of %d publications, want %d", channel, pattern, f.Publications, pubs)
	}
	if f.Start.IsZero() || f.End.Before(f.Start) {
		t.Errorf("fan-out from %v to %v", f.Start, f.End)
	}
}

// TestDeliveryTracerCounts: a traced publication's fan-out is reported
// once, counting the subscribers its tag filter held back; a publication
// without a trace is not reported at all.
func TestDeliveryTracerCounts(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		tr := newFanOuts()
		cfg := filterConfig()
		cfg.DeliveryTracer = tr
		n, url := newTestNode(t, b.Config(t, cfg))
		const ch = "scores:traced"
		var all, plain []*testClient
		for i := range 5 {
			c := dial(t, url, protocol.TypeJSON)
			c.connect(connToken(t, fmt.Sprint("u", i), 0, nil))
			req := &protocol.SubscribeRequest{Channel: ch}
			if i >= 2 {
				req.Tf = mustParse(t, `team == "b"`)
			} else {
				plain = append(plain, c)
			}
			if r := c.Subscribe(req); r.Error != nil {
				t.Fatalf("subscribe: %+v", r.Error)
			}
			all = append(all, c)
		}
		teamA := gyre.WithTags(map[string]string{"team": "a"})
		teamB := gyre.WithTags(map[string]string{"team": "b"})
		mustPublish(t, n, ch, []byte(`{"untraced":1}`), teamA)
		r1, err := n.Publish(ch, []byte(`{"traced":1}`), teamA, gyre.WithTrace(traceOf(1)))
		if err != nil {
			t.Fatal(err)
		}
		r2, err := n.Publish(ch, []byte(`{"traced":2}`), teamB, gyre.WithTrace(traceOf(2)))
		if err != nil {
			t.Fatal(err)
		}
		// Fan-outs of one channel come in order: the untraced one was
		// fanned out before the first of these was reported.
		fs := tr.wait(t, 2)
		if len(fs) != 2 {
			t.Fatalf("%d fan-outs reported, want the 2 traced ones: %+v", len(fs), fs)
		}
		checkFanOut(t, fs[0], traceOf(1), ch, "", r1.Offset, gyre.FanOut{Subscribers: 5, Reached: 2, Filtered: 3})
		checkFanOut(t, fs[1], traceOf(2), ch, "", r2.Offset, gyre.FanOut{Subscribers: 5, Reached: 5})
		for _, c := range plain {
			c.WaitPubs(ch, 3)
		}
		for _, c := range all {
			c.WaitPubs(ch, 1)
		}
	})
}

// TestDeliveryTracerDropped: a subscriber the publication cannot be
// encoded for (binary data, a JSON client) counts as dropped.
func TestDeliveryTracerDropped(t *testing.T) {
	tr := newFanOuts()
	cfg := chatConfig()
	cfg.DeliveryTracer = tr
	n, url := newTestNode(t, cfg)
	const ch = "chat:binary"
	pb := dial(t, url, protocol.TypeProtobuf)
	pb.connect(connToken(t, "pb", 0, nil))
	pb.MustSubscribe(ch)
	js := dial(t, url, protocol.TypeJSON)
	js.connect(connToken(t, "js", 0, nil))
	js.MustSubscribe(ch)
	r, err := n.Publish(ch, []byte{0xff, 0x00, 0xfe}, gyre.WithTrace(traceOf(3)))
	if err != nil {
		t.Fatal(err)
	}
	fs := tr.wait(t, 1)
	checkFanOut(t, fs[0], traceOf(3), ch, "", r.Offset, gyre.FanOut{Subscribers: 2, Reached: 1, Dropped: 1})
	pb.WaitPubs(ch, 1)
	if ce := js.WaitClose(); ce.Code != 3506 {
		t.Errorf("JSON client closed with %d, want 3506", ce.Code)
	}
}

// TestDeliveryTracerPattern: a traced publication is reported once per
// path on a node: its channel's subscribers, and each matching pattern's,
// with the pattern named.
func TestDeliveryTracerPattern(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		tr := newFanOuts()
		cfg := wildcardConfig()
		cfg.DeliveryTracer = tr
		n, url := newTestNode(t, b.Config(t, cfg))
		for i, sub := range []string{"geo:eu.*", "geo:eu.*", "geo:eu.>", "geo:eu.paris"} {
			c := dial(t, url, protocol.TypeJSON)
			c.connect(connToken(t, fmt.Sprint("u", i), 0, nil))
			c.MustSubscribe(sub)
		}
		mustPublish(t, n, "geo:eu.paris", []byte(`{"untraced":1}`))
		r, err := n.Publish("geo:eu.paris", []byte(`{}`), gyre.WithTrace(traceOf(4)))
		if err != nil {
			t.Fatal(err)
		}
		// Paths have no order between them.
		fs := tr.wait(t, 3)
		slices.SortFunc(fs, func(a, b gyre.FanOut) int { return cmp.Compare(a.Pattern, b.Pattern) })
		if len(fs) != 3 {
			t.Fatalf("%d fan-outs reported, want 3: %+v", len(fs), fs)
		}
		checkFanOut(t, fs[0], traceOf(4), "geo:eu.paris", "", r.Offset, gyre.FanOut{Subscribers: 1, Reached: 1})
		checkFanOut(t, fs[1], traceOf(4), "geo:eu.paris", "geo:eu.*", r.Offset, gyre.FanOut{Subscribers: 2, Reached: 2})
		checkFanOut(t, fs[2], traceOf(4), "geo:eu.paris", "geo:eu.>", r.Offset, gyre.FanOut{Subscribers: 1, Reached: 1})
	})
}

// TestDeliveryTracerAcrossNodes: a traced publication published on one
// node is reported with its trace by the node whose clients it reaches,
// and not by the publishing node, which has no subscribers; items of one
// PublishMany keep each their own trace.
func TestDeliveryTracerAcrossNodes(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		trA, trB := newFanOuts(), newFanOuts()
		cfgA, cfgB := chatConfig(), chatConfig()
		cfgA.DeliveryTracer, cfgB.DeliveryTracer = trA, trB
		a, _ := newTestNode(t, b.Same(t, cfgA, "trace"))
		_, urlB := newTestNode(t, b.Same(t, cfgB, "trace"))
		const ch = "chat:across"
		c := dial(t, urlB, protocol.TypeProtobuf)
		c.connect(connToken(t, "bob", 0, nil))
		c.MustSubscribe(ch)

		items := []gyre.PublishItem{
			{Data: []byte(`{"n":1}`), Options: gyre.PublishOptions{Trace: traceOf(5)}},
			{Data: []byte(`{"n":2}`)},
			{Data: []byte(`{"n":3}`), Options: gyre.PublishOptions{Trace: traceOf(6)}},
		}
		publishMany(a, ch, items)
		for _, it := range items {
			if it.Err != nil {
				t.Fatal(it.Err)
			}
		}
		fs := trB.wait(t, 2)
		if len(fs) != 2 {
			t.Fatalf("node B reported %d fan-outs, want 2: %+v", len(fs), fs)
		}
		checkFanOut(t, fs[0], traceOf(5), ch, "", items[0].Result.Offset, gyre.FanOut{Subscribers: 1, Reached: 1})
		checkFanOut(t, fs[1], traceOf(6), ch, "", items[2].Result.Offset, gyre.FanOut{Subscribers: 1, Reached: 1})
		c.WaitPubs(ch, 3)
		if got := trA.all(); len(got) != 0 {
			t.Errorf("node A, without subscribers, reported %+v", got)
		}
	})
}

// TestDeliveryTracerBatch: the publications of one batch, which share
// their trace, are reported together, however the broker groups them
// into runs: per trace, the reports add up to every publication and
// every delivery, and a publication with another trace in between
// starts a report of its own.
func TestDeliveryTracerBatch(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		tr := newFanOuts()
		cfg := chatConfig()
		cfg.DeliveryTracer = tr
		n, url := newTestNode(t, b.Config(t, cfg))
		const ch = "chat:batch"
		for i := range 2 {
			c := dial(t, url, protocol.TypeProtobuf)
			c.connect(connToken(t, fmt.Sprint("u", i), 0, nil))
			c.MustSubscribe(ch)
		}
		batch, other := traceOf(7), traceOf(8)
		var items []gyre.PublishItem
		for i := range 5 {
			tc := batch
			if i == 3 {
				tc = other
			}
			items = append(items, gyre.PublishItem{Data: []byte(fmt.Sprintf(`{"n":%d}`, i)), Options: gyre.PublishOptions{Trace: tc}})
		}
		publishMany(n, ch, items)
		for _, it := range items {
			if it.Err != nil {
				t.Fatal(it.Err)
			}
		}
		pubs := func(fs []gyre.FanOut, tc []byte) (p, reached int) {
			for _, f := range fs {
				if bytes.Equal(f.Trace, tc) {
					p += f.Publications
					reached += f.Reached
				}
			}
			return p, reached
		}
		// The predicate runs with tr's lock held: it reads tr.got.
		if !condwait.Until(tr.cond, 10*time.Second, func() bool {
			a, _ := pubs(tr.got, batch)
			o, _ := pubs(tr.got, other)
			return a >= 4 && o >= 1
		}) {
			t.Fatalf("reports: %+v", tr.all())
		}
		fs := tr.all()
		if b.Name() == "memory" && len(fs) != 3 {
			// The memory broker hands a PublishMany over in one run: the
			// first three, the other, the last. (A Redis pub/sub read may
			// split it further.)
			t.Errorf("%d reports of a batch of 5 with one other trace inside, want 3: %+v", len(fs), fs)
		}
		if p, reached := pubs(fs, batch); p != 4 || reached != 8 {
			t.Errorf("batch trace: %d publications, %d deliveries reported; want 4 and 8", p, reached)
		}
		if p, reached := pubs(fs, other); p != 1 || reached != 2 {
			t.Errorf("other trace: %d publications, %d deliveries reported; want 1 and 2", p, reached)
		}
		checkFanOut(t, fs[0], batch, ch, "", items[0].Result.Offset, gyre.FanOut{Subscribers: 2, Reached: 2 * fs[0].Publications, Publications: fs[0].Publications})
	})
}
