package kafka_test

import (
	"testing"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/kafka"
	"github.com/gyrehq/gyre/server/consume/kafka/kafkatest"
)

// TestTrace: a record is a span under the traceparent of its headers.
func TestTrace(t *testing.T) {
	kafkatest.Require(t)
	consumetest.Trace(t, kafkatest.Source{}, consumetest.TraceWant{
		New: func(c config.Consumer, d *consume.Dispatcher) (consume.Consumer, error) {
			return kafka.New(c.Kafka, nil, d)
		},
		System:      "kafka",
		Destination: func(p consumetest.Place, _ config.Consumer) string { return p.(*kafkatest.Place).Topic },
		Partition:   true,
		Carries:     true,
	})
}
