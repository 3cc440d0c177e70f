package redisstream_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/redisstream/redisstreamtest"
)

// BenchmarkThroughput: 100,000 publish entries added beforehand to 1 or
// 4 streams, run by one node on the memory engine. Each iteration is one
// whole measurement:
//
//	go test -run '^$' -bench Throughput -benchtime 1x ./server/consume/redisstream/
func BenchmarkThroughput(b *testing.B) {
	for _, streams := range []int{1, 4} {
		b.Run("streams="+strconv.Itoa(streams), func(b *testing.B) {
			consumetest.Throughput(b, redisstreamtest.Source{}, streams, 100_000)
		})
	}
}

// BenchmarkLatency: from an entry's XADD to its publication's arrival at
// a subscribed client, at 5,000 entries a second into one stream, for 10
// seconds.
func BenchmarkLatency(b *testing.B) {
	consumetest.Latency(b, redisstreamtest.Source{}, 1, 5000, 10*time.Second)
}
