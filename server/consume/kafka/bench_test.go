package kafka_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gyrehq/gyre/server/consume/kafka/kafkatest"
)

// BenchmarkThroughput: 100,000 publish commands waiting in 4 partitions
// are consumed by a fresh node (memory engine, channels without
// history); the time runs from the node's start until every record ran
// (msgs/s), and from the first record run (msgs/s-running: without the
// group's join).
// Each iteration uses a topic of its own; run it once:
//
//	go test -run '^$' -bench Throughput -benchtime 1x ./server/consume/kafka/
func BenchmarkThroughput(b *testing.B) {
	for _, poll := range []int{100, 1000} {
		b.Run("max_poll_records="+strconv.Itoa(poll), func(b *testing.B) {
			const total, partitions = 100_000, 4
			brokers := kafkatest.Brokers(b)
			pr := kafkatest.NewProducer(b, brokers)
			// elapsed runs from the node's start, running from the first
			// record run (the group joined, the first fetch back).
			var elapsed, running time.Duration
			for b.Loop() {
				b.StopTimer()
				name := kafkatest.TopicName("bench")
				kafkatest.CreateTopic(b, brokers, name, partitions)
				recs := make([]*kgo.Record, 0, total)
				for i := range total {
					p := i % partitions
					recs = append(recs, &kgo.Record{
						Topic: name, Partition: int32(p),
						Value:   []byte(`{"channel":"bench-` + strconv.Itoa(p) + `","data":{"n":` + strconv.Itoa(i) + `}}`),
						Headers: []kgo.RecordHeader{{Key: "centrifugo-method", Value: []byte("publish")}},
					})
				}
				for len(recs) > 0 {
					n := min(len(recs), 10_000)
					pr.Produce(b, recs[:n]...)
					recs = recs[n:]
				}
				cons := kafkatest.ConsumerConfig("bench", name, brokers, name)
				cons.Kafka.MaxPollRecords = poll
				b.StartTimer()
				start := time.Now()
				n := startNode(b, cons)
				var first time.Time
				for n.stats().Processed < total {
					if first.IsZero() && n.stats().Processed > 0 {
						first = time.Now()
					}
					time.Sleep(5 * time.Millisecond)
				}
				elapsed += time.Since(start)
				running += time.Since(first)
				b.StopTimer()
				if s := n.stats(); s.Processed != total || s.Skipped != 0 {
					b.Fatalf("processed %d, skipped %d; want %d and 0", s.Processed, s.Skipped, total)
				}
				n.stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(total*b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(total*b.N)/running.Seconds(), "msgs/s-running")
		})
	}
}
