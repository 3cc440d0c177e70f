package brokertest

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

var channelSeq atomic.Uint64

// uniqueChannel names a channel no other subtest (or earlier run against a
// shared backend) uses.
func uniqueChannel(t testing.TB) string {
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return fmt.Sprintf("brokertest:%s:%d.%d", name, time.Now().UnixNano(), channelSeq.Add(1))
}

// eventually calls check with growing pauses (25ms, 50ms, ... capped at
// 2s) until it returns true, failing after waitTimeout. The growing pause
// matters: a check that itself refreshes a TTL (History refreshes the
// stream meta) can only see it lapse once a pause exceeds the TTL.
func eventually(t testing.TB, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	pause := 25 * time.Millisecond
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Second)
	}
}

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

func offsets(pubs []*broker.Publication) []uint64 {
	out := make([]uint64, 0, len(pubs))
	for _, p := range pubs {
		out = append(out, p.Offset)
	}
	return out
}

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

func span(from, to uint64) []uint64 {
	var out []uint64
	if from <= to {
		for o := from; o <= to; o++ {
			out = append(out, o)
		}
		return out
	}
	for o := from; ; o-- {
		out = append(out, o)
		if o == to {
			return out
		}
	}
}

// publishConcurrently publishes each publications "<publisher>-<i>" into
// every channel of chs from publishers goroutines per channel at once,
// and fails the test on any error.
func publishConcurrently(t *testing.T, e *streamEnv, chs []string, publishers, each int, opts broker.PublishOptions) {
	t.Helper()
	e.needStreams(opts)
	var wg sync.WaitGroup
	errs := make(chan error, len(chs)*publishers)
	for _, ch := range chs {
		for p := range publishers {
			wg.Go(func() {
				for i := range each {
					if _, _, err := e.publishOne(ch, fmt.Appendf(nil, "%d-%d", p, i), opts); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Publish: %v", err)
	}
}

// publisherOrder follows, per publisher, the sequence number expected
// next of publications made by publishConcurrently ("<publisher>-<i>").
type publisherOrder map[string]int

// check fails the test unless data is its publisher's next publication.
func (o publisherOrder) check(t *testing.T, ch string, data []byte) {
	t.Helper()
	p, seq, _ := strings.Cut(string(data), "-")
	if want := strconv.Itoa(o[p]); seq != want {
		t.Fatalf("%s: publisher %s's publication %s arrived when %s was due", ch, p, seq, want)
	}
	o[p]++
}

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
