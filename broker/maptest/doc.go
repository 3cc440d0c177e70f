// Package maptest checks that an implementation of broker.MapBroker
// behaves as the Gyre engine expects, and benchmarks it.
//
// A map broker package calls the suite from its own tests:
//
//	func TestMapBroker(t *testing.T) {
//		maptest.Run(t, func(t *testing.T) broker.MapBroker {
//			b, err := memory.NewMapBroker(memory.MapConfig{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return b
//		}, maptest.OrderedPages())
//	}
//
// The factory returns a broker that has not been Run; the suite runs it
// with its own handler and closes it when the subtest ends. Each subtest
// gets its own broker. Options declare what the contract leaves open:
// OrderedPages for a broker whose state pages come ordered by key and
// never hold more than the limit, SharedBackend for a broker whose
// instances made within one subtest are nodes of one deployment, which
// turns on the tests of several nodes.
//
// The suite works with brokers that deliver asynchronously: it
// subscribes before publishing, waits for deliveries with a generous
// deadline, and proves that something was not delivered by publishing a
// later marker into the same channel and checking what arrived before
// it. Tests of expiry use short TTLs and wait for the effect, growing
// their pauses when a read would keep alive what they wait to see
// expire; no test asserts how fast anything happens. Channel names are
// unique per subtest, so brokers sharing a backend do not see each
// other's channels.
//
// The suite's handler records each channel's deliveries and fails the
// subtest if one channel's runs were handed over concurrently, or a
// HandleRuns call was malformed (no runs, an empty run, a run with a
// pattern scope, a change without a key).
package maptest
