// Package suitekit holds what the broker contract suites (brokertest,
// maptest) share: channel names, waiting, copies of what a broker hands
// over, a handler for benchmarks.
package suitekit

import (
	"bytes"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// WaitTimeout bounds every wait for a delivery or an expiry. It only
// decides when a test gives up; no test asserts how fast anything happens.
const WaitTimeout = 20 * time.Second

var channelSeq atomic.Uint64

// UniqueChannel names a channel, after prefix, that no other subtest (or
// earlier run against a shared backend) uses.
func UniqueChannel(t testing.TB, prefix string) string {
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return fmt.Sprintf("%s:%s:%d.%d", prefix, name, time.Now().UnixNano(), channelSeq.Add(1))
}

// Seq returns a number no earlier call returned, for names that must not
// repeat.
func Seq() uint64 { return channelSeq.Add(1) }

// Eventually calls check with growing pauses (25ms, 50ms, ... capped at
// 2s) until it returns true, failing after WaitTimeout. The growing pause
// matters when check itself keeps alive what it waits to see expire (a
// read that refreshes a stream's meta): it sees the TTL lapse once a
// pause exceeds it.
func Eventually(t testing.TB, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	pause := 25 * time.Millisecond
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Second)
	}
}

// CopyPublication copies p deeply, so that later changes by the broker
// cannot alter what a test saw.
func CopyPublication(p broker.Publication) broker.Publication {
	p.Data = bytes.Clone(p.Data)
	p.Tags = maps.Clone(p.Tags)
	p.Trace = bytes.Clone(p.Trace)
	if p.Info != nil {
		info := CopyInfo(*p.Info)
		p.Info = &info
	}
	return p
}

// CopyInfo copies i deeply.
func CopyInfo(i broker.ClientInfo) broker.ClientInfo {
	i.ConnInfo = bytes.Clone(i.ConnInfo)
	i.ChanInfo = bytes.Clone(i.ChanInfo)
	return i
}

// CountingHandler counts the publications it receives and does nothing
// else, so that benchmarks measure the broker alone.
type CountingHandler struct{ n atomic.Int64 }

var _ broker.EventHandler = (*CountingHandler)(nil)

func (h *CountingHandler) HandleRuns(runs []broker.Run) error {
	for _, run := range runs {
		h.n.Add(int64(len(run.Pubs)))
	}
	return nil
}
func (h *CountingHandler) HandleJoin(string, *broker.ClientInfo) error  { return nil }
func (h *CountingHandler) HandleLeave(string, *broker.ClientInfo) error { return nil }
func (h *CountingHandler) HandleControl([]byte) error                   { return nil }

// Publishers runs publishers goroutines at once, each calling publish
// with its number p and i from 0 to each-1 (publishing data
// "<p>-<i>" for PublisherOrder to follow), and fails the test on the
// first error.
func Publishers(t testing.TB, publishers, each int, publish func(p, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				if err := publish(p, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Publish: %v", err)
	}
}

// Offsets returns the offsets of pubs.
func Offsets(pubs []*broker.Publication) []uint64 {
	out := make([]uint64, 0, len(pubs))
	for _, p := range pubs {
		out = append(out, p.Offset)
	}
	return out
}

// Span returns the offsets from..to, counting down when from > to.
func Span(from, to uint64) []uint64 {
	var out []uint64
	for o := from; ; {
		out = append(out, o)
		switch {
		case o == to:
			return out
		case from < to:
			o++
		default:
			o--
		}
	}
}

// PublisherOrder follows, per publisher, the sequence number expected
// next of data "<publisher>-<i>" that concurrent publishers send.
type PublisherOrder map[string]int

// Check fails the test unless data is its publisher's next.
func (o PublisherOrder) Check(t testing.TB, ch string, data []byte) {
	t.Helper()
	p, seq, _ := strings.Cut(string(data), "-")
	if want := strconv.Itoa(o[p]); seq != want {
		t.Fatalf("%s: publisher %s's publication %s arrived when %s was due", ch, p, seq, want)
	}
	o[p]++
}
