package gyre_test

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// BenchmarkBroadcastPersonal measures the server API's broadcast to
// personal channels: one PublishMany of the same payload (one slice, as
// the API passes it) into 5,000 channels without history; an operation
// ends when every subscriber's transport got its messages. "perconn=1":
// 5,000 connections, each subscribed to its own channel; "perconn=5":
// 1,000 connections, each subscribed to 5 of the channels, whose 5
// messages should leave in one write (writes/conn is the writes per
// connection per broadcast). cpu-µs/delivery is the CPU time of the whole
// test process (the node, its writers, the in-memory transports) per
// delivery; on Redis, redis-ms/op is Redis's own CPU time per broadcast
// (INFO cpu).
func BenchmarkBroadcastPersonal(b *testing.B) {
	const channels = 5000
	for _, engine := range []string{"memory", "redis"} {
		for _, perConn := range []int{1, 5} {
			b.Run(engine+"/perconn="+strconv.Itoa(perConn), func(b *testing.B) {
				benchBroadcastPersonal(b, engine, channels, perConn)
			})
		}
	}
}

func benchBroadcastPersonal(b *testing.B, engine string, channels, perConn int) {
	cfg := gyre.Config{
		Insecure:     true,
		PingInterval: time.Hour,
		PongTimeout:  time.Minute,
		Channels:     gyre.ChannelConfig{WithoutNamespace: gyre.ChannelOptions{AllowSubscribeForClient: true}},
	}
	var srv *redistest.Server
	if engine == "redis" {
		srv = redistest.Start(b)
		cfg = enginetest.OnRedis(b, cfg, redis.Config{Addresses: []string{srv.Addr}})
	}
	node, err := gyre.NewNode(cfg)
	if err != nil {
		b.Fatal(err)
	}
	f := startPersonalFixture(b, node, channels/perConn, perConn)
	names := make([]string, channels)
	for i := range names {
		names[i] = personalChannel(i)
	}
	items := make([]gyre.PublishItem, channels)
	publish := func() {
		for i, ch := range names {
			items[i] = gyre.PublishItem{Channel: ch, Data: benchPayload}
		}
		node.PublishMany(items)
		for i := range items {
			if items[i].Err != nil {
				b.Fatal(items[i].Err)
			}
		}
		f.sent += int64(channels)
		f.sink.waitFor(b, f.sent)
	}
	publish()
	frames := func() (n int64) {
		for _, t := range f.transports {
			n += t.frames.Load()
		}
		return n
	}
	var redisBefore float64
	if srv != nil {
		redisBefore = redisCPUSeconds(b, srv)
	}
	framesBefore, cpu := frames(), processCPU()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		publish()
	}
	b.StopTimer()
	deliveries := float64(b.N * channels)
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/deliveries, "cpu-µs/delivery")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/deliveries, "ns/delivery")
	b.ReportMetric(float64(frames()-framesBefore)/float64(b.N*len(f.transports)), "writes/conn")
	if srv != nil {
		b.ReportMetric((redisCPUSeconds(b, srv)-redisBefore)*1e3/float64(b.N), "redis-ms/op")
	}
}

func personalChannel(i int) string { return "personal." + strconv.Itoa(i) }

// startPersonalFixture runs node and connects conns clients over
// in-memory transports, client i subscribed to perConn channels:
// personalChannel(i*perConn) and the ones after it.
func startPersonalFixture(b *testing.B, node *gyre.Node, conns, perConn int) *broadcastFixture {
	b.Helper()
	f := startFixtureN(b, node, protocol.TypeJSON, 0, nil, 0)
	for i := range conns {
		t := &memTransport{proto: protocol.TypeJSON, sink: f.sink}
		f.transports = append(f.transports, t)
		cmds := []*protocol.Command{{Id: 1, Connect: &protocol.ConnectRequest{Name: "bench"}}}
		for k := range perConn {
			cmds = append(cmds, &protocol.Command{Id: uint32(k + 2), Subscribe: &protocol.SubscribeRequest{Channel: personalChannel(i*perConn + k)}})
		}
		var msgs [][]byte
		for _, cmd := range cmds {
			m, err := protocol.AppendCommand(nil, protocol.TypeJSON, cmd)
			if err != nil {
				b.Fatal(err)
			}
			msgs = append(msgs, m)
		}
		if !node.NewClient(b.Context(), t).HandleFrame(protocol.JoinFrame(nil, protocol.TypeJSON, msgs)) {
			b.Fatalf("client %d: connect and subscribe refused", i)
		}
	}
	f.sent = int64(conns * (1 + perConn))
	f.sink.waitFor(b, f.sent)
	return f
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPUSeconds is the CPU time srv has used (INFO cpu).
func redisCPUSeconds(b *testing.B, srv *redistest.Server) float64 {
	b.Helper()
	f, err := srv.CPUSeconds()
	if err != nil {
		b.Fatal(err)
	}
	return f
}
