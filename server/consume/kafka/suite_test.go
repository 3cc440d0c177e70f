package kafka_test

import (
	"testing"

	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/kafka/kafkatest"
)

// TestSuite runs the suite every consumer type passes.
func TestSuite(t *testing.T) {
	kafkatest.Require(t)
	consumetest.Run(t, kafkatest.Source{})
}
