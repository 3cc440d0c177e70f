package brokertest

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/suitekit"
)

// uniqueChannel names a channel no other subtest (or earlier run against a
// shared backend) uses.
func uniqueChannel(t testing.TB) string { return suitekit.UniqueChannel(t, "brokertest") }

var eventually = suitekit.Eventually

// streamEnv publishes into channel streams and reads them back, through
// a broker (Publish and PublishMany, each channel subscribed first) or a
// store (Append). The stream tests take one, so that brokers and stores
// pass the same checks of offsets, history, idempotency and versions.
type streamEnv struct {
	t       *testing.T
	streams streamReader
	// publishOne publishes one publication: Broker.Publish, or an Append
	// of one item.
	publishOne  func(ch string, data []byte, opts broker.PublishOptions) (broker.StreamPosition, bool, error)
	publishMany func(items []broker.PublishItem)
	// subscribe is called for each channel the test makes; nil for a
	// store, which delivers nothing.
	subscribe func(ch string) error
	// noStreams: a broker declared NoHistory; the tests that need
	// streams skip.
	noStreams bool
}

// streamReader reads and drops streams: what brokers and stores share.
type streamReader interface {
	History(channel string, opts broker.HistoryOptions) ([]*broker.Publication, broker.StreamPosition, error)
	RemoveHistory(channel string) error
}

// brokerEnv is a running broker with a recorder, closed when the subtest
// ends.
type brokerEnv struct {
	*streamEnv
	b         broker.Broker
	rec       *recorder
	opts      options
	newBroker func(t *testing.T) broker.Broker
}

func newBrokerEnv(t *testing.T, newBroker func(t *testing.T) broker.Broker) *brokerEnv {
	t.Helper()
	b := newBroker(t)
	e := &brokerEnv{
		streamEnv: &streamEnv{t: t, streams: b, publishOne: b.Publish, publishMany: b.PublishMany, subscribe: b.Subscribe},
		b:         b,
		newBroker: newBroker,
	}
	e.rec = e.recorder()
	if err := b.Run(e.rec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// recorder returns a new recorder whose contract checks run when the
// subtest ends (after the broker is closed: cleanups run last first).
func (e *brokerEnv) recorder() *recorder {
	r := newRecorder()
	e.t.Cleanup(func() { r.checkContract(e.t) })
	return r
}

// channel returns a fresh channel, which a broker's node is subscribed
// to.
func (e *streamEnv) channel() string {
	e.t.Helper()
	ch := uniqueChannel(e.t)
	if e.subscribe == nil {
		return ch
	}
	if err := e.subscribe(ch); err != nil {
		e.t.Fatalf("Subscribe(%q): %v", ch, err)
	}
	return ch
}

func (e *streamEnv) publish(ch, data string, opts broker.PublishOptions) broker.StreamPosition {
	e.t.Helper()
	e.needStreams(opts)
	sp, suppressed, err := e.publishOne(ch, []byte(data), opts)
	if err != nil {
		e.t.Fatalf("Publish(%q, %q): %v", ch, data, err)
	}
	if suppressed {
		e.t.Fatalf("Publish(%q, %q) suppressed without an idempotency key", ch, data)
	}
	return sp
}

func (e *streamEnv) history(ch string, f broker.HistoryFilter) ([]*broker.Publication, broker.StreamPosition) {
	e.t.Helper()
	e.needStreams(withHistory)
	pubs, top, err := e.streams.History(ch, broker.HistoryOptions{Filter: f})
	if err != nil {
		e.t.Fatalf("History(%q, %+v): %v", ch, f, err)
	}
	return pubs, top
}

// needStreams skips the test when opts need a stream and the broker was
// declared NoHistory. Call it on the test's goroutine.
func (e *streamEnv) needStreams(opts broker.PublishOptions) {
	e.t.Helper()
	e.skipUnlessStreams(e.t, opts)
}

// skipUnlessStreams is needStreams for a subtest's t.
func (e *streamEnv) skipUnlessStreams(t testing.TB, opts broker.PublishOptions) {
	t.Helper()
	if e.noStreams && streamed(opts) {
		t.Skip("the broker keeps no streams")
	}
}

// streamed reports whether a publication with opts needs a stream.
func streamed(opts broker.PublishOptions) bool {
	return (opts.HistorySize > 0 && opts.HistoryTTL > 0) || opts.IdempotencyKey != "" || opts.Version > 0
}

// testNoHistoryRefused: a broker without streams refuses what needs one,
// rather than publishing it without the history, idempotency or version
// asked for.
func testNoHistoryRefused(t *testing.T, e *brokerEnv) {
	if !e.opts.noHistory {
		t.Skip("the broker keeps streams")
	}
	ch := e.channel()
	for _, opts := range []broker.PublishOptions{withHistory, {IdempotencyKey: "k"}, {Version: 1}} {
		if _, _, err := e.b.Publish(ch, []byte("x"), opts); err == nil {
			t.Errorf("Publish with %+v: no error from a broker without streams", opts)
		}
	}
	if _, _, err := e.b.History(ch, broker.HistoryOptions{}); err == nil {
		t.Error("History: no error from a broker without streams")
	}
}

// withHistory keeps up to ten publications for a minute.
var withHistory = broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute}

var offsets = suitekit.Offsets

func pubData(pubs []*broker.Publication) []string {
	out := make([]string, 0, len(pubs))
	for _, p := range pubs {
		out = append(out, string(p.Data))
	}
	return out
}

func deliveredData(ds []delivery) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, string(d.pub.Data))
	}
	return out
}

func checkOffsets(t testing.TB, pubs []*broker.Publication, want ...uint64) {
	t.Helper()
	if got := offsets(pubs); !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
		t.Errorf("offsets = %v, want %v", got, want)
	}
}

var span = suitekit.Span

// publishConcurrently publishes each publications "<publisher>-<i>" into
// every channel of chs from publishers goroutines per channel at once,
// and fails the test on any error.
func publishConcurrently(t *testing.T, e *streamEnv, chs []string, publishers, each int, opts broker.PublishOptions) {
	t.Helper()
	e.needStreams(opts)
	suitekit.Publishers(t, len(chs)*publishers, each, func(p, i int) error {
		_, _, err := e.publishOne(chs[p/publishers], fmt.Appendf(nil, "%d-%d", p%publishers, i), opts)
		return err
	})
}

type publisherOrder = suitekit.PublisherOrder

// publishManyConcurrently runs publishers goroutines at once, each
// calling PublishMany batches times with a batch of twelve items that
// interleave the channels of chs, each channel's carrying
// "<publisher>-<i>" as publishConcurrently's do. It fails the test on any
// item's error and returns each publisher's items with their results.
func publishManyConcurrently(t *testing.T, e *streamEnv, chs []string, publishers, batches int, opts broker.PublishOptions) [][]broker.PublishItem {
	t.Helper()
	e.needStreams(opts)
	stretches := []int{0, 0, 1, 0, 2, 1, 2, 2, 0, 1, 1, 2} // channels, shifted per publisher
	results := make([][]broker.PublishItem, publishers)
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			seq := make(map[string]int)
			for range batches {
				batch := make([]broker.PublishItem, 0, len(stretches))
				for _, k := range stretches {
					ch := chs[(k+p)%len(chs)]
					batch = append(batch, broker.PublishItem{Channel: ch, Data: fmt.Appendf(nil, "%d-%d", p, seq[ch]), Opts: opts})
					seq[ch]++
				}
				e.publishMany(batch)
				results[p] = append(results[p], batch...)
			}
		})
	}
	wg.Wait()
	for p, items := range results {
		for _, it := range items {
			if it.Err != nil {
				t.Fatalf("PublishMany of publisher %d: item %q on %s: %v", p, it.Data, it.Channel, it.Err)
			}
		}
	}
	return results
}
