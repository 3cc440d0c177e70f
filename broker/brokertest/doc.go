// Package brokertest checks that an implementation of the broker contracts
// behaves as the Gyre engine expects, and benchmarks it.
//
// Each broker package calls the suites from its own tests:
//
//	func TestBroker(t *testing.T) {
//		brokertest.RunBrokerTests(t, func(t *testing.T) broker.Broker {
//			b, err := memory.NewBroker(memory.Config{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return b
//		})
//	}
//
// A broker.Store (what keeps streams for a broker whose pub/sub keeps
// none) has its own suite, RunStoreTests, called the same way. Its stream
// tests (history, its limits and TTLs, idempotency expiry) are the
// broker suite's, with publications appended instead of published.
//
// The suites work with brokers that deliver asynchronously (through Redis
// or NATS): they subscribe before publishing, wait for deliveries with a
// generous deadline, and prove that something was not delivered by
// publishing a later marker and checking what arrived before it. Tests of
// expiry use short TTLs and wait for the effect with growing pauses rather
// than measuring time, so a broker whose TTLs have coarse granularity
// passes too. Channel names are unique per subtest, so brokers sharing a
// backend across subtests do not see each other's state.
//
// The suite's handler records each HandleRuns call: the publications of
// runs without a scope per channel, those of pattern runs (Run.Scope set)
// per channel on a path of their own, and the calls' runs as they came,
// for the tests of grouping.
//
// The Pattern tests check pattern delivery (broker.PatternBroker) when the
// broker implements it. They expect a scope that this node never
// subscribed, or unsubscribed, not to be delivered; a broker that
// delivers every scope regardless (one node) says so with the
// ScopesAlwaysDelivered option:
//
//	brokertest.RunBrokerTests(t, newBroker, brokertest.ScopesAlwaysDelivered())
//
// The tests of what crosses nodes (a publication's Trace reaching another
// node) make a second broker with newBroker in the same subtest; they run
// when the brokers share a backend and say so with the Cluster option.
package brokertest
