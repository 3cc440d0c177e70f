package jetstream_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/consume/consumetest"
)

// TestTwoNodesOneDurable: two consumers bound to one durable share its
// messages; each message runs once (the broker's idempotency cache,
// shared by both, would catch a second run).
func TestTwoNodesOneDurable(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	const n = 2000
	msgs := make([]consumetest.Msg, n)
	for i := range msgs {
		msgs[i] = consumetest.Msg{Payload: fmt.Appendf(nil, `{"n":%d}`, i), Headers: map[string]string{
			"centrifugo-channels":        "two",
			"centrifugo-idempotency-key": fmt.Sprint("k", i),
		}}
	}
	node := newTestNode(t)
	c1, _ := p.Consumer("one", "shared", true)
	c2, _ := p.Consumer("two", "shared", true)
	r1 := node.start(t, c1)
	r2 := node.start(t, c2)
	p.Produce(t, 0, msgs...)
	waitFor(t, "every message run", func() bool { return r1.snapshot().Processed+r2.snapshot().Processed >= n })
	pubs := node.rec.published("two")
	if uniqueCount(pubs) != n || len(pubs) != n {
		t.Fatalf("%d publications of %d messages, want %d", len(pubs), uniqueCount(pubs), n)
	}
	if s := node.rec.suppressedCount(); s != 0 {
		t.Fatalf("%d messages ran twice", s)
	}
	if s1, s2 := r1.snapshot(), r2.snapshot(); s1.Processed+s2.Processed != n {
		t.Fatalf("processed %d + %d, want %d", s1.Processed, s2.Processed, n)
	}
	t.Logf("node one ran %d messages, node two %d", r1.snapshot().Processed, r2.snapshot().Processed)
}

// TestBrokerDown: while the broker refuses publishes the batch waits,
// told in progress to JetStream so that AckWait does not hand it out
// again, the lag counting it; then it runs in order.
func TestBrokerDown(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	node := newTestNode(t)
	node.rec.down.Store(true)
	refused := make(chan struct{})
	node.rec.onDown = func() { close(refused) }
	p.Produce(t, 0, publishMsgs("down", 0, 10)...)
	c, _ := p.Consumer("down", "down", false)
	r := node.start(t, c)
	<-refused
	waitFor(t, "lag 10", func() bool { return r.snapshot().Lag == 10 })
	// Longer than AckWait (3s in these tests).
	time.Sleep(4 * time.Second)
	if info := consumerInfo(t, p, "down"); info.NumRedelivered != 0 || info.Delivered.Consumer != 10 {
		t.Fatalf("consumer info %+v: delivered again while in progress", info)
	}
	node.rec.down.Store(false)
	waitFor(t, "every message run", func() bool { return len(node.rec.published("down")) >= 10 })
	checkOrder(t, node.rec.published("down"), 10)
	waitFor(t, "lag 0", func() bool { return r.snapshot().Lag == 0 })
	if s := r.snapshot(); s.Retries == 0 || s.Processed != 10 {
		t.Fatalf("snapshot %+v: want retries, 10 processed", s)
	}
}

// TestShutdownWhileRetrying: a node stopped while its batch waits for the
// broker gives the batch back, and another node runs it.
func TestShutdownWhileRetrying(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, false)
	down := newTestNode(t)
	down.rec.down.Store(true)
	refused := make(chan struct{})
	down.rec.onDown = func() { close(refused) }
	p.Produce(t, 0, publishMsgs("handover", 0, 10)...)
	c, _ := p.Consumer("down", "handover", false)
	r := down.start(t, c)
	<-refused
	r.stop()
	// Given back: delivered again before anything else.
	if info := consumerInfo(t, p, "handover"); info.NumPending != 0 || info.NumRedelivered != 0 {
		t.Fatalf("consumer info %+v: want every message delivered once", info)
	}

	up := newTestNode(t)
	c2, _ := p.Consumer("up", "handover", false)
	up.start(t, c2)
	waitFor(t, "every message run", func() bool { return len(up.rec.published("handover")) >= 10 })
	checkOrder(t, up.rec.published("handover"), 10)
	if s := r.snapshot(); s.Processed != 0 || s.Running {
		t.Fatalf("stopped node %+v: want nothing processed, not running", s)
	}
}
