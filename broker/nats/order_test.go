package nats

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// storeEnv is NATS and a Redis store that several brokers share, as the
// nodes of one redisnats cluster do.
type storeEnv struct {
	nats  *natstest.Server
	redis *redistest.Server
	n     int
}

func newStoreEnv(t *testing.T) *storeEnv {
	return &storeEnv{nats: natstest.Start(t), redis: redistest.Start(t)}
}

// store returns a new Redis store of the shared streams.
func (e *storeEnv) store(t *testing.T) *redis.Store {
	t.Helper()
	r, err := redis.New(redis.Config{Addresses: []string{e.redis.Addr}, Prefix: "order"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r.Store()
}

// node returns a running broker on the shared NATS and streams.
func (e *storeEnv) node(t *testing.T, cfg Config) (*Broker, *handler) {
	t.Helper()
	e.n++
	cfg.Store = e.store(t)
	cfg.Name = "node" + strconv.Itoa(e.n)
	b := newBroker(t, e.nats, cfg)
	return b, run(t, b)
}

var kept = broker.PublishOptions{HistorySize: 1000, HistoryTTL: time.Minute}

// offsetsOf returns the offsets of what h got for channel on its own path.
func (h *handler) offsetsOf(channel string) []uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []uint64
	for _, r := range h.runs {
		if r.Channel == channel && r.Scope == "" {
			for _, p := range r.Pubs {
				out = append(out, p.Position.Offset)
			}
		}
	}
	return out
}

// TestConcurrentPublishersInOrder: two nodes publishing into one channel
// at once have their messages cross on the way to a third; the third
// hands every publication over once, in offset order.
func TestConcurrentPublishersInOrder(t *testing.T) {
	e := newStoreEnv(t)
	a, _ := e.node(t, Config{})
	b, _ := e.node(t, Config{})
	c, hc := e.node(t, Config{})
	const ch, each = "race", 500
	if err := c.Subscribe(ch); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, p := range []*Broker{a, b} {
		wg.Go(func() {
			for i := range each {
				if _, _, err := p.Publish(ch, []byte(strconv.Itoa(i)), kept); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	eventually(t, "every publication", func() bool { return len(hc.offsetsOf(ch)) >= 2*each })
	if got, want := hc.offsetsOf(ch), span(1, 2*each); !slices.Equal(got, want) {
		t.Fatalf("offsets handed over: %v", got)
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if len(hc.lost) != 0 {
		t.Errorf("losses reported without a loss: %v", hc.lost)
	}
}

func span(from, to uint64) []uint64 {
	var out []uint64
	for o := from; o <= to; o++ {
		out = append(out, o)
	}
	return out
}

// TestGapFilledFromStore: publications that were stored but never reached
// NATS (appended to the store directly) are read from the store when the
// one after them arrives, and handed over in order, without a loss.
func TestGapFilledFromStore(t *testing.T) {
	e := newStoreEnv(t)
	a, _ := e.node(t, Config{ReorderWait: 10 * time.Millisecond})
	c, hc := e.node(t, Config{ReorderWait: 10 * time.Millisecond})
	const ch = "gap"
	if err := c.Subscribe(ch); err != nil {
		t.Fatal(err)
	}
	publishKept(t, a, ch, "1")
	appendOnly(t, e.store(t), ch, "2", "3")
	publishKept(t, a, ch, "4")
	eventually(t, "four publications", func() bool { return len(hc.offsetsOf(ch)) >= 4 })
	if got := hc.pubs(ch, "", ""); !slices.Equal(got, []string{"1", "2", "3", "4"}) {
		t.Fatalf("handed over %q", got)
	}
	if got := hc.offsetsOf(ch); !slices.Equal(got, span(1, 4)) {
		t.Fatalf("offsets %v", got)
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if len(hc.lost) != 0 {
		t.Errorf("losses reported: %v", hc.lost)
	}
}

// TestGapBeyondStoreReported: when the store no longer has what is
// missing (evicted by the history size), the channel is reported lost
// before the publication after the gap is handed over.
func TestGapBeyondStoreReported(t *testing.T) {
	e := newStoreEnv(t)
	a, _ := e.node(t, Config{ReorderWait: 10 * time.Millisecond})
	c, hc := e.node(t, Config{ReorderWait: 10 * time.Millisecond})
	const ch = "evicted"
	small := broker.PublishOptions{HistorySize: 2, HistoryTTL: time.Minute}
	if err := c.Subscribe(ch); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Publish(ch, []byte("1"), small); err != nil {
		t.Fatal(err)
	}
	st := e.store(t)
	items := []broker.StoreItem{}
	for _, d := range []string{"2", "3", "4", "5"} {
		items = append(items, broker.StoreItem{PublishItem: broker.PublishItem{Channel: ch, Data: []byte(d), Opts: small}})
	}
	st.Append(items)
	if _, _, err := a.Publish(ch, []byte("6"), small); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the last publication", func() bool { return slices.Contains(hc.pubs(ch, "", ""), "6") })
	hc.mu.Lock()
	defer hc.mu.Unlock()
	// The store keeps two: 5 and 6, by the time 6 arrives.
	if want := []string{"pub evicted 1", "lost evicted", "pub evicted 5", "pub evicted 6"}; !slices.Equal(hc.log, want) {
		t.Fatalf("got %q, want %q", hc.log, want)
	}
}

func publishKept(t *testing.T, b *Broker, ch, data string) {
	t.Helper()
	if _, _, err := b.Publish(ch, []byte(data), kept); err != nil {
		t.Fatal(err)
	}
}

// appendOnly stores publications without sending them.
func appendOnly(t *testing.T, st broker.Store, ch string, data ...string) {
	t.Helper()
	var items []broker.StoreItem
	for _, d := range data {
		items = append(items, broker.StoreItem{PublishItem: broker.PublishItem{Channel: ch, Data: []byte(d), Opts: kept}})
	}
	st.Append(items)
	for _, it := range items {
		if it.Err != nil {
			t.Fatal(it.Err)
		}
	}
}

// TestSubscribeStartsAtTop: what was stored before the channel was
// subscribed is not handed over; what comes after is, from the next
// offset on.
func TestSubscribeStartsAtTop(t *testing.T) {
	e := newStoreEnv(t)
	a, _ := e.node(t, Config{})
	c, hc := e.node(t, Config{})
	const ch = "top"
	for i := range 3 {
		publishKept(t, a, ch, fmt.Sprint("before", i))
	}
	if err := c.Subscribe(ch); err != nil {
		t.Fatal(err)
	}
	publishKept(t, a, ch, "after")
	hc.waitPubs(t, ch, "", "", "after")
	if got := hc.offsetsOf(ch); !slices.Equal(got, []uint64{4}) {
		t.Fatalf("offsets %v, want [4]", got)
	}
}

// TestOutageCaughtUpFromStore: what was stored while NATS was down
// reaches a node once it is connected again, read from the store, with no
// loss to report and without waiting for a later publication.
func TestOutageCaughtUpFromStore(t *testing.T) {
	e := newStoreEnv(t)
	a, _ := e.node(t, Config{})
	c, hc := e.node(t, Config{})
	const ch = "outage"
	if err := c.Subscribe(ch); err != nil {
		t.Fatal(err)
	}
	publishKept(t, a, ch, "1")
	hc.waitPubs(t, ch, "", "", "1")
	e.nats.Kill()
	eventually(t, "the broker to notice", func() bool { return c.Healthy() != nil })
	appendOnly(t, e.store(t), ch, "2", "3")
	e.nats.Restart(t)
	hc.waitPubs(t, ch, "", "", "1", "2", "3")
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if len(hc.lost) != 0 {
		t.Errorf("losses reported although the store had everything: %v", hc.lost)
	}
}

// TestOutageOnNewStream: a channel subscribed before it had a stream,
// whose first publications were stored while NATS was down, gets them
// from the store once connected, with no loss to report.
func TestOutageOnNewStream(t *testing.T) {
	e := newStoreEnv(t)
	c, hc := e.node(t, Config{})
	const ch = "fresh"
	if err := c.Subscribe(ch); err != nil {
		t.Fatal(err)
	}
	e.nats.Kill()
	eventually(t, "the broker to notice", func() bool { return c.Healthy() != nil })
	appendOnly(t, e.store(t), ch, "1", "2")
	e.nats.Restart(t)
	hc.waitPubs(t, ch, "", "", "1", "2")
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if len(hc.lost) != 0 {
		t.Errorf("losses reported for a stream that began while NATS was down: %v", hc.lost)
	}
}
