package maptest

import (
	"testing"

	"github.com/gyrehq/gyre/broker"
)

// Option tells Run about a property of the broker that the contract
// leaves open.
type Option func(*options)

type options struct {
	orderedPages  bool
	sharedBackend bool
}

// OrderedPages declares that ReadState returns entries ordered by key and
// at most Limit of them per page (the memory broker). Without it the
// suite checks only what every broker keeps: an iteration returns every
// key, exactly once when the state does not change.
func OrderedPages() Option {
	return func(o *options) { o.orderedPages = true }
}

// SharedBackend declares that the brokers the factory makes within one
// subtest are nodes of one deployment, sharing their state (Redis): the
// tests of several nodes then run, with a second broker from the factory
// as the second node. Without it they are skipped.
func SharedBackend() Option {
	return func(o *options) { o.sharedBackend = true }
}

// Run runs the contract suite against brokers made by newBroker, one per
// subtest (two for the tests of several nodes). newBroker returns a
// broker that has not been Run; the suite runs it with its own handler
// and closes it when the subtest ends. Select parts with -run, e.g.
// -run 'TestMapBroker/State'.
func Run(t *testing.T, newBroker func(t *testing.T) broker.MapBroker, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newEnv(t, newBroker, o))
		})
	}
}

type test struct {
	name string
	fn   func(t *testing.T, e *env)
}

var tests = []test{
	// Positions.
	{"FirstRead", testFirstRead},
	{"Offsets", testOffsets},
	{"ChannelsIsolated", testChannelsIsolated},
	// State.
	{"StateFields", testStateFields},
	{"StatePaging", testStatePaging},
	{"StatePagingUnderWrites", testStatePagingUnderWrites},
	{"StateLimit", testStateLimit},
	{"StateKey", testStateKey},
	{"BadCursor", testBadCursor},
	{"Revision", testRevision},
	{"Stats", testStats},
	{"ResultsAreCopies", testResultsAreCopies},
	// Stream.
	{"StreamRead", testStreamRead},
	{"StreamUnrecoverable", testStreamUnrecoverable},
	{"StreamSize", testStreamSize},
	{"StreamTTL", testStreamTTL},
	{"EphemeralNoStream", testEphemeralNoStream},
	{"MetaTTL", testMetaTTL},
	// Delivery.
	{"DeliveryFields", testDeliveryFields},
	{"DeliveryOrder", testDeliveryOrder},
	{"NotDeliveredUnsubscribed", testNotDeliveredUnsubscribed},
	{"SuppressedNotDelivered", testSuppressedNotDelivered},
	{"Delta", testDelta},
	// Writes.
	{"KeyMode", testKeyMode},
	{"Idempotency", testIdempotency},
	{"IdempotencyExpiry", testIdempotencyExpiry},
	{"Version", testVersion},
	{"Clear", testClear},
	// Expiry.
	{"Expiry", testExpiry},
	{"ExpiryRewriteExtends", testExpiryRewriteExtends},
	{"RefreshTTLOnSuppress", testRefreshTTLOnSuppress},
	// Several nodes.
	{"NodesDelivery", testNodesDelivery},
	{"NodesState", testNodesState},
	{"NodesExpiryOnce", testNodesExpiryOnce},
}
