package loadtest

import (
	"reflect"
	"testing"

	"github.com/gyrehq/gyre/protocol"
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
			c.endFrame(2)
			if got := c.outOfOrder.Load(); got != tt.outOfOrder {
				t.Errorf("out of order %d, want %d", got, tt.outOfOrder)
			}
			if got := c.lost(tt.published); got != tt.lost {
				t.Errorf("lost %d, want %d", got, tt.lost)
			}
			if got := c.received.Load(); got != int64(len(tt.seen)) {
				t.Errorf("received %d, want %d", got, len(tt.seen))
			}
			if got := c.p.latency.total(); got != uint64(len(tt.seen)) {
				t.Errorf("latencies recorded %d, want %d", got, len(tt.seen))
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

// TestLatencyRuns checks that the latencies of a frame, counted in runs of
// one bucket, land in the histogram as one record each would.
func TestLatencyRuns(t *testing.T) {
	c := &conn{p: &pool{}, last: make([]uint64, 1), got: make([]uint64, 1)}
	want := &histogram{}
	lat := []int64{5, 5, 900, 901, 5, 1 << 30, -7, 1 << 30}
	for i, l := range lat {
		c.deliver(stamp{seq: uint64(i + 1), sentNano: 1 << 40}, 1<<40+l)
		want.record(l)
	}
	c.endFrame(1 << 40)
	if got := c.p.latency.snapshot(); !reflect.DeepEqual(got, want.snapshot()) {
		t.Errorf("histogram %+v, want %+v", got, want.snapshot())
	}
	if got, w := c.p.latency.max.Load(), want.max.Load(); got != w {
		t.Errorf("max %d, want %d", got, w)
	}
}

// TestHandleFrames: every publication in a frame is counted, in order,
// while the place of the payload inside the message moves (offsets and
// channel names of other lengths) and other replies come in between.
func TestHandleFrames(t *testing.T) {
	for _, typ := range []protocol.Type{protocol.TypeJSON, protocol.TypeProtobuf} {
		t.Run(typ.String(), func(t *testing.T) {
			var msgs [][]byte
			const n = 300
			for i := range n {
				ch := "bench-fanout"
				if i%7 == 0 {
					ch = "a-much-longer-channel-name"
				}
				data := appendPayload(nil, 0, uint64(i+1), 1, 64+i%5)
				r := &protocol.Reply{Push: &protocol.Push{Channel: ch, Pub: &protocol.Publication{Data: data, Offset: uint64(i * 97)}}}
				if i%50 == 0 {
					msgs = appendReply(t, msgs, typ, &protocol.Reply{Id: uint32(i + 1)})
				}
				msgs = appendReply(t, msgs, typ, r)
			}
			c := &conn{p: &pool{}, typ: typ, last: make([]uint64, 1), got: make([]uint64, 1)}
			frame := protocol.JoinFrame(nil, typ, msgs)
			var err error
			if typ == protocol.TypeProtobuf {
				err = c.handleProtobuf(frame, 2)
			} else {
				err = c.handleJSON(frame, 2)
			}
			if err != nil {
				t.Fatal(err)
			}
			c.endFrame(2)
			if got := c.received.Load(); got != n {
				t.Errorf("received %d, want %d", got, n)
			}
			if got := c.outOfOrder.Load(); got != 0 {
				t.Errorf("out of order %d", got)
			}
			if c.got[0] != n || c.last[0] != n {
				t.Errorf("got %d, last %d, want %d", c.got[0], c.last[0], n)
			}
		})
	}
}

func appendReply(t *testing.T, msgs [][]byte, typ protocol.Type, r *protocol.Reply) [][]byte {
	t.Helper()
	m, err := protocol.AppendReply(nil, typ, r)
	if err != nil {
		t.Fatal(err)
	}
	return append(msgs, m)
}
