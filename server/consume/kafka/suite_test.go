package kafka_test

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/kafka/kafkatest"
)

// TestSuite runs the suite every consumer type passes.
func TestSuite(t *testing.T) {
	kafkatest.Require(t)
	consumetest.Run(t, kafkatest.Source{})
}

// BenchmarkLatency: from a record's write to a subscribed client, at
// 10,000 records a second over 4 partitions (half the throughput budget
// of docs/benchmarks.md), for 10 seconds; -benchtime=1x.
func BenchmarkLatency(b *testing.B) {
	consumetest.Latency(b, kafkatest.Source{}, 4, 10_000, 10*time.Second)
}

// BenchmarkSuiteThroughput is the measure every consumer type takes
// (consumetest.Throughput): 100,000 publishes with idempotency keys into
// channels with history, over 4 partitions, run by one node from its
// start; -benchtime=1x.
func BenchmarkSuiteThroughput(b *testing.B) {
	consumetest.Throughput(b, kafkatest.Source{}, 4, 100_000)
}
