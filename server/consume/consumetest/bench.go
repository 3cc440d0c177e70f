package consumetest

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/wstest"
)

// Measurements of a consumer type, for its package's benchmarks: run them
// with -benchtime=1x (each call is one whole measurement) and read the
// metrics they report. Both run one node on the memory engine, so that
// what is measured is the consumer and the publishing, not a broker.

// Throughput stores n publish messages spread over the given number of
// partitions (one channel per partition), then starts a node consuming
// them, and reports how many messages per second it ran and published:
// from the node's start to the last publication in history.
func Throughput(b *testing.B, src Source, partitions, n int) {
	place := src.Open(b, partitions, false)
	cons, _ := place.Consumer(unique("bench"), unique("group"), false)
	chans := make([]string, place.Partitions())
	per := n / len(chans)
	key := unique("k")
	for p := range chans {
		chans[p] = ns + ":" + unique("bench")
		// In slices, so that a source that writes one request per call
		// is not held to one huge one.
		for from := 0; from < per; from += 5000 {
			place.Produce(b, p, sequence(chans[p], key+strconv.Itoa(p), from, min(from+5000, per))...)
		}
	}
	for b.Loop() {
		start := time.Now()
		node := startNode(b, serverConfig(b, engines[0], unique("p"), cons))
		for _, ch := range chans {
			waitCount(b, node, ch, per)
		}
		elapsed := time.Since(start)
		b.ReportMetric(float64(per*len(chans))/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(0, "ns/op")
	}
}

// waitCount waits until the channel's stream holds want publications.
func waitCount(tb testing.TB, n *node, channel string, want int) {
	tb.Helper()
	waitFor(tb, strconv.Itoa(want)+" publications in "+channel, func() bool {
		_, sp, err := n.s.Node().History(channel, 0, nil, false)
		return err == nil && sp.Offset >= uint64(want)
	})
}

// Latency produces publish messages at rate per second for d, one
// channel per partition, to a node whose client is subscribed to them,
// and reports the latency from each message's write into the source to
// its arrival at the client: median and 99th
// percentile.
func Latency(b *testing.B, src Source, partitions, rate int, d time.Duration) {
	place := src.Open(b, partitions, false)
	cons, _ := place.Consumer(unique("latency"), unique("group"), false)
	for b.Loop() {
		node := startNode(b, serverConfig(b, engines[0], unique("p"), cons))
		c := client(b, node, "watcher")
		chans := make([]string, place.Partitions())
		for p := range chans {
			chans[p] = ns + ":" + unique("lat")
			subscribe(b, c, chans[p])
		}
		// A tick produces a slice of messages into each partition in
		// turn: 100 ticks a second.
		const ticks = 100
		perTick := max(1, rate/ticks)
		total := int(d.Seconds()) * ticks * perTick
		committed := make([]time.Time, total)
		tick := time.NewTicker(time.Second / ticks)
		for i := 0; i < total; {
			<-tick.C
			p := (i / perTick) % len(chans)
			msgs := make([]Msg, 0, perTick)
			for j := i; j < i+perTick && j < total; j++ {
				msgs = append(msgs, publish(chans[p], j, "", false))
			}
			// Taken before the write: the consumer may run a message
			// before Produce returns, and so the latency measured is an
			// upper bound, the time of the write included.
			now := time.Now()
			for j := i; j < i+len(msgs); j++ {
				committed[j] = now
			}
			place.Produce(b, p, msgs...)
			i += len(msgs)
		}
		tick.Stop()
		c.WaitFor("every publication", func() bool { return countPubs(c, chans) >= total })
		pushes, at := c.PushTimes()
		var lat []time.Duration
		for i, p := range pushes {
			if p.Pub == nil {
				continue
			}
			var v struct {
				N int `json:"n"`
			}
			if err := json.Unmarshal(p.Pub.Data, &v); err != nil || v.N >= total {
				b.Fatalf("consumetest: publication %q is none of the test's", p.Pub.Data)
			}
			lat = append(lat, at[i].Sub(committed[v.N]))
		}
		slices.Sort(lat)
		if len(lat) == 0 {
			b.Fatal("consumetest: no latency measured")
		}
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(total)/d.Seconds(), "msgs/s")
		b.ReportMetric(0, "ns/op")
	}
}

func countPubs(c *wstest.Client, chans []string) int {
	n := 0
	for _, ch := range chans {
		n += len(c.Pubs(ch))
	}
	return n
}
