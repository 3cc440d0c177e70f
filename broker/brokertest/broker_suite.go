package brokertest

import (
	"testing"

	"github.com/gyrehq/gyre/broker"
)

// Option tells RunBrokerTests about a property of the broker that the
// contract leaves open.
type Option func(*options)

type options struct {
	cluster               bool
	noHistory             bool
	scopesAlwaysDelivered bool
	interruptPatterns     func(t *testing.T)
}

// ScopesAlwaysDelivered declares that the broker delivers the
// publications of every pattern scope whether this node subscribed it or
// not, as broker.PatternBroker allows (a broker of one node). Without it,
// the suite checks that a scope never subscribed, or unsubscribed, is not
// delivered.
func ScopesAlwaysDelivered() Option {
	return func(o *options) { o.scopesAlwaysDelivered = true }
}

// Cluster declares that the brokers newBroker makes within one subtest
// are nodes of one cluster: what one publishes reaches the others'
// subscriptions. The tests of what crosses nodes run only with it.
func Cluster() Option {
	return func(o *options) { o.cluster = true }
}

// NoHistory declares a broker that keeps no streams (core NATS without a
// store): it must refuse publications that need one (history, an
// idempotency key, a version) with an error, and the tests of streams are
// skipped.
func NoHistory() Option {
	return func(o *options) { o.noHistory = true }
}

// PatternScopeInterrupt declares that the broker can lose its pattern
// scope subscriptions (broker.PatternScopeLostHandler), and gives the
// suite the way to make it happen: interrupt breaks the broker's
// connections, which the broker must restore by itself. The
// PatternScopeLost test then checks, under publishing, that every scope
// publication the handler did not get was reported lost in order with
// the ones it got; without the option it is skipped.
func PatternScopeInterrupt(interrupt func(t *testing.T)) Option {
	return func(o *options) { o.interruptPatterns = interrupt }
}

// RunBrokerTests runs the contract suite against brokers made by
// newBroker, one per subtest. newBroker returns a broker that has not been
// Run; the suite runs it with its own handler and closes it when the
// subtest ends. Select parts with -run, e.g. -run 'TestBroker/History'.
//
// The Pattern tests run when the broker implements broker.PatternBroker,
// the PublishManyTo tests when it implements broker.DirectPublisher and
// broker.PatternBroker; they are skipped otherwise. Every subtest also
// fails if the broker handed one channel's publications to HandleRuns
// concurrently, or made a call without runs or with an empty run.
func RunBrokerTests(t *testing.T, newBroker func(t *testing.T) broker.Broker, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	tests := []brokerTest{
		{"NoHistoryRefused", testNoHistoryRefused},
		{"Offsets", testOffsets},
		{"PublishWithoutHistory", testPublishWithoutHistory},
		{"PublicationFields", testPublicationFields},
		{"Idempotency", testIdempotency},
		{"Version", testVersion},
		{"OrderOnePublisher", testOrderOnePublisher},
		{"OrderConcurrentPublishers", testOrderConcurrentPublishers},
		{"Delta", testDelta},
		{"JoinLeave", testJoinLeave},
		{"Control", testControl},
		{"PatternFields", testPatternFields},
		{"PatternWithoutExactSubscription", testPatternWithoutExactSubscription},
		{"PatternOnlyWithScope", testPatternOnlyWithScope},
		{"PatternOrderConcurrentPublishers", testPatternOrderConcurrentPublishers},
		{"PatternUnsubscribe", testPatternUnsubscribe},
		{"PatternScopesIsolated", testPatternScopesIsolated},
		{"PatternSuppressed", testPatternSuppressed},
		{"PatternScopeLost", testPatternScopeLost},
		{"PublishManyResults", testPublishManyResults},
		{"PublishManyOrder", testPublishManyOrder},
		{"PublishManyConcurrent", testPublishManyConcurrent},
		{"PublishManyLarge", testPublishManyLarge},
		{"PublishManyLongRuns", testPublishManyLongRuns},
		{"PublishManyAfterClose", testPublishManyAfterClose},
		{"PatternPublishMany", testPatternPublishMany},
		{"PublishManyMixed", testPublishManyMixed},
		{"PublishManyBroadcast", testPublishManyBroadcast},
		{"DeltaAmongPlain", testDeltaAmongPlain},
		{"PatternPublishManyPlain", testPatternPublishManyPlain},
		{"PublishManyToHandler", testPublishManyToHandler},
		{"PublishManyToRuns", testPublishManyToRuns},
		{"TraceDelivered", testTraceDelivered},
		{"TracePublishMany", testTracePublishMany},
		{"TracePattern", testTracePattern},
		{"TraceOtherNode", testTraceOtherNode},
	}
	for _, tt := range streamTests {
		tests = append(tests, brokerTest{tt.name, func(t *testing.T, e *brokerEnv) { tt.fn(t, e.streamEnv) }})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newBrokerEnv(t, newBroker)
			e.opts, e.noStreams = o, o.noHistory
			tt.fn(t, e)
		})
	}
}

// streamTests check what brokers and stores share: streams, history,
// idempotency. RunBrokerTests and RunStoreTests both run them.
var streamTests = []streamTest{
	{"HistoryCreatesStream", testHistoryCreatesStream},
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
	{"IdempotencyExpiry", testIdempotencyExpiry},
	{"TraceNotStored", testTraceNotStored},
}

type brokerTest struct {
	name string
	fn   func(t *testing.T, e *brokerEnv)
}

type streamTest struct {
	name string
	fn   func(t *testing.T, e *streamEnv)
}
