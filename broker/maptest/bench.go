package maptest

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/suitekit"
)

// benchPayload is a typical small JSON value.
var benchPayload = []byte(`{"type":"cursor","user":"42","x":120,"y":340,"ts":1700000000}`)

// benchKeys is how many keys the publish benchmarks cycle through.
const benchKeys = 1000

// BenchmarkMapBroker measures writes into a subscribed channel (every
// mode, with delta, from many goroutines into one channel and into a
// channel each), state paging and a key lookup over 10,000 keys, and a
// stream read. newBroker returns a broker that has not been Run.
func BenchmarkMapBroker(b *testing.B, newBroker func(b *testing.B) broker.MapBroker) {
	delta := persistent
	for _, bb := range []struct {
		name     string
		mo       broker.MapOptions
		useDelta bool
	}{
		{"Publish/Persistent", persistent, false},
		{"Publish/Recoverable", recoverable, false},
		{"Publish/Ephemeral", ephemeral, false},
		{"Publish/PersistentDelta", delta, true},
	} {
		b.Run(bb.name, func(b *testing.B) {
			br, ch := runBench(b, newBroker)
			opts := broker.MapPublishOptions{Map: bb.mo, Data: benchPayload, UseDelta: bb.useDelta}
			keys := benchKeyNames()
			b.ReportAllocs()
			b.SetBytes(int64(len(benchPayload)))
			i := 0
			for b.Loop() {
				publishBench(b, br, ch, keys[i%benchKeys], opts)
				i++
			}
		})
	}
	for _, bb := range []struct {
		name   string
		shared bool
	}{{"PublishParallel/OneChannel", true}, {"PublishParallel/ChannelEach", false}} {
		b.Run(bb.name, func(b *testing.B) {
			br, shared := runBench(b, newBroker)
			opts := broker.MapPublishOptions{Map: persistent, Data: benchPayload}
			keys := benchKeyNames()
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetBytes(int64(len(benchPayload)))
			b.RunParallel(func(pb *testing.PB) {
				ch := shared
				if !bb.shared {
					ch = shared + "." + strconv.FormatInt(seq.Add(1), 10)
					if err := br.Subscribe(ch); err != nil {
						b.Errorf("Subscribe: %v", err)
						return
					}
				}
				i := 0
				for pb.Next() {
					if _, err := br.Publish(b.Context(), ch, keys[i%benchKeys], opts); err != nil {
						b.Errorf("Publish: %v", err) // Fatal may not be called off the benchmark goroutine
						return
					}
					i++
				}
			})
		})
	}
	benchmarkReads(b, newBroker)
}

// benchmarkReads measures reading 10,000 keys in pages of 100 (one page
// per operation, starting over after the last), one key, and the last ten
// changes of a stream.
func benchmarkReads(b *testing.B, newBroker func(b *testing.B) broker.MapBroker) {
	const stateSize = 10000
	setup := func(b *testing.B) (broker.MapBroker, string, broker.StreamPosition) {
		br, ch := runBench(b, newBroker)
		var top broker.StreamPosition
		for i := range stateSize {
			top = publishBench(b, br, ch, fmt.Sprintf("key-%05d", i), broker.MapPublishOptions{Map: persistent, Data: benchPayload})
		}
		return br, ch, top
	}
	b.Run("ReadState/Page100", func(b *testing.B) {
		br, ch, _ := setup(b)
		cursor := ""
		b.ReportAllocs()
		for b.Loop() {
			res, err := br.ReadState(b.Context(), ch, broker.MapStateOptions{Map: persistent, Cursor: cursor, Limit: 100})
			if err != nil {
				b.Fatalf("ReadState: %v", err)
			}
			cursor = res.Cursor
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/entry")
	})
	b.Run("ReadState/Key", func(b *testing.B) {
		br, ch, _ := setup(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := br.ReadState(b.Context(), ch, broker.MapStateOptions{Map: persistent, Key: "key-04242"}); err != nil {
				b.Fatalf("ReadState: %v", err)
			}
		}
	})
	b.Run("ReadStream/Recover10", func(b *testing.B) {
		br, ch, top := setup(b)
		since := broker.StreamPosition{Offset: top.Offset - 10, Epoch: top.Epoch}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := br.ReadStream(b.Context(), ch, broker.MapStreamOptions{Map: persistent, Filter: broker.HistoryFilter{Since: &since, Limit: -1}}); err != nil {
				b.Fatalf("ReadStream: %v", err)
			}
		}
	})
}

func benchKeyNames() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	return keys
}

// runBench makes a broker, runs it with a counting handler and subscribes
// it to a new channel, which it returns; when the benchmark ends it
// clears the channel and closes the broker.
func runBench(b *testing.B, newBroker func(b *testing.B) broker.MapBroker) (broker.MapBroker, string) {
	b.Helper()
	br := newBroker(b)
	if err := br.Run(&suitekit.CountingHandler{}); err != nil {
		b.Fatalf("Run: %v", err)
	}
	ch := uniqueChannel(b)
	if err := br.Subscribe(ch); err != nil {
		b.Fatalf("Subscribe: %v", err)
	}
	b.Cleanup(func() {
		if err := br.Clear(context.Background(), ch); err != nil {
			b.Errorf("Clear: %v", err)
		}
		if err := br.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
	})
	return br, ch
}

func publishBench(b *testing.B, br broker.MapBroker, ch, key string, opts broker.MapPublishOptions) broker.StreamPosition {
	res, err := br.Publish(b.Context(), ch, key, opts)
	if err != nil {
		b.Fatalf("Publish: %v", err)
	}
	return res.Position
}
