package grpcapi_test

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/grpcapi"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// notJSONBytes are bytes a JSON client could not take in its frames.
var notJSONBytes = []byte{0xff, 0x00, 0x10}

// wantNotJSON fails unless got is the 107 that names field.
func wantNotJSON(t *testing.T, what string, got *apipb.Error, field string) {
	t.Helper()
	wantErr(t, what, got, 107)
	if !strings.Contains(got.GetMessage(), field+" is not JSON") {
		t.Errorf("%s: message %q does not name %s", what, got.GetMessage(), field)
	}
}

// TestNotJSONPayloadRefused: every payload field of the gRPC API that
// reaches clients as it is must be JSON: the call is refused with 107
// naming the field, and the JSON subscribers of the channel stay
// connected and get what comes next.
func TestNotJSONPayloadRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	sub := e.dial("7")
	sub.MustSubscribe("hist:j")
	ctx := e.ctx()

	p, err := e.client.Publish(ctx, &apipb.PublishRequest{Channel: "hist:j", Data: notJSONBytes})
	noErr(t, "publish", err, nil)
	wantNotJSON(t, "publish", p.GetError(), "data")
	if !strings.Contains(p.GetError().GetMessage(), "b64data") {
		t.Errorf("publish: message %q does not point to b64data", p.GetError().GetMessage())
	}
	b, err := e.client.Broadcast(ctx, &apipb.BroadcastRequest{Channels: []string{"hist:j", "hist:k"}, Data: notJSONBytes})
	noErr(t, "broadcast", err, nil)
	wantNotJSON(t, "broadcast", b.GetError(), "data")
	s, err := e.client.Subscribe(ctx, &apipb.SubscribeRequest{User: "7", Channel: "plain:s", Data: notJSONBytes})
	noErr(t, "subscribe", err, nil)
	wantNotJSON(t, "subscribe data", s.GetError(), "data")
	s, err = e.client.Subscribe(ctx, &apipb.SubscribeRequest{User: "7", Channel: "plain:s", Info: notJSONBytes})
	noErr(t, "subscribe", err, nil)
	wantNotJSON(t, "subscribe info", s.GetError(), "info")
	r, err := e.client.Refresh(ctx, &apipb.RefreshRequest{User: "7", Info: notJSONBytes})
	noErr(t, "refresh", err, nil)
	wantNotJSON(t, "refresh info", r.GetError(), "info")
	rpc, err := e.client.RPC(ctx, &apipb.RPCRequest{Method: "echo", Params: notJSONBytes})
	noErr(t, "rpc", err, nil)
	wantNotJSON(t, "rpc params", rpc.GetError(), "params")

	// Nothing of the above reached the subscriber, which is still there.
	p, err = e.client.Publish(ctx, &apipb.PublishRequest{Channel: "hist:j", Data: []byte(`{"ok":true}`)})
	noErr(t, "publish JSON", err, p.GetError())
	pubs := sub.WaitPubs("hist:j", 1)
	if string(pubs[0].Data) != `{"ok":true}` {
		t.Fatalf("subscriber got %q", pubs[0].Data)
	}
	if ce := sub.Closed(); ce != nil {
		t.Fatalf("subscriber closed with %d %s", ce.Code, ce.Reason)
	}
	if got := len(sub.Pushes()); got != 1 {
		t.Errorf("subscriber got %d pushes, want the one publication", got)
	}
}

// TestNotJSONPayloadRefusedInBatch: in a batch only the commands with a
// payload that is not JSON are refused; the others run, in order.
func TestNotJSONPayloadRefusedInBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	sub := e.dial("8")
	sub.MustSubscribe("hist:bj")
	for _, parallel := range []bool{false, true} {
		r, err := e.client.Batch(e.ctx(), &apipb.BatchRequest{Parallel: parallel, Commands: []*apipb.Command{
			{Publish: &apipb.PublishRequest{Channel: "hist:bj", Data: notJSONBytes}},
			{Publish: &apipb.PublishRequest{Channel: "hist:bj", Data: []byte(`{"n":1}`)}},
			{Broadcast: &apipb.BroadcastRequest{Channels: []string{"hist:bj"}, Data: notJSONBytes}},
			{Subscribe: &apipb.SubscribeRequest{User: "8", Channel: "plain:bs", Data: notJSONBytes}},
			{Rpc: &apipb.RPCRequest{Method: "echo", Params: notJSONBytes}},
		}})
		if err != nil {
			t.Fatalf("parallel %v: %v", parallel, err)
		}
		rep := r.GetReplies()
		if len(rep) != 5 {
			t.Fatalf("parallel %v: %d replies", parallel, len(rep))
		}
		wantNotJSON(t, "batch publish", rep[0].GetError(), "data")
		if rep[1].GetPublish() == nil || rep[1].GetError() != nil {
			t.Errorf("parallel %v: JSON publish reply %v", parallel, rep[1])
		}
		wantNotJSON(t, "batch broadcast", rep[2].GetError(), "data")
		wantNotJSON(t, "batch subscribe", rep[3].GetError(), "data")
		wantNotJSON(t, "batch rpc", rep[4].GetError(), "params")
	}
	pubs := sub.WaitPubs("hist:bj", 2)
	for _, p := range pubs {
		if string(p.Data) != `{"n":1}` {
			t.Errorf("subscriber got %q", p.Data)
		}
	}
	if ce := sub.Closed(); ce != nil {
		t.Fatalf("subscriber closed with %d %s", ce.Code, ce.Reason)
	}
}

// TestNotJSONPayloadLogged: a refusal is one info line naming the method
// and the field, limited like every bad command of the API.
func TestNotJSONPayloadLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	p, err := e.client.Publish(e.ctx(), &apipb.PublishRequest{Channel: "hist:l", Data: notJSONBytes})
	noErr(t, "publish", err, nil)
	wantNotJSON(t, "publish", p.GetError(), "data")
	lines := e.logs.Find(slog.LevelInfo, "api bad command", map[string]string{"method": "publish"})
	if len(lines) != 1 || !strings.Contains(lines[0].Attr("error"), "data is not JSON") {
		t.Fatalf("log lines %+v, want one naming the field", lines)
	}
	if l := e.logs.Find(slog.LevelError, "", nil); len(l) != 0 {
		t.Errorf("error lines for a bad request: %+v", l)
	}
}

// TestBinaryPayloadInB64Data: binary payloads go through b64data, and a
// protobuf subscriber receives them byte for byte; JSON payloads in data
// reach JSON subscribers as they are.
func TestBinaryPayloadInB64Data(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	pb := e.dialProto("9", protocol.TypeProtobuf)
	pb.MustSubscribe("hist:bin")
	js := e.dial("10")
	js.MustSubscribe("hist:json")

	b64 := base64.StdEncoding.EncodeToString(notJSONBytes)
	p, err := e.client.Publish(e.ctx(), &apipb.PublishRequest{Channel: "hist:bin", B64Data: b64})
	noErr(t, "publish b64data", err, p.GetError())
	br, err := e.client.Broadcast(e.ctx(), &apipb.BroadcastRequest{Channels: []string{"hist:bin"}, B64Data: b64})
	noErr(t, "broadcast b64data", err, br.GetError())
	for _, got := range pb.WaitPubs("hist:bin", 2) {
		if !bytes.Equal(got.Data, notJSONBytes) {
			t.Errorf("protobuf subscriber got %x, want %x", got.Data, notJSONBytes)
		}
	}
	p, err = e.client.Publish(e.ctx(), &apipb.PublishRequest{Channel: "hist:json", Data: []byte(` [1, "two"] `)})
	noErr(t, "publish JSON", err, p.GetError())
	if got := js.WaitPubs("hist:json", 1); string(got[0].Data) != `[1, "two"]` && string(got[0].Data) != ` [1, "two"] ` {
		t.Errorf("JSON subscriber got %q", got[0].Data)
	}
}
