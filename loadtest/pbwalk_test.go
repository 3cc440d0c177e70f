package loadtest

import (
	"bytes"
	"testing"

	"github.com/gyrehq/gyre/protocol"
)

func TestPBPublicationData(t *testing.T) {
	data := appendPayload(nil, 2, 42, 1700000000000000000, 100)
	pub := &protocol.Publication{Data: data, Offset: 7, Tags: map[string]string{"k": "v"},
		Info: &protocol.ClientInfo{User: "u", Client: "c"}, Channel: "ch"}
	tests := []struct {
		name  string
		reply *protocol.Reply
		want  []byte // nil: not a publication
	}{
		{"publication", &protocol.Reply{Push: &protocol.Push{Channel: "bench", Pub: pub}}, data},
		{"publication with empty data", &protocol.Reply{Push: &protocol.Push{Channel: "bench", Pub: &protocol.Publication{Offset: 1}}}, nil},
		{"join", &protocol.Reply{Push: &protocol.Push{Channel: "bench", Join: &protocol.Join{Info: &protocol.ClientInfo{User: "u"}}}}, nil},
		{"disconnect", &protocol.Reply{Push: &protocol.Push{Disconnect: &protocol.Disconnect{Code: 3001, Reason: "shutdown"}}}, nil},
		{"reply with id", &protocol.Reply{Id: 3, Subscribe: &protocol.SubscribeResult{}}, nil},
		{"error", &protocol.Reply{Id: 3, Error: &protocol.Error{Code: 103, Message: "permission denied"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := tt.reply.MarshalVT()
			if err != nil {
				t.Fatal(err)
			}
			got, ok := pbPublicationData(msg)
			if ok != (tt.want != nil) || !bytes.Equal(got, tt.want) {
				t.Fatalf("pbPublicationData = %q %v, want %q", got, ok, tt.want)
			}
		})
	}
}

func TestPBMalformed(t *testing.T) {
	for _, msg := range [][]byte{
		{0x22},             // push, no length
		{0x22, 0x05, 0x22}, // push longer than the message
		{0x22, 0x02, 0x22, 0x7f},
		{0x22, 0x01, 0x0b}, // group start wire type
		{0x0d, 0x01},       // fixed32 cut short
		{0x09, 1, 2, 3},    // fixed64 cut short
		{0x08},             // varint missing
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	} {
		if d, ok := pbPublicationData(msg); ok {
			t.Errorf("pbPublicationData(%x) = %q, want not ok", msg, d)
		}
	}
}

func FuzzPBPublicationData(f *testing.F) {
	r := &protocol.Reply{Push: &protocol.Push{Channel: "c", Pub: &protocol.Publication{Data: []byte(`{"gb":[0,1,2]}`)}}}
	seed, _ := r.MarshalVT()
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		d, ok := pbPublicationData(b)
		if !ok {
			return
		}
		// Whatever the walk found, the real decoder agrees.
		var full protocol.Reply
		if err := full.UnmarshalVT(b); err != nil {
			return // the walk is more lenient than the decoder about parts it skips
		}
		if full.Push == nil || full.Push.Pub == nil || !bytes.Equal(full.Push.Pub.Data, d) {
			t.Fatalf("walk found %q, decoder %+v", d, full.Push)
		}
	})
}
