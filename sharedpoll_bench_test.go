package gyre_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// BenchmarkSharedPollFanOut measures a new value of one key reaching N
// clients of one node that track it (SharedPollPublish, which takes the
// path of a polled value: control message, the node's trackers, one
// encoding per protocol, every tracker's enqueue and writer), end to end
// over in-memory transports like BenchmarkBroadcast.
func BenchmarkSharedPollFanOut(b *testing.B) {
	for _, p := range benchProtocols {
		for _, subs := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/subs=%d", p.name, subs), func(b *testing.B) {
				node, err := gyre.NewNode(gyre.Config{
					Insecure: true, PingInterval: time.Hour, PongTimeout: time.Minute,
					Channels: gyre.ChannelConfig{WithoutNamespace: gyre.ChannelOptions{
						SubscriptionType: gyre.SubscriptionTypeSharedPoll,
						SharedPoll:       gyre.SharedPollOptions{Versioned: true, PublishEnabled: true, RefreshInterval: time.Hour},
					}},
				})
				if err != nil {
					b.Fatal(err)
				}
				node.OnSharedPollRefresh(func(context.Context, gyre.SharedPollRefreshEvent) (gyre.SharedPollRefreshReply, error) {
					return gyre.SharedPollRefreshReply{}, nil
				})
				node.OnTrack(trackAll)
				var msgs [][]byte
				for _, cmd := range []*protocol.Command{
					{Id: 1, Connect: &protocol.ConnectRequest{Name: "bench"}},
					{Id: 2, Subscribe: &protocol.SubscribeRequest{Channel: "prices", Type: 4}},
					{Id: 3, SubRefresh: &protocol.SubRefreshRequest{Channel: "prices", Type: 1, Track: []*protocol.TrackBatch{{Signature: "ok", Items: []*protocol.KeyedItem{{Key: "k"}}}}}},
				} {
					m, err := protocol.AppendCommand(nil, p.proto, cmd)
					if err != nil {
						b.Fatal(err)
					}
					msgs = append(msgs, m)
				}
				f := startFixtureN(b, node, p.proto, subs, protocol.JoinFrame(nil, p.proto, msgs), 3)
				version := uint64(0)
				publish := func() {
					version++
					item := gyre.SharedPollItem{Key: "k", Data: benchPayload, Version: version}
					if err := node.SharedPollPublish(context.Background(), "prices", item, ""); err != nil {
						b.Fatal(err)
					}
					f.sent += int64(subs)
					f.sink.waitFor(b, f.sent)
				}
				publish()
				b.ReportAllocs()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					publish()
				}
				runtime.ReadMemStats(&after)
				ops := float64(b.N)
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/ops/float64(subs), "allocs/sub")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ops/float64(subs), "ns/sub")
			})
		}
	}
}
