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

// brokerEnv is a running broker with a recorder, closed when the subtest
// ends.
type brokerEnv struct {
	t    *testing.T
	b    broker.Broker
	rec  *recorder
	opts options
}

func newBrokerEnv(t *testing.T, newBroker func(t *testing.T) broker.Broker) *brokerEnv {
	t.Helper()
	b := newBroker(t)
	rec := newRecorder()
	if err := b.Run(rec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &brokerEnv{t: t, b: b, rec: rec}
}

// channel returns a fresh channel this node is subscribed to.
func (e *brokerEnv) channel() string {
	e.t.Helper()
	ch := uniqueChannel(e.t)
	if err := e.b.Subscribe(ch); err != nil {
		e.t.Fatalf("Subscribe(%q): %v", ch, err)
	}
	return ch
}

func (e *brokerEnv) publish(ch, data string, opts broker.PublishOptions) broker.StreamPosition {
	e.t.Helper()
	sp, suppressed, err := e.b.Publish(ch, []byte(data), opts)
	if err != nil {
		e.t.Fatalf("Publish(%q, %q): %v", ch, data, err)
	}
	if suppressed {
		e.t.Fatalf("Publish(%q, %q) suppressed without an idempotency key", ch, data)
	}
	return sp
}

func (e *brokerEnv) history(ch string, f broker.HistoryFilter) ([]*broker.Publication, broker.StreamPosition) {
	e.t.Helper()
	pubs, top, err := e.b.History(ch, broker.HistoryOptions{Filter: f})
	if err != nil {
		e.t.Fatalf("History(%q, %+v): %v", ch, f, err)
	}
	return pubs, top
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
func publishConcurrently(t *testing.T, e *brokerEnv, chs []string, publishers, each int, opts broker.PublishOptions) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(chs)*publishers)
	for _, ch := range chs {
		for p := range publishers {
			wg.Go(func() {
				for i := range each {
					if _, _, err := e.b.Publish(ch, fmt.Appendf(nil, "%d-%d", p, i), opts); err != nil {
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
