package occupancytest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// counter is a handler that counts events and does nothing else, so that
// benchmarks measure the tracker alone.
type counter struct{ n atomic.Int64 }

func (c *counter) HandleOccupancy(_ context.Context, events []broker.OccupancyEvent) error {
	c.n.Add(int64(len(events)))
	return nil
}

// Bench benchmarks Hold and Release on one tracker from newNodes:
//
//   - Events: a Hold and a Release of a new key per op, with no delay:
//     two events per op, all handed over before the timer stops;
//   - EventsParallel: the same from GOMAXPROCS goroutines;
//   - Cancelled: a Release and a Hold of one of 1,024 keys per op
//     (parallel), the Hold within the delay: no events, the path of a
//     channel whose last subscriber reconnects.
func Bench(b *testing.B, newNodes NewNodes) {
	b.Run("Events", func(b *testing.B) {
		tr, c := benchTracker(b, newNodes, 0)
		var seq atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			holdRelease(b, tr, "e"+strconv.FormatInt(seq.Add(1), 10))
		}
		waitEvents(b, c, 2*int64(b.N))
	})
	b.Run("EventsParallel", func(b *testing.B) {
		tr, c := benchTracker(b, newNodes, 0)
		var seq atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				holdRelease(b, tr, "p"+strconv.FormatInt(seq.Add(1), 10))
			}
		})
		waitEvents(b, c, 2*int64(b.N))
	})
	b.Run("Cancelled", func(b *testing.B) {
		tr, _ := benchTracker(b, newNodes, time.Hour)
		const keys = 1024
		names := make([]string, keys)
		for i := range names {
			names[i] = "c" + strconv.Itoa(i)
			if err := tr.Hold(channel, names[i], nil); err != nil {
				b.Fatal(err)
			}
		}
		var seq atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				name := names[seq.Add(1)%keys]
				if err := tr.Release(channel, name); err != nil {
					b.Error(err)
					return
				}
				if err := tr.Hold(channel, name, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func benchTracker(b *testing.B, newNodes NewNodes, delay time.Duration) (broker.OccupancyTracker, *counter) {
	b.Helper()
	tr := newNodes(b)()
	b.Cleanup(func() { _ = tr.Close() })
	c := &counter{}
	o := broker.OccupancyOptions{ChannelDelay: delay, UserDelay: delay, Lease: 10 * time.Second}
	if err := tr.RunOccupancy(c, o); err != nil {
		b.Fatal(err)
	}
	return tr, c
}

func holdRelease(b *testing.B, tr broker.OccupancyTracker, name string) {
	if err := tr.Hold(channel, name, nil); err != nil {
		b.Error(err)
	}
	if err := tr.Release(channel, name); err != nil {
		b.Error(err)
	}
}

// waitEvents waits, timed, until the handler got n events, so that what
// handing them over costs counts.
func waitEvents(b *testing.B, c *counter, n int64) {
	b.Helper()
	deadline := time.Now().Add(waitTimeout)
	for c.n.Load() < n {
		if time.Now().After(deadline) {
			b.Fatalf("handed over %d events of %d", c.n.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
