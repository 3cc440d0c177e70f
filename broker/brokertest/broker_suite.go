package brokertest

import (
	"testing"

	"github.com/gyrehq/gyre/broker"
)

// RunBrokerTests runs the contract suite against brokers made by
// newBroker, one per subtest. newBroker returns a broker that has not been
// Run; the suite runs it with its own handler and closes it when the
// subtest ends. Select parts with -run, e.g. -run 'TestBroker/History'.
func RunBrokerTests(t *testing.T, newBroker func(t *testing.T) broker.Broker) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *brokerEnv)
	}{
		{"Offsets", testOffsets},
		{"HistoryCreatesStream", testHistoryCreatesStream},
		{"PublishWithoutHistory", testPublishWithoutHistory},
		{"PublicationFields", testPublicationFields},
		{"ChannelsIsolated", testChannelsIsolated},
		{"HistoryLimit", testHistoryLimit},
		{"HistorySince", testHistorySince},
		{"HistoryUnrecoverable", testHistoryUnrecoverable},
		{"HistorySize", testHistorySize},
		{"HistoryTTL", testHistoryTTL},
		{"MetaTTL", testMetaTTL},
		{"RemoveHistory", testRemoveHistory},
		{"HistoryReturnsCopies", testHistoryReturnsCopies},
		{"PublishCopiesInput", testPublishCopiesInput},
		{"Idempotency", testIdempotency},
		{"IdempotencyExpiry", testIdempotencyExpiry},
		{"OrderOnePublisher", testOrderOnePublisher},
		{"OrderConcurrentPublishers", testOrderConcurrentPublishers},
		{"Delta", testDelta},
		{"JoinLeave", testJoinLeave},
		{"Control", testControl},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newBrokerEnv(t, newBroker))
		})
	}
}
