// Package occupancytest checks that an implementation of
// broker.OccupancyTracker keeps the contract's promises, and benchmarks
// it.
//
// An engine calls the suite from its tests with a function that, once per
// subtest, returns the maker of that subtest's nodes:
//
//	func TestOccupancy(t *testing.T) {
//		occupancytest.Run(t, func(t testing.TB) func() broker.OccupancyTracker {
//			return func() broker.OccupancyTracker {
//				tr, err := memory.NewOccupancyTracker(memory.OccupancyConfig{})
//				if err != nil {
//					t.Fatal(err)
//				}
//				return tr
//			}
//		})
//	}
//
// The trackers it makes have not run; the suite runs them with its own
// handlers and options and closes them when the subtest ends. With the
// option Shared, the trackers made for one subtest are nodes of one
// deployment (several trackers on one Redis), which turns on the tests
// of several nodes: holds of two nodes making one transition, a node that
// dies with holds, a node closed while its handler runs. Without it the
// suite makes one tracker per subtest. With the option Dropping, which
// gives a maker of trackers with a small backlog, the suite checks the
// drops of a handler that stays down: counted exactly
// (broker.OccupancyDropCounter), logged once when they start and once
// when the handler caught up, the transitions kept in order.
//
// Every test ends with a transition of the keys it checks, so that it
// proves what did not happen by the order per key: an event that should
// not have been made would come before the last one. A vacate is checked
// to come no sooner than its delay after the release, a bound that a
// slow machine cannot break; no test asserts how fast anything happens.
// The test of a flap within the delay skips itself when the machine took
// longer than the delay between the two calls.
//
// The handlers record the first delivery of each event ID (repeats must
// carry the same event) and fail the subtest when two nodes' handlers
// hold events of one key at the same time, or when a key's events do not
// alternate between occupied and vacated starting with occupied, or go
// back in time.
package occupancytest
