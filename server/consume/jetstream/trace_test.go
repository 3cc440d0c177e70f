package jetstream_test

import (
	"testing"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/jetstream"
	"github.com/gyrehq/gyre/server/consume/jetstream/jetstreamtest"
)

// TestTrace: a message is a span under the traceparent of its headers,
// named by its subject.
func TestTrace(t *testing.T) {
	consumetest.Trace(t, source, consumetest.TraceWant{
		New: func(c config.Consumer, d *consume.Dispatcher) (consume.Consumer, error) {
			return jetstream.New(c.NatsJetStream, nil, d)
		},
		System:      "nats",
		Destination: func(p consumetest.Place, _ config.Consumer) string { return p.(*jetstreamtest.Place).Subject },
		Carries:     true,
	})
}
