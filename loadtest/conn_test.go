package loadtest

import (
	"testing"
)

// TestDeliverAccounting: out-of-order and lost counts from the sequence
// numbers a subscriber sees, against what was published.
func TestDeliverAccounting(t *testing.T) {
	type d struct {
		pub int
		seq uint64
	}
	tests := []struct {
		name       string
		seen       []d
		published  []uint64
		outOfOrder int64
		lost       int64
	}{
		{"all in order", []d{{0, 1}, {0, 2}, {0, 3}}, []uint64{3}, 0, 0},
		{"gap", []d{{0, 1}, {0, 3}}, []uint64{3}, 0, 1},
		{"swapped", []d{{0, 2}, {0, 1}, {0, 3}}, []uint64{3}, 1, 0},
		{"duplicate", []d{{0, 1}, {0, 1}, {0, 2}}, []uint64{2}, 1, 0},
		{"two publishers interleaved", []d{{1, 1}, {0, 1}, {1, 2}, {0, 2}}, []uint64{2, 2}, 0, 0},
		{"one publisher missing", []d{{0, 1}, {0, 2}}, []uint64{2, 3}, 0, 3},
		{"unknown publisher ignored", []d{{0, 1}, {5, 1}}, []uint64{1}, 0, 0},
		{"nothing published", nil, []uint64{0}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &conn{p: &pool{}, last: make([]uint64, len(tt.published)), got: make([]uint64, len(tt.published))}
			for _, x := range tt.seen {
				c.deliver(stamp{publisher: x.pub, seq: x.seq, sentNano: 1}, 2)
			}
			if got := c.outOfOrder.Load(); got != tt.outOfOrder {
				t.Errorf("out of order %d, want %d", got, tt.outOfOrder)
			}
			if got := c.lost(tt.published); got != tt.lost {
				t.Errorf("lost %d, want %d", got, tt.lost)
			}
			if got := c.received.Load(); got != int64(len(tt.seen)) {
				t.Errorf("received %d, want %d", got, len(tt.seen))
			}
		})
	}
}

func TestWithQuery(t *testing.T) {
	tests := []struct{ url, want string }{
		{"ws://h/connection/websocket", "ws://h/connection/websocket?cf_protocol=protobuf"},
		{"ws://h/c?x=1", "ws://h/c?x=1&cf_protocol=protobuf"},
		{"ws://h/c?cf_protocol=protobuf", "ws://h/c?cf_protocol=protobuf"},
		{"ws://h/c?x=1&cf_protocol=json", "ws://h/c?x=1&cf_protocol=json"},
	}
	for _, tt := range tests {
		if got := withQuery(tt.url, "cf_protocol=protobuf"); got != tt.want {
			t.Errorf("withQuery(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
