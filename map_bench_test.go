package gyre_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/memory"
	"github.com/gyrehq/gyre/protocol"
)

// BenchmarkMapBroadcast compares the fan-out of a map change with that of
// a stream publication, end to end as BenchmarkBroadcast measures it,
// both on the memory engine: one Node.MapPublish (or Node.Publish) of
// benchPayload to 1,000 subscribers, waiting until every transport wrote
// it. A map change goes through the same hub fan-out as a publication,
// encoded once per wire format, with its key and offset on the wire; the
// budget is at most 1.2 times a publication's ns/sub.
//
//	go test -run '^$' -bench 'MapBroadcast' -benchmem .
func BenchmarkMapBroadcast(b *testing.B) {
	const subs = 1000
	for _, p := range benchProtocols {
		for _, kind := range []string{"stream", "map-ephemeral", "map-persistent"} {
			b.Run(fmt.Sprintf("%s/%s/subs=%d", p.name, kind, subs), func(b *testing.B) {
				var f *broadcastFixture
				var publish func()
				if kind == "stream" {
					f = newBroadcastFixture(b, p.proto, subs, fixtureOptions{})
					publish = func() {
						if _, err := f.node.Publish(benchChannel, benchPayload); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					mode := gyre.MapModeEphemeral
					if kind == "map-persistent" {
						mode = gyre.MapModePersistent
					}
					f = newMapFixture(b, p.proto, subs, mode)
					i := 0
					publish = func() {
						i++
						key := "key-" + strconv.Itoa(i%100)
						if _, err := f.node.MapPublish(context.Background(), "map:"+benchChannel, key, gyre.MapPublishOptions{Data: benchPayload}); err != nil {
							b.Fatal(err)
						}
					}
				}
				round := func() {
					publish()
					f.sent += subs
					f.sink.waitFor(b, f.sent)
				}
				round()
				b.ReportAllocs()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					round()
				}
				runtime.ReadMemStats(&after)
				ops := float64(b.N)
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/ops/subs, "allocs/sub")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ops/subs, "ns/sub")
			})
		}
	}
}

// newMapFixture is newBroadcastFixture for the map channel
// "map:"+benchChannel of mode, on a memory MapBroker: every client
// subscribes with a state request, which goes live at once on the empty
// map.
func newMapFixture(tb testing.TB, proto protocol.Type, subs int, mode gyre.MapMode) *broadcastFixture {
	tb.Helper()
	mb, err := memory.NewMapBroker(memory.MapConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	m := gyre.MapChannelOptions{Mode: mode}
	if mode.HasExpiry() {
		m.KeyTTL = time.Hour
	}
	node, err := gyre.NewNode(gyre.Config{
		Insecure:     true,
		PingInterval: time.Hour,
		PongTimeout:  time.Minute,
		MapBroker:    mb,
		Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{
			{Name: "map", ChannelOptions: gyre.ChannelOptions{SubscriptionType: gyre.SubscriptionTypeMap, Map: m}},
		}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	sub := &protocol.SubscribeRequest{Channel: "map:" + benchChannel, Type: typeMap, Phase: phaseState}
	return startFixture(tb, node, proto, subs, connectSubscribeFrame(tb, proto, sub), fixtureOptions{})
}
