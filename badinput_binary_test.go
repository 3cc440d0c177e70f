package gyre_test

import (
	"bytes"
	"errors"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/protocol"
)

// TestBinaryPayloadToJSONSubscriber publishes bytes that are not JSON from
// a protobuf client into a channel a JSON client is subscribed to. The
// protobuf subscriber gets them as they are; the JSON subscriber must never
// get a frame that is not valid UTF-8 JSON: it is closed with 3506.
func TestBinaryPayloadToJSONSubscriber(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"bytes that are not UTF-8", []byte{0xff, 0x00, '"', 0x01}},
		{"text that is not JSON", []byte("hello, world")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkPayloadToJSONSubscriber(t, tt.data)
		})
	}
}

func checkPayloadToJSONSubscriber(t *testing.T, binary []byte) {
	_, url := newTestNode(t, chatConfig())
	const channel = "chat:mixed"
	jsonSub := dialRaw(t, url, protocol.TypeJSON)
	jsonSub.connect(connToken(t, "reader", 0, nil))
	if r := jsonSub.call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: channel}}); r.Error != nil {
		t.Fatal(r.Error)
	}
	protoSub := dial(t, url, protocol.TypeProtobuf)
	protoSub.connect(connToken(t, "writer", 0, nil))
	if r := protoSub.Subscribe(&protocol.SubscribeRequest{Channel: channel}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if r := protoSub.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: channel, Data: binary}}); r.Error != nil {
		t.Fatalf("publish: %+v", r.Error)
	}
	if p := protoSub.WaitPubs(channel, 1)[0]; !bytes.Equal(p.Data, binary) {
		t.Fatalf("protobuf subscriber got %q, want %q", p.Data, binary)
	}
	for {
		if err := jsonSub.nc.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		data, _, err := wsutil.ReadServerData(jsonSub.rw)
		var ce wsutil.ClosedError
		if errors.As(err, &ce) {
			if ce.Code != 3506 {
				t.Fatalf("JSON subscriber closed with %d (%s), want 3506", ce.Code, ce.Reason)
			}
			return
		}
		if errors.Is(err, wsutil.ErrInvalidUTF8) {
			t.Fatalf("JSON subscriber got a text frame that is not UTF-8")
		}
		if err != nil {
			t.Fatalf("JSON subscriber: %v", err)
		}
		if !utf8.Valid(data) {
			t.Fatalf("JSON subscriber got a text frame that is not UTF-8: %q", data)
		}
		if _, err := protocol.DecodeReplies(protocol.TypeJSON, data, nil); err != nil {
			t.Fatalf("JSON subscriber got a frame it cannot decode: %q: %v", data, err)
		}
	}
}
