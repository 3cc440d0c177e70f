package unigrpc

import (
	"testing"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	protobuf "google.golang.org/protobuf/proto"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/unigrpc/unistreampb"
)

// TestCodecSendsPushBytes: the codec sends a push's bytes unchanged, as a
// copy (the engine reuses its frame buffer), and they read as the Push the
// engine encoded.
func TestCodecSendsPushBytes(t *testing.T) {
	msg := pushBytes(t)
	out, err := codec{}.Marshal(rawPush(msg))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	got := out.Materialize()
	if string(got) != string(msg) {
		t.Fatalf("sent %x, want %x", got, msg)
	}
	msg[len(msg)-1] ^= 0xff
	if string(out.Materialize()) == string(msg) {
		t.Error("the sent bytes follow the engine's buffer; want a copy")
	}
	var p unistreampb.Push
	if err := p.UnmarshalVT(got); err != nil {
		t.Fatal(err)
	}
	if p.Channel != "news" || string(p.Pub.GetData()) != `{"text":"hello"}` || p.Pub.Offset != 7 {
		t.Errorf("push %v", &p)
	}
	if _, err := (codec{}).Marshal(&p); err == nil {
		t.Error("a message other than a raw push was marshaled")
	}
}

func pushBytes(t testing.TB) []byte {
	framed, err := protocol.AppendPush(nil, protocol.TypeProtobuf, &protocol.Push{
		Channel: "news",
		Pub:     &protocol.Publication{Data: []byte(`{"text":"hello"}`), Offset: 7, Tags: map[string]string{"k": "v"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return framed[1:] // one byte of length prefix
}

// BenchmarkMarshalPush compares the codec with what it saves: gRPC's proto
// codec marshaling the generated Push once per consumer.
func BenchmarkMarshalPush(b *testing.B) {
	msg := pushBytes(b)
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			out, err := codec{}.Marshal(rawPush(msg))
			if err != nil {
				b.Fatal(err)
			}
			out.Free()
		}
	})
	b.Run("proto", func(b *testing.B) {
		var p unistreampb.Push
		if err := p.UnmarshalVT(msg); err != nil {
			b.Fatal(err)
		}
		c := encoding.GetCodecV2(proto.Name)
		b.ReportAllocs()
		for range b.N {
			out, err := c.Marshal(&p)
			if err != nil {
				b.Fatal(err)
			}
			out.Free()
		}
	})
}

// FuzzConnectRequest: whatever bytes a consumer sends, the codec either
// refuses them or gives a ConnectRequest the engine can take; never a
// panic.
func FuzzConnectRequest(f *testing.F) {
	req := &unistreampb.ConnectRequest{
		Token: "t", Data: []byte(`{}`), Name: "n", Version: "v", Headers: map[string]string{"h": "v"},
		Subs: map[string]*unistreampb.SubscribeRequest{"news": {Recover: true, Epoch: "e", Offset: 3}, "empty": nil},
	}
	seed, err := protobuf.Marshal(req)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x7f, 'x'})
	f.Add([]byte{0x1a, 0x02, 0x0a, 0x00}) // a subs entry with a key and no value
	f.Fuzz(func(t *testing.T, data []byte) {
		var got unistreampb.ConnectRequest
		if err := (codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &got); err != nil {
			return
		}
		out := connectRequest(&got)
		for ch, sr := range out.Subs {
			if sr == nil {
				t.Errorf("subs[%q] is nil", ch)
			}
		}
	})
}
