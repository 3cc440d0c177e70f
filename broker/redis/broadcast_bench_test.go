package redis

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/redis/rueidis"
)

// broadcastChannels is how many channels a broadcast benchmark publishes
// to: personal channels, one subscriber each.
const broadcastChannels = 5000

// BenchmarkBroadcastPlain measures a broadcast to broadcastChannels
// channels without history, each subscribed by this node: one operation
// is one PublishMany of one item per channel, all with the same payload
// (as the server API's broadcast makes), and the deliveries of all of
// them back through pub/sub. redis-ms/op is the CPU time Redis spent
// (INFO cpu) per broadcast.
//
// PublishPipeline is the floor to compare with: the same messages sent
// as plain PUBLISH commands in one pipeline, what a broker that keeps
// nothing for such channels sends.
func BenchmarkBroadcastPlain(b *testing.B) {
	srv := redistest.Start(b)
	br := newEngine(b, Config{Addresses: []string{srv.Addr}}).Broker()
	ev := newCountingEvents()
	if err := br.Run(ev); err != nil {
		b.Fatal(err)
	}
	chs := make([]string, broadcastChannels)
	for i := range chs {
		chs[i] = "user#" + strconv.Itoa(i)
	}
	subscribeAll(b, br, chs)
	opts := broker.PublishOptions{Tags: map[string]string{"kind": "notice"}, NoDelta: true}
	items := make([]broker.PublishItem, len(chs))
	var delivered int64
	// wait waits until every publication so far came back.
	wait := func() {
		delivered += int64(len(chs))
		for ev.n.Load() < delivered {
			time.Sleep(200 * time.Microsecond)
		}
	}

	b.Run("Broker", func(b *testing.B) {
		publish := func() {
			for i, ch := range chs {
				items[i] = broker.PublishItem{Channel: ch, Data: benchPayload, Opts: opts}
			}
			br.PublishMany(items)
			for i := range items {
				if items[i].Err != nil {
					b.Fatalf("item %d: %v", i, items[i].Err)
				}
			}
			wait()
		}
		publish()
		measureBroadcast(b, srv, publish)
	})

	b.Run("PublishPipeline", func(b *testing.B) {
		pub, err := (&protocol.Publication{Data: benchPayload, Tags: opts.Tags, Time: time.Now().UnixMilli()}).MarshalVT()
		if err != nil {
			b.Fatal(err)
		}
		msg, err := (&wirepb.Message{Publication: pub}).MarshalVT()
		if err != nil {
			b.Fatal(err)
		}
		c := br.e.clients[0]
		cmds := make(rueidis.Commands, len(chs))
		publish := func() {
			for i, ch := range chs {
				_, si := br.e.locate(ch)
				cmds[i] = c.B().Publish().Channel(br.e.bases[si] + pubsubInfix + ch).Message(rueidis.BinaryString(msg)).Build()
			}
			for i, r := range c.DoMulti(context.Background(), cmds...) {
				if err := r.Error(); err != nil {
					b.Fatalf("PUBLISH %d: %v", i, err)
				}
			}
			wait()
		}
		publish()
		measureBroadcast(b, srv, publish)
	})
}

// subscribeAll subscribes br to chs, several at a time.
func subscribeAll(b *testing.B, br *Broker, chs []string) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(chs))
	sem := make(chan struct{}, 64)
	for _, ch := range chs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := br.Subscribe(ch); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("Subscribe: %v", err)
	}
}

// measureBroadcast runs publish b.N times and reports Redis's CPU time
// per operation, and the commands Redis ran per operation
// (INFO commandstats: EVALSHA, PUBLISH, the script's own PUBLISH
// included).
func measureBroadcast(b *testing.B, srv *redistest.Server, publish func()) {
	b.Helper()
	b.ReportAllocs()
	if _, err := srv.Cli("config", "resetstat"); err != nil {
		b.Fatal(err)
	}
	cpu := redisCPU(b, []*redistest.Server{srv})
	b.ResetTimer()
	for range b.N {
		publish()
	}
	b.StopTimer()
	b.ReportMetric((redisCPU(b, []*redistest.Server{srv})-cpu)*1e3/float64(b.N), "redis-ms/op")
	out, err := srv.Cli("info", "commandstats")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(out) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if name = strings.TrimPrefix(name, "cmdstat_"); !ok || name != "evalsha" && name != "publish" {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		if calls, err := strconv.Atoi(n); err == nil {
			b.ReportMetric(float64(calls)/float64(b.N), name+"/op")
		}
	}
}
