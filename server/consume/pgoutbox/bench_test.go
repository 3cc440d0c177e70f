package pgoutbox_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/pgoutbox/pgtest"
)

// BenchmarkThroughput is the measure every consumer type takes
// (consumetest.Throughput): 100,000 publish rows over 4 partitions,
// consumed by one server from its start (rows/s, "msgs/s"). Run it alone:
//
//	go test -run '^$' -bench Throughput -benchtime 1x ./server/consume/pgoutbox/
func BenchmarkThroughput(b *testing.B) {
	consumetest.Throughput(b, pgtest.Source(), 4, 100_000)
}

// BenchmarkLatency: from an insert to a subscriber, at 5,000 rows a
// second over 4 partitions (half the throughput budget of
// docs/benchmarks.md), each woken by the NOTIFY trigger, for 10 seconds.
func BenchmarkLatency(b *testing.B) {
	consumetest.Latency(b, pgtest.Source(), 4, 5000, 10*time.Second)
}

// BenchmarkBacklog measures how fast one node works through a backlog:
// 100,000 rows inserted over 4 partitions before the consumer starts, timed
// from its start until every row is published (rows/s). Each select limit
// is a sub-benchmark; the server's consumer is otherwise Centrifugo's
// default. Run it alone:
//
//	go test -run '^$' -bench Backlog -benchtime 1x ./server/consume/pgoutbox/
func BenchmarkBacklog(b *testing.B) {
	const partitions, rows = 4, 100_000
	for _, limit := range []int{100, 1000} {
		b.Run("select_limit="+strconv.Itoa(limit), func(b *testing.B) {
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				elapsed += backlogRun(b, partitions, rows, limit)
			}
			b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "rows/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// backlogRun inserts rows over the partitions, then starts a node
// consuming them (what the server runs for a consumer: the API executor,
// the dispatcher, the consumer) and returns the time from its start until
// it published the last row.
func backlogRun(b *testing.B, partitions, rows, limit int) time.Duration {
	tb := pgtest.NewTable(b, pgtest.DSN(b), partitions)
	per := rows / partitions
	for p := range partitions {
		tb.Insert(b, publishRows(p, 0, per)...)
	}
	tb.Exec(b, "VACUUM ANALYZE "+tb.Name)
	pc := tb.Consumer()
	pc.PartitionSelectLimit = limit
	var seen atomic.Int64
	all := make(chan struct{})
	bn := newBare(b, tb.Name, pc, nil)
	for p := range partitions {
		if _, err := bn.node.Tail(context.Background(), channelOf(p), func(string, *gyre.Publication) {
			if seen.Add(1) == int64(rows) {
				close(all)
			}
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.StartTimer()
	start := time.Now()
	bn.set.Start()
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d rows published in 5 minutes", seen.Load(), rows)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	bn.stop(b)
	if n := tb.Count(b); n != 0 {
		b.Fatalf("%d rows left after all were published", n)
	}
	return elapsed
}
