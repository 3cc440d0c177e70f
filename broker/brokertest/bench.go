package brokertest

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/suitekit"
)

// publishManyBatch is the number of items of a PublishMany benchmark
// operation.
const publishManyBatch = 100

// benchPayload is a typical small JSON publication.
var benchPayload = []byte(`{"type":"message","user":"42","text":"hello, world","ts":1700000000}`)

// BenchmarkBroker measures publishing with and without history, from one
// goroutine and from many (to one channel and to a channel each), and
// reading history. newBroker returns a broker that has not been Run.
func BenchmarkBroker(b *testing.B, newBroker func(b *testing.B) broker.Broker) {
	hist := broker.PublishOptions{HistorySize: 100, HistoryTTL: time.Minute}
	publish := []struct {
		name     string
		opts     broker.PublishOptions
		parallel bool
		shared   bool // all goroutines publish to one channel
	}{
		{"Publish/NoHistory", broker.PublishOptions{}, false, false},
		{"Publish/History", hist, false, false},
		{"Publish/HistoryDelta", broker.PublishOptions{HistorySize: 100, HistoryTTL: time.Minute, UseDelta: true}, false, false},
		{"PublishParallel/NoHistory/OneChannel", broker.PublishOptions{}, true, true},
		{"PublishParallel/History/OneChannel", hist, true, true},
		{"PublishParallel/History/ChannelEach", hist, true, false},
	}
	for _, bb := range publish {
		b.Run(bb.name, func(b *testing.B) {
			br := runBench(b, newBroker)
			b.ReportAllocs()
			b.SetBytes(int64(len(benchPayload)))
			if !bb.parallel {
				for b.Loop() {
					publishBench(b, br, "bench", bb.opts)
				}
				return
			}
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				ch := "bench"
				if !bb.shared {
					ch = "bench" + strconv.FormatInt(seq.Add(1), 10)
				}
				for pb.Next() {
					if _, _, err := br.Publish(ch, benchPayload, bb.opts); err != nil {
						b.Errorf("Publish: %v", err) // Fatal may not be called off the benchmark goroutine
						return
					}
				}
			})
		})
	}
	for _, bb := range []struct {
		name string
		opts broker.PublishOptions
	}{
		{"PublishMany/NoHistory", broker.PublishOptions{}},
		{"PublishMany/History", hist},
	} {
		// One operation is a PublishMany of publishManyBatch items to one
		// channel, as an API batch makes; ns/publish is per item.
		b.Run(bb.name, func(b *testing.B) {
			br := runBench(b, newBroker)
			items := make([]broker.PublishItem, publishManyBatch)
			b.ReportAllocs()
			b.SetBytes(int64(len(benchPayload) * publishManyBatch))
			for b.Loop() {
				for i := range items {
					items[i] = broker.PublishItem{Channel: "bench", Data: benchPayload, Opts: bb.opts}
				}
				br.PublishMany(items)
				for i := range items {
					if err := items[i].Err; err != nil {
						b.Fatalf("PublishMany: %v", err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*publishManyBatch), "ns/publish")
		})
	}
	reads := []struct {
		name   string
		filter func(top broker.StreamPosition) broker.HistoryFilter
	}{
		{"History/Top", func(broker.StreamPosition) broker.HistoryFilter { return broker.HistoryFilter{} }},
		{"History/Last10", func(broker.StreamPosition) broker.HistoryFilter {
			return broker.HistoryFilter{Limit: 10, Reverse: true}
		}},
		{"History/All100", func(broker.StreamPosition) broker.HistoryFilter { return broker.HistoryFilter{Limit: -1} }},
		{"History/Recover10", func(top broker.StreamPosition) broker.HistoryFilter {
			return broker.HistoryFilter{Since: &broker.StreamPosition{Offset: top.Offset - 10, Epoch: top.Epoch}, Limit: -1}
		}},
	}
	for _, bb := range reads {
		b.Run(bb.name, func(b *testing.B) {
			br := runBench(b, newBroker)
			var top broker.StreamPosition
			for range 100 {
				top = publishBench(b, br, "bench", hist)
			}
			opts := broker.HistoryOptions{Filter: bb.filter(top)}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := br.History("bench", opts); err != nil {
					b.Fatalf("History: %v", err)
				}
			}
		})
	}
}

func runBench(b *testing.B, newBroker func(b *testing.B) broker.Broker) broker.Broker {
	b.Helper()
	br := newBroker(b)
	if err := br.Run(&suitekit.CountingHandler{}); err != nil {
		b.Fatalf("Run: %v", err)
	}
	if err := br.Subscribe("bench"); err != nil {
		b.Fatalf("Subscribe: %v", err)
	}
	b.Cleanup(func() {
		if err := br.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
	})
	return br
}

func publishBench(b *testing.B, br broker.Broker, ch string, opts broker.PublishOptions) broker.StreamPosition {
	sp, _, err := br.Publish(ch, benchPayload, opts)
	if err != nil {
		b.Fatalf("Publish: %v", err)
	}
	return sp
}
