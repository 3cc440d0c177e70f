package redis

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/brokertest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// BenchmarkBroker runs the contract benchmarks through one local Redis:
// every publish is a script round trip plus the pub/sub delivery back to
// this node.
func BenchmarkBroker(b *testing.B) {
	srv := redistest.Start(b)
	brokertest.BenchmarkBroker(b, func(b *testing.B) broker.Broker {
		return newEngine(b, Config{Addresses: []string{srv.Addr}}).Broker()
	})
}

// BenchmarkPublishConcurrent publishes from many goroutines at once, as an
// API node under load does: rueidis pipelines their scripts on one
// connection, so throughput grows past one round trip per publish.
func BenchmarkPublishConcurrent(b *testing.B) {
	srv := redistest.Start(b)
	for _, tt := range []struct {
		name string
		opts broker.PublishOptions
	}{
		{"NoHistory", broker.PublishOptions{}},
		{"History", history},
	} {
		b.Run(tt.name, func(b *testing.B) {
			br := newEngine(b, Config{Addresses: []string{srv.Addr}}).Broker()
			if err := br.Run(newCountingEvents()); err != nil {
				b.Fatal(err)
			}
			for i := range 16 {
				// Deliveries back to this node are part of the cost.
				if err := br.Subscribe("bench" + strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
			}
			payload := []byte(`{"type":"message","user":"42","text":"hello, world","ts":1700000000}`)
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				ch := "bench" + strconv.FormatInt(seq.Add(1)%16, 10)
				for pb.Next() {
					if _, _, err := br.Publish(ch, payload, tt.opts); err != nil {
						b.Errorf("Publish: %v", err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkPresence(b *testing.B) {
	srv := redistest.Start(b)
	pm := newEngine(b, Config{Addresses: []string{srv.Addr}}).PresenceManager()
	info := &broker.ClientInfo{ClientID: "c", UserID: "u", ConnInfo: []byte(`{"name":"alice"}`)}
	for i := range 100 {
		id := strconv.Itoa(i)
		if err := pm.AddPresence("bench", id, &broker.ClientInfo{ClientID: id, UserID: id}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Add", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := pm.AddPresence("bench", "c", info); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Stats100", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pm.PresenceStats("bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Presence100", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pm.Presence("bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// countingEvents drops everything; benchmarks measure the broker alone.
type countingEvents struct{ n atomic.Int64 }

func newCountingEvents() *countingEvents { return &countingEvents{} }

func (c *countingEvents) HandlePublication(string, *broker.Publication, broker.StreamPosition, bool, *broker.Publication) error {
	c.n.Add(1)
	return nil
}
func (c *countingEvents) HandleJoin(string, *broker.ClientInfo) error  { return nil }
func (c *countingEvents) HandleLeave(string, *broker.ClientInfo) error { return nil }
func (c *countingEvents) HandleControl([]byte) error                   { return nil }
