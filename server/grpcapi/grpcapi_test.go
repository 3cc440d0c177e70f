package grpcapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/grpcapi"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	info := &apipb.InfoRequest{}
	if _, err := e.client.Info(e.ctx(), info); err != nil {
		t.Fatalf("with the key: %v", err)
	}
	refused := map[string]context.Context{
		"no metadata":        t.Context(),
		"wrong key":          withKey(t.Context(), "not-the-key"),
		"key without scheme": metadata.AppendToOutgoingContext(t.Context(), "authorization", testKey),
		"bearer scheme":      metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testKey),
		"key as a prefix":    withKey(t.Context(), testKey+"x"),
	}
	for name, ctx := range refused {
		_, err := e.client.Info(ctx, info)
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: %v, want Unauthenticated", name, err)
		}
	}
	// A refused call runs nothing, and says so in the log.
	if got := e.called(); len(got) != 1 {
		t.Errorf("calls run: %v, want the one with the key", got)
	}
	lines := e.logs.Find(slog.LevelInfo, "grpc api call with a wrong or missing key",
		map[string]string{"method": "/centrifugal.centrifugo.api.CentrifugoApi/Info"})
	if len(lines) != len(refused) || lines[0].Attr("remote") == "" {
		t.Errorf("%d log lines for refused calls, want %d naming the remote: %v", len(lines), len(refused), lines)
	}
}

// TestFailureLogged: an internal error is answered with 100 and logged
// with its cause and method; a bad request is logged at info level.
func TestFailureLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	r, err := e.client.RPC(e.ctx(), &apipb.RPCRequest{Method: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "rpc crash", r.GetError(), 100)
	if r.GetError().GetMessage() != "internal server error" {
		t.Fatalf("message %q tells more than it should", r.GetError().GetMessage())
	}
	lines := e.logs.Find(slog.LevelError, "api method failed", map[string]string{"method": "rpc"})
	if len(lines) != 1 || !strings.Contains(lines[0].Attr("error"), "backend connection refused") {
		t.Fatalf("error lines %v", lines)
	}
	p, _ := e.client.Publish(e.ctx(), &apipb.PublishRequest{Data: []byte(`{}`)})
	wantErr(t, "publish without channel", p.GetError(), 107)
	if len(e.logs.Find(slog.LevelInfo, "api bad command", map[string]string{"method": "publish"})) != 1 {
		t.Fatal("no log line for the bad publish")
	}
}

// TestNoKey: with an empty key every call is accepted, as in Centrifugo.
func TestNoKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{})
	if _, err := e.client.Info(t.Context(), &apipb.InfoRequest{}); err != nil {
		t.Fatalf("without a key: %v", err)
	}
}

// TestMethods runs every method once as it should succeed and once as it
// should fail, with the code the HTTP API gives the same request.
func TestMethods(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	ctx := e.ctx()
	c := e.dial("42")
	c.MustSubscribe("pres:room")

	t.Run("publish", func(t *testing.T) {
		r, err := e.client.Publish(ctx, &apipb.PublishRequest{Channel: "hist:p", Data: []byte(`{"n":1}`)})
		noErr(t, "publish", err, r.GetError())
		if r.GetResult().GetOffset() != 1 || r.GetResult().GetEpoch() == "" {
			t.Fatalf("result %v, want offset 1 and an epoch", r.GetResult())
		}
		r, _ = e.client.Publish(ctx, &apipb.PublishRequest{Channel: "hist:p"})
		wantErr(t, "no data", r.GetError(), 107)
		r, _ = e.client.Publish(ctx, &apipb.PublishRequest{Channel: "nope:x", Data: []byte(`{}`)})
		wantErr(t, "unknown namespace", r.GetError(), 102)
		r, _ = e.client.Publish(ctx, &apipb.PublishRequest{Channel: "plain:b", B64Data: "%%%"})
		wantErr(t, "bad b64data", r.GetError(), 107)
		v, err := e.client.Publish(ctx, &apipb.PublishRequest{Channel: "hist:v", Data: []byte(`{}`), Version: 2, VersionEpoch: "e"})
		noErr(t, "publish with a version", err, v.GetError())
		stale, err := e.client.Publish(ctx, &apipb.PublishRequest{Channel: "hist:v", Data: []byte(`{}`), Version: 2, VersionEpoch: "e"})
		noErr(t, "publish of a stale version", err, stale.GetError())
		if stale.GetResult().GetOffset() != v.GetResult().GetOffset() {
			t.Fatalf("stale version: offset %d, want the top %d", stale.GetResult().GetOffset(), v.GetResult().GetOffset())
		}
		h, err := e.client.History(ctx, &apipb.HistoryRequest{Channel: "hist:v", Limit: -1})
		noErr(t, "history", err, h.GetError())
		if n := len(h.GetResult().GetPublications()); n != 1 {
			t.Fatalf("history has %d publications, want 1 (the stale one dropped)", n)
		}
	})
	t.Run("broadcast", func(t *testing.T) {
		r, err := e.client.Broadcast(ctx, &apipb.BroadcastRequest{Channels: []string{"hist:a", "nope:b", ""}, Data: []byte(`{}`)})
		noErr(t, "broadcast", err, r.GetError())
		res := r.GetResult().GetResponses()
		if len(res) != 3 || res[0].GetError() != nil || res[0].GetResult().GetOffset() != 1 {
			t.Fatalf("responses %v", res)
		}
		wantErr(t, "unknown namespace", res[1].GetError(), 102)
		wantErr(t, "empty channel", res[2].GetError(), 107)
		r, _ = e.client.Broadcast(ctx, &apipb.BroadcastRequest{Data: []byte(`{}`)})
		wantErr(t, "no channels", r.GetError(), 107)
	})
	t.Run("subscribe and unsubscribe", func(t *testing.T) {
		r, err := e.client.Subscribe(ctx, &apipb.SubscribeRequest{User: "42", Channel: "plain:srv"})
		noErr(t, "subscribe", err, r.GetError())
		c.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.GetChannel() == "plain:srv" && p.GetSubscribe() != nil })
		ur, err := e.client.Unsubscribe(ctx, &apipb.UnsubscribeRequest{User: "42", Channel: "plain:srv"})
		noErr(t, "unsubscribe", err, ur.GetError())
		c.WaitPush("unsubscribe push", func(p *protocol.Push) bool { return p.GetChannel() == "plain:srv" && p.GetUnsubscribe() != nil })
		ur, _ = e.client.Unsubscribe(ctx, &apipb.UnsubscribeRequest{User: "42"})
		wantErr(t, "unsubscribe without channel", ur.GetError(), 107)
		r, _ = e.client.Subscribe(ctx, &apipb.SubscribeRequest{User: "42"})
		wantErr(t, "subscribe without channel", r.GetError(), 107)
		r, _ = e.client.Subscribe(ctx, &apipb.SubscribeRequest{User: "42", Channel: "plain:x", B64Info: "%%"})
		wantErr(t, "subscribe with a bad b64info", r.GetError(), 107)
	})
	t.Run("subscribe with options", func(t *testing.T) {
		r, err := e.client.Subscribe(ctx, &apipb.SubscribeRequest{
			User: "42", Channel: "pres:opts", Data: []byte(`{"d":1}`), Info: []byte(`{"i":1}`),
			Override: &apipb.SubscribeOptionOverride{Presence: &apipb.BoolValue{Value: false}},
		})
		noErr(t, "subscribe", err, r.GetError())
		p := c.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.GetChannel() == "pres:opts" && p.GetSubscribe() != nil })
		if string(p.GetSubscribe().GetData()) != `{"d":1}` {
			t.Fatalf("subscribe push data %q", p.GetSubscribe().GetData())
		}
		pr, err := e.client.PresenceStats(ctx, &apipb.PresenceStatsRequest{Channel: "pres:opts"})
		noErr(t, "presence_stats", err, pr.GetError())
		if pr.GetResult().GetNumClients() != 0 {
			t.Fatalf("presence with the override off: %v", pr.GetResult())
		}
	})
	t.Run("presence", func(t *testing.T) {
		r, err := e.client.Presence(ctx, &apipb.PresenceRequest{Channel: "pres:room"})
		noErr(t, "presence", err, r.GetError())
		p := r.GetResult().GetPresence()
		if len(p) != 1 {
			t.Fatalf("presence %v, want one client", p)
		}
		for id, ci := range p {
			if ci.GetUser() != "42" || ci.GetClient() != id {
				t.Fatalf("presence %v", p)
			}
		}
		r, _ = e.client.Presence(ctx, &apipb.PresenceRequest{Channel: "plain:x"})
		wantErr(t, "presence off", r.GetError(), 108)
	})
	t.Run("presence_stats", func(t *testing.T) {
		r, err := e.client.PresenceStats(ctx, &apipb.PresenceStatsRequest{Channel: "pres:room"})
		noErr(t, "presence_stats", err, r.GetError())
		if r.GetResult().GetNumClients() != 1 || r.GetResult().GetNumUsers() != 1 {
			t.Fatalf("stats %v", r.GetResult())
		}
		r, _ = e.client.PresenceStats(ctx, &apipb.PresenceStatsRequest{})
		wantErr(t, "no channel", r.GetError(), 107)
	})
	t.Run("history and history_remove", func(t *testing.T) {
		for i := range 3 {
			r, err := e.client.Publish(ctx, &apipb.PublishRequest{Channel: "hist:h", Data: []byte(`{"i":` + string(rune('0'+i)) + `}`), Tags: map[string]string{"k": "v"}})
			noErr(t, "publish", err, r.GetError())
		}
		r, err := e.client.History(ctx, &apipb.HistoryRequest{Channel: "hist:h", Limit: -1})
		noErr(t, "history", err, r.GetError())
		pubs := r.GetResult().GetPublications()
		if len(pubs) != 3 || string(pubs[2].GetData()) != `{"i":2}` || pubs[2].GetOffset() != 3 || pubs[0].GetTags()["k"] != "v" {
			t.Fatalf("publications %v", pubs)
		}
		epoch := r.GetResult().GetEpoch()
		r, _ = e.client.History(ctx, &apipb.HistoryRequest{Channel: "hist:h", Limit: -1, Since: &apipb.StreamPosition{Offset: 1, Epoch: epoch}})
		if n := len(r.GetResult().GetPublications()); n != 2 {
			t.Fatalf("since offset 1: %d publications, want 2", n)
		}
		r, _ = e.client.History(ctx, &apipb.HistoryRequest{Channel: "hist:h", Limit: -1, Since: &apipb.StreamPosition{Offset: 1, Epoch: "other"}})
		wantErr(t, "wrong epoch", r.GetError(), 112)
		r, _ = e.client.History(ctx, &apipb.HistoryRequest{Channel: "plain:h"})
		wantErr(t, "history off", r.GetError(), 108)
		rr, err := e.client.HistoryRemove(ctx, &apipb.HistoryRemoveRequest{Channel: "hist:h"})
		noErr(t, "history_remove", err, rr.GetError())
		r, _ = e.client.History(ctx, &apipb.HistoryRequest{Channel: "hist:h", Limit: -1})
		if n := len(r.GetResult().GetPublications()); n != 0 {
			t.Fatalf("after history_remove: %d publications", n)
		}
		rr, _ = e.client.HistoryRemove(ctx, &apipb.HistoryRemoveRequest{})
		wantErr(t, "history_remove without channel", rr.GetError(), 107)
	})
	t.Run("channels", func(t *testing.T) {
		r, err := e.client.Channels(ctx, &apipb.ChannelsRequest{Pattern: "pres:*"})
		noErr(t, "channels", err, r.GetError())
		if r.GetResult().GetChannels()["pres:room"].GetNumClients() != 1 {
			t.Fatalf("channels %v", r.GetResult().GetChannels())
		}
		r, _ = e.client.Channels(ctx, &apipb.ChannelsRequest{Pattern: "["})
		wantErr(t, "bad pattern", r.GetError(), 107)
	})
	t.Run("info", func(t *testing.T) {
		r, err := e.client.Info(ctx, &apipb.InfoRequest{})
		noErr(t, "info", err, r.GetError())
		nodes := r.GetResult().GetNodes()
		if len(nodes) != 1 || nodes[0].GetUid() == "" || nodes[0].GetNumClients() != 1 {
			t.Fatalf("nodes %v", nodes)
		}
		if m := nodes[0].GetMetrics(); m.GetInterval() != 5 || m.GetItems()["gyre_memory_bytes"] <= 0 || m.GetItems()["gyre_broker_healthy"] != 1 {
			t.Fatalf("node metrics %v", m)
		}
	})
	t.Run("rpc", func(t *testing.T) {
		r, err := e.client.RPC(ctx, &apipb.RPCRequest{Method: "echo", Params: []byte(`{"q":1}`)})
		noErr(t, "rpc", err, r.GetError())
		if string(r.GetResult().GetData()) != `{"q":1}` {
			t.Fatalf("data %q", r.GetResult().GetData())
		}
		r, _ = e.client.RPC(ctx, &apipb.RPCRequest{Method: "fail"})
		wantErr(t, "application error", r.GetError(), 1001)
		if r.GetError().GetMessage() != "insufficient funds" {
			t.Fatalf("message %q", r.GetError().GetMessage())
		}
		r, _ = e.client.RPC(ctx, &apipb.RPCRequest{Method: "crash"})
		wantErr(t, "hook error", r.GetError(), 100)
		r, _ = e.client.RPC(ctx, &apipb.RPCRequest{Method: "unknown"})
		wantErr(t, "unknown method", r.GetError(), 104)
		r, _ = e.client.RPC(ctx, &apipb.RPCRequest{})
		wantErr(t, "no method", r.GetError(), 107)
	})
	t.Run("refresh and disconnect", func(t *testing.T) {
		rr, err := e.client.Refresh(ctx, &apipb.RefreshRequest{User: "42", ExpireAt: 4102444800})
		noErr(t, "refresh", err, rr.GetError())
		dr, _ := e.client.Disconnect(ctx, &apipb.DisconnectRequest{User: "42", Disconnect: &apipb.Disconnect{Code: 10, Reason: "x"}})
		wantErr(t, "disconnect code out of range", dr.GetError(), 107)
		dr, err = e.client.Disconnect(ctx, &apipb.DisconnectRequest{User: "42", Disconnect: &apipb.Disconnect{Code: 4501, Reason: "bye"}})
		noErr(t, "disconnect", err, dr.GetError())
		if ce := c.WaitClose(); ce.Code != 4501 || ce.Reason != "bye" {
			t.Fatalf("closed with %d %q, want 4501 bye", ce.Code, ce.Reason)
		}
	})
}

// TestPublishDelivered: a publication made over gRPC reaches a WebSocket
// subscriber and is in history, on every engine.
func TestPublishDelivered(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, eng enginetest.Engine) {
		e := newEnvOn(t, eng, grpcapi.Config{Key: testKey})
		c := e.dial("7")
		c.MustSubscribe("hist:live")
		r, err := e.client.Publish(e.ctx(), &apipb.PublishRequest{Channel: "hist:live", Data: []byte(`{"text":"over grpc"}`), Tags: map[string]string{"via": "grpc"}})
		noErr(t, "publish", err, r.GetError())
		pubs := c.WaitPubs("hist:live", 1)
		if string(pubs[0].Data) != `{"text":"over grpc"}` || pubs[0].Offset != 1 || pubs[0].Tags["via"] != "grpc" {
			t.Fatalf("delivered %+v", pubs[0])
		}
		h, err := e.client.History(e.ctx(), &apipb.HistoryRequest{Channel: "hist:live", Limit: 10})
		noErr(t, "history", err, h.GetError())
		got := h.GetResult().GetPublications()
		if len(got) != 1 || string(got[0].GetData()) != `{"text":"over grpc"}` || h.GetResult().GetEpoch() != r.GetResult().GetEpoch() {
			t.Fatalf("history %v, publish result %v", h.GetResult(), r.GetResult())
		}
	})
}

// TestBatch: a batch answers each command in order, errors included, in
// sequence and in parallel, on every engine; a sequential batch keeps the
// order of its publications.
func TestBatch(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, eng enginetest.Engine) {
		e := newEnvOn(t, eng, grpcapi.Config{Key: testKey})
		c := e.dial("9")
		c.MustSubscribe("hist:b")
		for _, parallel := range []bool{false, true} {
			req := &apipb.BatchRequest{Parallel: parallel, Commands: []*apipb.Command{
				{Publish: &apipb.PublishRequest{Channel: "hist:b", Data: []byte(`{"n":1}`)}},
				{Publish: &apipb.PublishRequest{Channel: "hist:b"}},
				{Broadcast: &apipb.BroadcastRequest{Channels: []string{"hist:b", "hist:c"}, Data: []byte(`{"n":2}`)}},
				{PresenceStats: &apipb.PresenceStatsRequest{Channel: "plain:x"}},
				{Rpc: &apipb.RPCRequest{Method: "echo", Params: []byte(`"p"`)}},
				{},
				{Info: &apipb.InfoRequest{}},
				{Subscribe: &apipb.SubscribeRequest{User: "nobody", Channel: "plain:s"}},
			}}
			r, err := e.client.Batch(e.ctx(), req)
			if err != nil {
				t.Fatalf("parallel %v: %v", parallel, err)
			}
			rep := r.GetReplies()
			if len(rep) != len(req.Commands) {
				t.Fatalf("parallel %v: %d replies", parallel, len(rep))
			}
			if rep[0].GetPublish() == nil || rep[0].GetError() != nil {
				t.Errorf("parallel %v: publish reply %v", parallel, rep[0])
			}
			wantErr(t, "publish without data", rep[1].GetError(), 107)
			if b := rep[2].GetBroadcast().GetResponses(); len(b) != 2 || b[0].GetResult() == nil || b[1].GetResult() == nil {
				t.Errorf("parallel %v: broadcast reply %v", parallel, rep[2])
			}
			wantErr(t, "presence_stats without presence", rep[3].GetError(), 108)
			if string(rep[4].GetRpc().GetData()) != `"p"` {
				t.Errorf("parallel %v: rpc reply %v", parallel, rep[4])
			}
			wantErr(t, "empty command", rep[5].GetError(), 104)
			if len(rep[6].GetInfo().GetNodes()) != 1 {
				t.Errorf("parallel %v: info reply %v", parallel, rep[6])
			}
			if rep[7].GetSubscribe() == nil {
				t.Errorf("parallel %v: subscribe reply %v", parallel, rep[7])
			}
			if !parallel {
				// In order: the publish, then the broadcast.
				pubs := c.WaitPubs("hist:b", 2)
				if string(pubs[0].Data) != `{"n":1}` || string(pubs[1].Data) != `{"n":2}` || pubs[1].Offset != pubs[0].Offset+1 {
					t.Fatalf("delivered %v", pubs)
				}
			}
		}
	})
}

// TestBatchTooLarge: a batch over the executor's limit is refused as a
// whole with InvalidArgument.
func TestBatchTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	cmds := make([]*apipb.Command, 1001)
	for i := range cmds {
		cmds[i] = &apipb.Command{Info: &apipb.InfoRequest{}}
	}
	_, err := e.client.Batch(e.ctx(), &apipb.BatchRequest{Commands: cmds})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "too many commands") {
		t.Fatalf("%v, want InvalidArgument, too many commands", err)
	}
}

// TestMaxReceiveMessageSize: a request over the limit is refused by gRPC
// with ResourceExhausted; one under it passes.
func TestMaxReceiveMessageSize(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey, MaxReceiveMessageSize: 1024})
	small := &apipb.PublishRequest{Channel: "plain:s", Data: []byte(`"` + strings.Repeat("a", 500) + `"`)}
	r, err := e.client.Publish(e.ctx(), small)
	noErr(t, "small publish", err, r.GetError())
	big := &apipb.PublishRequest{Channel: "plain:s", Data: []byte(`"` + strings.Repeat("a", 2000) + `"`)}
	if _, err := e.client.Publish(e.ctx(), big); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("big publish: %v, want ResourceExhausted", err)
	}
}

// TestTransportErrorMode: with the mode on (config or metadata) a
// method's error is a gRPC status carrying the API error in its details.
func TestTransportErrorMode(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, client apipb.CentrifugoApiClient, ctx context.Context) {
		t.Helper()
		_, err := client.Publish(ctx, &apipb.PublishRequest{Channel: "nope:x", Data: []byte(`{}`)})
		st := status.Convert(err)
		if st.Code() != codes.NotFound || st.Message() != "unknown channel" {
			t.Fatalf("status %v, want NotFound unknown channel", st)
		}
		details := st.Details()
		if len(details) != 1 {
			t.Fatalf("details %v", details)
		}
		if ae, ok := details[0].(*apipb.Error); !ok || ae.GetCode() != 102 {
			t.Fatalf("detail %v, want the API error 102", details[0])
		}
		_, err = client.History(ctx, &apipb.HistoryRequest{Channel: "plain:x"})
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("history off: %v, want InvalidArgument", err)
		}
		// Success is a response as ever.
		r, err := client.Publish(ctx, &apipb.PublishRequest{Channel: "plain:x", Data: []byte(`{}`)})
		noErr(t, "publish", err, r.GetError())
	}
	t.Run("config", func(t *testing.T) {
		e := newEnv(t, grpcapi.Config{Key: testKey, TransportErrorMode: true})
		check(t, e.client, e.ctx())
	})
	t.Run("metadata", func(t *testing.T) {
		e := newEnv(t, grpcapi.Config{Key: testKey})
		check(t, e.client, metadata.AppendToOutgoingContext(e.ctx(), "x-centrifugo-error-mode", "transport"))
		// Without it the error is in the response.
		r, err := e.client.Publish(e.ctx(), &apipb.PublishRequest{Channel: "nope:x", Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		wantErr(t, "default mode", r.GetError(), 102)
	})
}

// TestReflection: with reflection on, a reflection client lists the API's
// service (without the key, as Centrifugo answers it); off, the
// reflection service is not there.
func TestReflection(t *testing.T) {
	t.Parallel()
	list := func(t *testing.T, conn *grpc.ClientConn) ([]string, error) {
		t.Helper()
		stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
		if err != nil {
			return nil, err
		}
		// A stream the server already ended fails Send with io.EOF; its
		// status comes from Recv.
		if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		resp, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		var names []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			names = append(names, s.GetName())
		}
		return names, nil
	}
	on := newEnv(t, grpcapi.Config{Key: testKey, Reflection: true})
	names, err := list(t, on.conn)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "centrifugal.centrifugo.api.CentrifugoApi") {
		t.Fatalf("services %v", names)
	}
	off := newEnv(t, grpcapi.Config{Key: testKey})
	if _, err := list(t, off.conn); status.Code(err) != codes.Unimplemented {
		t.Fatalf("reflection off: %v, want Unimplemented", err)
	}
}

// TestOnCall: every call of a method is told, with its error code.
func TestOnCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	_, _ = e.client.Publish(e.ctx(), &apipb.PublishRequest{Channel: "plain:x", Data: []byte(`{}`)})
	_, _ = e.client.History(e.ctx(), &apipb.HistoryRequest{Channel: "plain:x"})
	_, _ = e.client.Batch(e.ctx(), &apipb.BatchRequest{Commands: []*apipb.Command{{Info: &apipb.InfoRequest{}}}})
	want := []call{{"publish", 0}, {"history", 108}, {"batch", 0}}
	if got := e.called(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}

// TestBinaryPayload: a binary payload published with b64data comes back
// from history byte for byte (which the HTTP API would base64).
func TestBinaryPayload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, grpcapi.Config{Key: testKey})
	bin := []byte{0xff, 0x00, 0x10}
	r, err := e.client.Publish(e.ctx(), &apipb.PublishRequest{Channel: "hist:bin", B64Data: base64.StdEncoding.EncodeToString(bin)})
	noErr(t, "publish", err, r.GetError())
	h, err := e.client.History(e.ctx(), &apipb.HistoryRequest{Channel: "hist:bin", Limit: 1})
	noErr(t, "history", err, h.GetError())
	if got := h.GetResult().GetPublications(); len(got) != 1 || !bytes.Equal(got[0].GetData(), bin) {
		t.Fatalf("history %v", got)
	}
	var v any
	if json.Unmarshal(bin, &v) == nil {
		t.Fatal("the payload was meant not to be JSON")
	}
}
