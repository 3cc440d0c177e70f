package brokertest

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// RunStoreTests runs the contract suite of broker.Store against stores
// made by newStore, one per subtest; the suite closes each when its
// subtest ends. Select parts with -run, e.g. -run 'TestStore/Append'.
//
// The stream tests are those RunBrokerTests runs (history, its limits and
// TTLs, idempotency expiry), with publications appended instead of
// published; the others check what Append alone promises: positions
// handed out in item order per channel, also under concurrent calls,
// results per item, publications stored as given (time included), and
// the previous publication for delta.
func RunStoreTests(t *testing.T, newStore func(t *testing.T) broker.Store) {
	tests := []storeTest{
		{"AppendOffsets", testAppendOffsets},
		{"AppendResults", testAppendResults},
		{"AppendOrder", testAppendOrder},
		{"AppendConcurrent", testAppendConcurrent},
		{"AppendWithoutHistory", testAppendWithoutHistory},
		{"AppendFields", testAppendFields},
		{"AppendIdempotency", testAppendIdempotency},
		{"AppendVersion", testAppendVersion},
		{"AppendDelta", testAppendDelta},
		{"AppendAfterClose", testAppendAfterClose},
		{"Peek", testPeek},
	}
	for _, tt := range streamTests {
		tests = append(tests, storeTest{tt.name, func(t *testing.T, e *storeEnv) { tt.fn(t, e.streamEnv) }})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newStoreEnv(t, newStore))
		})
	}
}

type storeTest struct {
	name string
	fn   func(t *testing.T, e *storeEnv)
}

// storeEnv is a store, closed when the subtest ends, whose streams the
// stream tests fill with Append.
type storeEnv struct {
	*streamEnv
	s        broker.Store
	newStore func(t *testing.T) broker.Store
}

func newStoreEnv(t *testing.T, newStore func(t *testing.T) broker.Store) *storeEnv {
	t.Helper()
	s := newStore(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	e := &storeEnv{s: s, newStore: newStore}
	e.streamEnv = &streamEnv{
		t:           t,
		streams:     s,
		publishOne:  e.appendOne,
		publishMany: func(items []broker.PublishItem) { appendItems(s, items) },
	}
	return e
}

// appendOne appends one publication published now.
func (e *storeEnv) appendOne(ch string, data []byte, opts broker.PublishOptions) (broker.StreamPosition, bool, error) {
	it := [1]broker.StoreItem{storeItem(broker.PublishItem{Channel: ch, Data: data, Opts: opts})}
	e.s.Append(it[:])
	return it[0].Position, it[0].Suppressed, it[0].Err
}

// storeItem is it published now.
func storeItem(it broker.PublishItem) broker.StoreItem {
	return broker.StoreItem{PublishItem: it, Time: time.Now().UnixMilli()}
}

// appendItems appends items to s as publications published now, and
// copies their results back into items.
func appendItems(s broker.Store, items []broker.PublishItem) []broker.StoreItem {
	sis := make([]broker.StoreItem, len(items))
	for i, it := range items {
		sis[i] = storeItem(it)
	}
	s.Append(sis)
	for i := range items {
		items[i] = sis[i].PublishItem
	}
	return sis
}

// append appends items and fails the test on any item's error.
func (e *storeEnv) append(items []broker.StoreItem) {
	e.t.Helper()
	e.s.Append(items)
	for i, it := range items {
		if it.Err != nil {
			e.t.Fatalf("item %d (%q on %s): %v", i, it.Data, it.Channel, it.Err)
		}
	}
}
