package redis

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/brokertest"
	"github.com/gyrehq/gyre/broker/maptest"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/redis/rueidis"
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
			defer reportScriptCost(b, br.e.clients[0])()
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

// BenchmarkMapBroker runs the map contract benchmarks through one local
// Redis: every write is a script round trip plus its delivery back to
// this node over pub/sub, every read a script round trip.
func BenchmarkMapBroker(b *testing.B) {
	srv := redistest.Start(b)
	maptest.BenchmarkMapBroker(b, func(b *testing.B) broker.MapBroker {
		m, err := NewMapBroker(Config{Addresses: []string{srv.Addr}, Prefix: "gyretest"})
		if err != nil {
			b.Fatalf("NewMapBroker: %v", err)
		}
		return m
	})
}

// BenchmarkMapPublishConcurrent writes map keys from 64 goroutines into
// 16 subscribed channels, as an API node under load does: rueidis
// pipelines the scripts on one connection. It reports what Redis spent
// in scripts per write, as BenchmarkPublishConcurrent does per publish.
func BenchmarkMapPublishConcurrent(b *testing.B) {
	srv := redistest.Start(b)
	for _, mo := range []broker.MapOptions{
		{Mode: broker.MapModePersistent, StreamSize: 100, StreamTTL: time.Minute},
		{Mode: broker.MapModeRecoverable, KeyTTL: time.Minute, StreamSize: 100, StreamTTL: time.Minute, MetaTTL: 10 * time.Minute},
		{Mode: broker.MapModeEphemeral, KeyTTL: time.Minute},
	} {
		b.Run(mo.Mode.String(), func(b *testing.B) {
			m := newEngine(b, Config{Addresses: []string{srv.Addr}}).MapBroker()
			if err := m.Run(newCountingEvents()); err != nil {
				b.Fatal(err)
			}
			for i := range 16 {
				if err := m.Subscribe("bench" + strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
			}
			opts := broker.MapPublishOptions{Map: mo, Data: []byte(`{"type":"cursor","user":"42","x":120,"y":340,"ts":1700000000}`)}
			defer reportScriptCost(b, m.e.clients[0])()
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				n := seq.Add(1)
				ch := "bench" + strconv.FormatInt(n%16, 10)
				for i := 0; pb.Next(); i++ {
					key := "k" + strconv.FormatInt(n, 10) + "." + strconv.Itoa(i%100)
					if _, err := m.Publish(b.Context(), ch, key, opts); err != nil {
						b.Errorf("Publish: %v", err)
						return
					}
				}
			})
		})
	}
}

// reportScriptCost resets Redis's command statistics and returns a
// function that reports the time Redis spent in EVALSHA per operation
// since (INFO commandstats), as redis-µs/op: the cost of a script in
// Redis's one thread, which bounds throughput once round trips overlap.
func reportScriptCost(b *testing.B, c rueidis.Client) func() {
	ctx := context.Background()
	if err := c.Do(ctx, c.B().ConfigResetstat().Build()).Error(); err != nil {
		b.Fatal(err)
	}
	return func() {
		info, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.Lines(info) {
			if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:"); ok {
				_, usec, _ := strings.Cut(rest, "usec=")
				usec, _, _ = strings.Cut(usec, ",")
				if n, err := strconv.ParseFloat(usec, 64); err == nil {
					b.ReportMetric(n/float64(b.N), "redis-µs/op")
				}
			}
		}
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

// BenchmarkPublishPatternScope measures what a pattern scope adds to a
// publish with history: the script's second message and, when a node
// holds the scope (ScopeHeld: this one, as a node with pattern
// subscribers in the namespace does), the scope's delivery. ScopeUnheld
// publishes with a scope nobody subscribed. Sequential waits for each
// publish; Concurrent publishes from 64 goroutines over 16 channels.
// Every delivery back to this node is awaited before the timer stops, so
// that its cost counts; redis-µs/op is the CPU time (INFO cpu) of every
// Redis per publish. The Cluster cases run on a cluster of three masters
// with the default Config.ClusterShards.
func BenchmarkPublishPatternScope(b *testing.B) {
	srv := redistest.Start(b)
	benchPatternScope(b, "", Config{Addresses: []string{srv.Addr}}, []*redistest.Server{srv})
	c := redistest.StartCluster(b, 3)
	benchPatternScope(b, "Cluster/", Config{ClusterAddresses: c.Addrs()}, c.Nodes)
}

func benchPatternScope(b *testing.B, name string, cfg Config, servers []*redistest.Server) {
	for _, mode := range []string{"Sequential", "Concurrent"} {
		for _, tt := range []struct {
			name  string
			scope string
			held  bool
		}{
			{"NoScope", "", false},
			{"ScopeUnheld", "bench:", false},
			{"ScopeHeld", "bench:", true},
		} {
			b.Run(name+mode+"/"+tt.name, func(b *testing.B) {
				br := newEngine(b, cfg).Broker()
				ev := newCountingEvents()
				if err := br.Run(ev); err != nil {
					b.Fatal(err)
				}
				const channels = 16
				for i := range channels {
					if err := br.Subscribe("bench:" + strconv.Itoa(i)); err != nil {
						b.Fatal(err)
					}
				}
				if tt.held {
					if err := br.SubscribePatternScope(tt.scope); err != nil {
						b.Fatal(err)
					}
				}
				opts := history
				opts.PatternScope = tt.scope
				payload := []byte(`{"type":"message","user":"42","text":"hello, world","ts":1700000000}`)
				cpu := redisCPU(b, servers)
				b.ReportAllocs()
				b.ResetTimer()
				if mode == "Sequential" {
					for i := range b.N {
						if _, _, err := br.Publish("bench:"+strconv.Itoa(i%channels), payload, opts); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					var seq atomic.Int64
					b.SetParallelism(32)
					b.RunParallel(func(pb *testing.PB) {
						ch := "bench:" + strconv.FormatInt(seq.Add(1)%channels, 10)
						for pb.Next() {
							if _, _, err := br.Publish(ch, payload, opts); err != nil {
								b.Errorf("Publish: %v", err)
								return
							}
						}
					})
				}
				var patterns int64
				if tt.held {
					patterns = int64(b.N)
				}
				for ev.n.Load() < int64(b.N) || ev.patterns.Load() < patterns {
					time.Sleep(time.Millisecond)
				}
				b.StopTimer()
				b.ReportMetric((redisCPU(b, servers)-cpu)*1e6/float64(b.N), "redis-µs/op")
			})
		}
	}
}

// redisCPU returns the CPU time the servers have used, in seconds.
func redisCPU(b *testing.B, servers []*redistest.Server) float64 {
	b.Helper()
	var total float64
	for _, srv := range servers {
		f, err := srv.CPUSeconds()
		if err != nil {
			b.Fatal(err)
		}
		total += f
	}
	return total
}

// countingEvents counts and drops everything; benchmarks measure the
// broker alone.
type countingEvents struct{ n, patterns atomic.Int64 }

func newCountingEvents() *countingEvents { return &countingEvents{} }

func (c *countingEvents) HandleRuns(runs []broker.Run) error {
	for _, run := range runs {
		if run.Scope != "" {
			c.patterns.Add(int64(len(run.Pubs)))
		} else {
			c.n.Add(int64(len(run.Pubs)))
		}
	}
	return nil
}
func (c *countingEvents) HandleJoin(string, *broker.ClientInfo) error  { return nil }
func (c *countingEvents) HandleLeave(string, *broker.ClientInfo) error { return nil }
func (c *countingEvents) HandleControl([]byte) error                   { return nil }

// BenchmarkDispatch measures what a node does with what it reads from
// pub/sub, Redis aside: decoding each message and grouping a read's
// publications into runs for the handler. One operation is one read of
// dispatchMax messages, over one channel ("OneChannel", one run) or a
// channel each ("ChannelEach", a run each, as a broadcast makes).
func BenchmarkDispatch(b *testing.B) {
	pub, err := (&protocol.Publication{Data: benchPayload}).MarshalVT()
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		channels int
	}{
		{"OneChannel", 1},
		{"ChannelEach", dispatchMax},
	} {
		b.Run(tt.name, func(b *testing.B) {
			br := &Broker{handler: newCountingEvents()}
			s := &subShard{b: br, prefix: "gyre.s."}
			events := make([]event, dispatchMax)
			for i := range events {
				msg, err := (&wirepb.Message{Type: wirepb.Message_PUBLICATION, Publication: pub, Offset: uint64(i + 1), Epoch: "abcdefgh"}).MarshalVT()
				if err != nil {
					b.Fatal(err)
				}
				events[i] = event{name: s.prefix + "bench" + strconv.Itoa(i%tt.channels), payload: string(msg)}
			}
			d := dispatcher{s: s}
			b.ReportAllocs()
			for b.Loop() {
				d.dispatch(events)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*dispatchMax), "ns/message")
		})
	}
}

var benchPayload = []byte(`{"type":"message","user":"42","text":"hello, world","ts":1700000000}`)

// BenchmarkPublishSyncReplicas publishes with history to a master with one
// replica, with asynchronous replication (Async) and with SyncReplicas 1
// (Sync), one publish at a time (Serial) and from 32 goroutines
// (Concurrent): what waiting for the replica costs per publish.
func BenchmarkPublishSyncReplicas(b *testing.B) {
	master := redistest.Start(b)
	replica := redistest.Start(b, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	for {
		info, err := replica.Cli("info", "replication")
		if err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	payload := []byte(`{"type":"message","user":"42","text":"hello, world","ts":1700000000}`)
	for _, sync := range []int{0, 1} {
		name := "Async"
		if sync > 0 {
			name = "Sync"
		}
		br := newEngine(b, Config{Addresses: []string{master.Addr}, SyncReplicas: sync}).Broker()
		if err := br.Run(newCountingEvents()); err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/Serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := br.Publish("sync", payload, history); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/Concurrent", func(b *testing.B) {
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				ch := "sync" + strconv.FormatInt(seq.Add(1)%16, 10)
				for pb.Next() {
					if _, _, err := br.Publish(ch, payload, history); err != nil {
						b.Errorf("Publish: %v", err)
						return
					}
				}
			})
		})
	}
}
