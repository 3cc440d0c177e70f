package jetstream

import (
	"strconv"
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/nats/natstest"
)

// BenchmarkAppend appends batches of 100 items, over 100 channels (one
// round trip of 100 pipelined publishes per batch) and in one channel
// (one run: one message, one round trip); publishes/s is what the store
// sustains from one goroutine against a local nats-server.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name     string
		channels int
	}{{"channels=100", 100}, {"channels=1", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			srv := natstest.Start(b)
			s := newStore(b, srv.URL)
			channels := make([]string, bc.channels)
			for i := range channels {
				channels[i] = "bench:" + strconv.Itoa(i)
			}
			data := make([]byte, 128)
			items := make([]broker.StoreItem, 100)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for i := range items {
					items[i] = broker.StoreItem{PublishItem: broker.PublishItem{Channel: channels[i%len(channels)], Data: data, Opts: hist}, Time: 1}
				}
				s.Append(items)
				for i := range items {
					if items[i].Err != nil {
						b.Fatal(items[i].Err)
					}
				}
			}
			b.ReportMetric(float64(b.N*len(items))/b.Elapsed().Seconds(), "publishes/s")
		})
	}
}

// BenchmarkHistorySince reads the 100 publications after an offset of a
// channel holding 1,000, interleaved in its stream with 9 other channels,
// stored in runs of 1, 10 or 100 publications.
func BenchmarkHistorySince(b *testing.B) {
	for _, run := range []int{1, 10, 100} {
		b.Run("run="+strconv.Itoa(run), func(b *testing.B) {
			srv := natstest.Start(b)
			s := newStore(b, srv.URL)
			opts := broker.PublishOptions{HistorySize: 1000, HistoryTTL: hist.HistoryTTL}
			data := make([]byte, 128)
			items := make([]broker.StoreItem, 0, 10*run)
			for range 1000 / run {
				items = items[:0]
				for i := range 10 * run {
					items = append(items, broker.StoreItem{PublishItem: broker.PublishItem{Channel: "h" + strconv.Itoa(i%10), Data: data, Opts: opts}, Time: 1})
				}
				s.Append(items)
			}
			_, top, err := s.History("h0", broker.HistoryOptions{})
			if err != nil || top.Offset != 1000 {
				b.Fatalf("top %+v, %v", top, err)
			}
			since := broker.StreamPosition{Offset: 500, Epoch: top.Epoch}
			f := broker.HistoryFilter{Since: &since, Limit: 100}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				pubs, _, err := s.History("h0", broker.HistoryOptions{Filter: f})
				if err != nil || len(pubs) != 100 || pubs[0].Offset != 501 {
					b.Fatalf("%d publications, %v", len(pubs), err)
				}
			}
		})
	}
}
