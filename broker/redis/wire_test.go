package redis

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// TestScriptEncoding: the publish script writes protobuf varints for
// offsets and lengths itself; offsets and payloads of one to three varint
// bytes must reach both the handler and a delta's prev intact.
func TestScriptEncoding(t *testing.T) {
	srv := redistest.Start(t)
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}})
	for _, tt := range []struct {
		name   string
		offset uint64 // the stream's offset before the publishes
		size   int    // payload size
	}{
		{"Small", 0, 10},
		{"TwoByteOffset", 126, 127},
		{"ThreeByteOffset", 16382, 128},
		{"LargeOffset", 1<<40 - 1, 16384},
		{"LargePayload", 300, 200000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ch := "encoding." + tt.name
			if err := b.Subscribe(ch); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			top := setOffset(t, b, ch, tt.offset)
			opts := history
			opts.UseDelta = true
			payloads := [][]byte{bytes.Repeat([]byte("a"), tt.size), bytes.Repeat([]byte("b"), tt.size)}
			for i, p := range payloads {
				sp, _, err := b.Publish(ch, p, opts)
				if err != nil {
					t.Fatalf("Publish: %v", err)
				}
				if want := tt.offset + uint64(i) + 1; sp.Offset != want || sp.Epoch != top.Epoch {
					t.Fatalf("Publish = %+v, want offset %d epoch %q", sp, want, top.Epoch)
				}
			}
			first, second := ev.next(t), ev.next(t)
			if !bytes.Equal(first.pub.Data, payloads[0]) || !bytes.Equal(second.pub.Data, payloads[1]) {
				t.Errorf("payloads changed on the way (sizes %d, %d)", len(first.pub.Data), len(second.pub.Data))
			}
			if first.pub.Offset != tt.offset+1 || second.sp.Offset != tt.offset+2 || second.sp.Epoch != top.Epoch {
				t.Errorf("delivered offsets %d, %+v", first.pub.Offset, second.sp)
			}
			if p := second.prev; p == nil || p.Offset != tt.offset+1 || !bytes.Equal(p.Data, payloads[0]) {
				t.Errorf("prev of the second publication is wrong: %v", p != nil)
			}
			pubs, _, err := b.History(ch, broker.HistoryOptions{Filter: broker.HistoryFilter{Limit: -1}})
			if err != nil || len(pubs) != 2 || pubs[1].Offset != tt.offset+2 || !bytes.Equal(pubs[1].Data, payloads[1]) {
				t.Errorf("History = %d publications, error %v", len(pubs), err)
			}
		})
	}
}

// setOffset creates the channel's stream and moves its offset, so that a
// test need not publish that many times.
func setOffset(t *testing.T, b *Broker, ch string, offset uint64) broker.StreamPosition {
	t.Helper()
	_, top, err := b.History(ch, broker.HistoryOptions{})
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	ci, si := b.e.locate(ch)
	c := b.e.clients[ci]
	cmd := c.B().Hset().Key(metaKey(b.e.bases[si], ch)).FieldValue().FieldValue("o", strconv.FormatUint(offset, 10)).Build()
	if err := c.Do(context.Background(), cmd).Error(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	top.Offset = offset
	return top
}

// TestJoinLeaveControlDecoded: join, leave and control messages keep their fields
// through the wire format.
func TestJoinLeaveControlDecoded(t *testing.T) {
	srv := redistest.Start(t)
	e := newEngine(t, Config{Addresses: []string{srv.Addr}})
	rec := &joinRecorder{got: make(chan string, 10)}
	if err := e.Broker().Run(rec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := e.Broker().Subscribe("jl"); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	info := &broker.ClientInfo{ClientID: "c", UserID: "u", ConnInfo: []byte(`{"a":1}`), ChanInfo: []byte("x")}
	for _, tt := range []struct {
		name string
		send func() error
		want string
	}{
		{"Join", func() error { return e.Broker().PublishJoin("jl", info) }, `join jl c u {"a":1} x`},
		{"Leave", func() error { return e.Broker().PublishLeave("jl", info) }, `leave jl c u {"a":1} x`},
		{"Control", func() error { return e.Broker().PublishControl([]byte("ctl"), "node1") }, "control ctl"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.send(); err != nil {
				t.Fatal(err)
			}
			if got := <-rec.got; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

type joinRecorder struct{ got chan string }

func (r *joinRecorder) HandleRuns([]broker.Run) error { return nil }
func (r *joinRecorder) HandleJoin(ch string, i *broker.ClientInfo) error {
	r.got <- strings.Join([]string{"join", ch, i.ClientID, i.UserID, string(i.ConnInfo), string(i.ChanInfo)}, " ")
	return nil
}
func (r *joinRecorder) HandleLeave(ch string, i *broker.ClientInfo) error {
	r.got <- strings.Join([]string{"leave", ch, i.ClientID, i.UserID, string(i.ConnInfo), string(i.ChanInfo)}, " ")
	return nil
}
func (r *joinRecorder) HandleControl(data []byte) error {
	r.got <- "control " + string(data)
	return nil
}
