package redisstream_test

import (
	"testing"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/redisstream"
	"github.com/gyrehq/gyre/server/consume/redisstream/redisstreamtest"
)

// TestTrace: an entry is a span under the trace context of its fields
// traceparent and tracestate.
func TestTrace(t *testing.T) {
	t.Parallel()
	consumetest.Trace(t, redisstreamtest.Source{}, consumetest.TraceWant{
		New: func(c config.Consumer, d *consume.Dispatcher) (consume.Consumer, error) {
			return redisstream.New(c.RedisStream, redisConfig(c.RedisStream.Redis), d)
		},
		System:      "redis",
		Destination: func(p consumetest.Place, _ config.Consumer) string { return p.(*redisstreamtest.Place).Keys[0] },
		Carries:     true,
	})
}
