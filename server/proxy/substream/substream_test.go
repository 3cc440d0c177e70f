package substream_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
	"github.com/gyrehq/gyre/server/proxy/substream"
	"github.com/gyrehq/gyre/token"
)

const pubCount = 100

// backend is a gRPC CentrifugoProxy server whose stream handlers behave
// as the channel's name (after the namespace) says. It reports each
// stream's end, seen from the backend, on ended.
type backend struct {
	proxypb.UnimplementedCentrifugoProxyServer
	ended chan string // channel names whose stream context ended
	// opened receives a value when a "silent" stream starts waiting.
	opened chan struct{}
}

func numbered(i int) []byte { return []byte(`{"n":` + strconv.Itoa(i) + `}`) }

// behaviour is the part of a channel name after the namespace.
func behaviour(channel string) string {
	_, b, _ := strings.Cut(channel, ":")
	b, _, _ = strings.Cut(b, ".") // "ordered.2" behaves as "ordered"
	return b
}

func (b *backend) SubscribeUnidirectional(req *proxypb.SubscribeRequest, stream proxypb.CentrifugoProxy_SubscribeUnidirectionalServer) error {
	ctx := stream.Context()
	defer func() { b.ended <- req.Channel }()
	accept := func(data []byte) error {
		return stream.Send(&proxypb.StreamSubscribeResponse{SubscribeResponse: &proxypb.SubscribeResponse{Result: &proxypb.SubscribeResult{Data: data}}})
	}
	pubs := func(n int) error {
		for i := range n {
			pub := &proxypb.Publication{Data: numbered(i), Tags: map[string]string{"i": strconv.Itoa(i)}}
			if err := stream.Send(&proxypb.StreamSubscribeResponse{Publication: pub}); err != nil {
				return err
			}
		}
		return nil
	}
	switch behaviour(req.Channel) {
	case "ordered":
		// The answer tells what the backend was sent.
		md, _ := metadata.FromIncomingContext(ctx)
		sent := req.Data
		if len(sent) == 0 {
			sent = []byte("null")
		}
		data := fmt.Sprintf(`{"user":%q,"data":%s,"meta":%q}`, req.User, sent, md.Get("x-test"))
		if err := accept([]byte(data)); err != nil {
			return err
		}
		if err := pubs(pubCount); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	case "finish":
		if err := accept(nil); err != nil {
			return err
		}
		if err := pubs(2); err != nil {
			return err
		}
		return nil // a clean end: io.EOF on Centrifugo's side
	case "break":
		if err := accept(nil); err != nil {
			return err
		}
		if err := pubs(1); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "upstream gone")
	case "refuse":
		return stream.Send(&proxypb.StreamSubscribeResponse{SubscribeResponse: &proxypb.SubscribeResponse{Error: &proxypb.Error{Code: 1403, Message: "not yours"}}})
	case "disconnect":
		return stream.Send(&proxypb.StreamSubscribeResponse{SubscribeResponse: &proxypb.SubscribeResponse{Disconnect: &proxypb.Disconnect{Code: 4501, Reason: "go away"}}})
	case "fail":
		return status.Error(codes.Internal, "backend failure")
	case "no-response":
		return stream.Send(&proxypb.StreamSubscribeResponse{Publication: &proxypb.Publication{Data: []byte(`{}`)}})
	case "silent":
		b.opened <- struct{}{}
		<-ctx.Done()
		return nil
	}
	return status.Error(codes.InvalidArgument, "unknown behaviour "+req.Channel)
}

// SubscribeBidirectional answers the subscribe, then echoes every
// publication of the client back with a tag, until the client's
// publication says "bye", which ends the stream.
func (b *backend) SubscribeBidirectional(stream proxypb.CentrifugoProxy_SubscribeBidirectionalServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	req := first.GetSubscribeRequest()
	if req == nil {
		return status.Error(codes.InvalidArgument, "first request without subscribe_request")
	}
	defer func() { b.ended <- req.Channel }()
	if err := stream.Send(&proxypb.StreamSubscribeResponse{SubscribeResponse: &proxypb.SubscribeResponse{}}); err != nil {
		return err
	}
	if behaviour(req.Channel) == "deaf" {
		// Reads nothing more: the client's publications pile up in flow
		// control until the sender gives up.
		<-stream.Context().Done()
		return nil
	}
	for {
		in, err := stream.Recv()
		if err != nil {
			return err
		}
		if in.GetSubscribeRequest() != nil || in.GetPublication() == nil {
			return status.Error(codes.InvalidArgument, "later request without publication")
		}
		if string(in.Publication.Data) == `"bye"` {
			return nil
		}
		out := &proxypb.Publication{Data: in.Publication.Data, Tags: map[string]string{"echo": req.User}}
		if err := stream.Send(&proxypb.StreamSubscribeResponse{Publication: out}); err != nil {
			return err
		}
	}
}

// env is a node whose namespaces "uni" (unidirectional), "bidi"
// (bidirectional), "slow" (unidirectional, with a short first-message
// timeout) and "patient" (unidirectional, with a long one) stream from the backend, and the backend itself.
type env struct {
	node    *gyre.Node
	url     string
	backend *backend
	logs    *logtest.Recorder
}

func newEnv(t *testing.T) *env {
	t.Helper()
	be := &backend{ended: make(chan string, 100), opened: make(chan struct{}, 10)}
	logs := &logtest.Recorder{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	proxypb.RegisterCentrifugoProxyServer(srv, be)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	proxy, err := substream.New(substream.Config{Name: "default", Conn: conn, Timeout: 10 * time.Second, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	// Only the test of a backend that never answers waits for this one.
	slow, err := substream.New(substream.Config{Name: "slow", Conn: conn, Timeout: 200 * time.Millisecond, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	patient, err := substream.New(substream.Config{Name: "patient", Conn: conn, Timeout: time.Minute, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}

	n, err := gyre.NewNode(gyre.Config{
		Token: token.Config{HMACSecretKey: "secret"},
		Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{
			{Name: "uni"}, {Name: "bidi"}, {Name: "slow"}, {Name: "patient"}, {Name: "slowbidi"},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	n.OnSubscribe(func(ctx context.Context, c *gyre.Client, e gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
		call := substream.Call{
			Request: &proxypb.SubscribeRequest{
				Client: c.ID(), Transport: c.Transport().Name(), Protocol: c.Transport().Protocol().String(), Encoding: "json",
				User: c.UserID(), Channel: e.Channel, Token: e.Token, Data: e.Data,
			},
			Bidirectional: strings.HasPrefix(e.Channel, "bidi:") || strings.HasPrefix(e.Channel, "slowbidi:"),
			Metadata:      metadata.Pairs("x-test", "per-call"),
			Done:          c.Done(),
		}
		p := proxy
		switch {
		case strings.HasPrefix(e.Channel, "slow:"), strings.HasPrefix(e.Channel, "slowbidi:"):
			p = slow
		case strings.HasPrefix(e.Channel, "patient:"):
			p = patient
		}
		return p.Subscribe(ctx, call, convert)
	})
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", gyre.NewWebsocketHandler(n, gyre.WebsocketConfig{}))
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		hs.Close()
	})
	return &env{node: n, url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/connection/websocket", backend: be, logs: logs}
}

// convert is the smallest subscribe-response conversion: error,
// disconnect, or the result's data and info.
func convert(r *proxypb.SubscribeResponse) (gyre.SubscribeReply, error) {
	if e := r.GetError(); e != nil {
		return gyre.SubscribeReply{}, &gyre.Error{Code: e.Code, Message: e.Message, Temporary: e.Temporary}
	}
	if d := r.GetDisconnect(); d != nil {
		return gyre.SubscribeReply{}, &gyre.Disconnect{Code: d.Code, Reason: d.Reason}
	}
	return gyre.SubscribeReply{Data: r.GetResult().GetData(), ChanInfo: r.GetResult().GetInfo()}, nil
}

func (e *env) client(t *testing.T, proto protocol.Type, user string) *wstest.Client {
	t.Helper()
	c := wstest.Dial(t, e.url, proto)
	tok := signHS256(t, "secret", user)
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}})
	if r.Error != nil {
		t.Fatalf("connect: %+v", r.Error)
	}
	return c
}

// waitEnded waits until the backend saw the stream of channel end.
func (e *env) waitEnded(t *testing.T, channel string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ch := <-e.backend.ended:
			if ch == channel {
				return
			}
		case <-deadline:
			t.Fatalf("the backend's stream of %s did not end", channel)
		}
	}
}

// TestStreamPublicationsInOrder: the backend's answer becomes the
// subscribe result (it saw the user, the client's data and the call's
// metadata), its publications reach the client in order with their tags
// and no offset, on JSON and protobuf; unsubscribing cancels the
// backend's stream.
func TestStreamPublicationsInOrder(t *testing.T) {
	e := newEnv(t)
	for _, proto := range []protocol.Type{protocol.TypeJSON, protocol.TypeProtobuf} {
		t.Run(proto.String(), func(t *testing.T) {
			ch := "uni:ordered." + proto.String()
			c := e.client(t, proto, "42")
			r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch, Data: []byte(`{"q":"x"}`)})
			if r.Error != nil {
				t.Fatalf("subscribe: %+v", r.Error)
			}
			want := `{"user":"42","data":{"q":"x"},"meta":["per-call"]}`
			if string(r.Subscribe.Data) != want {
				t.Fatalf("subscribe data %s, want %s", r.Subscribe.Data, want)
			}
			pubs := c.WaitPubs(ch, pubCount)
			for i, p := range pubs {
				if string(p.Data) != string(numbered(i)) || p.Tags["i"] != strconv.Itoa(i) || p.Offset != 0 {
					t.Fatalf("publication %d: %s tags %v offset %d", i, p.Data, p.Tags, p.Offset)
				}
			}
			c.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: ch}})
			e.waitEnded(t, ch)
		})
	}
}

// TestStreamBidirectional: the client's publications go to the backend
// on the stream (the backend's echo proves it, in order) and the publish
// is answered; the backend ending the stream cleanly unsubscribes the
// client with 2000.
func TestStreamBidirectional(t *testing.T) {
	e := newEnv(t)
	const ch = "bidi:echo"
	c := e.client(t, protocol.TypeJSON, "7")
	c.MustSubscribe(ch)
	for i := range 5 {
		r := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: ch, Data: numbered(i)}})
		if r.Error != nil {
			t.Fatalf("publish %d: %+v", i, r.Error)
		}
	}
	pubs := c.WaitPubs(ch, 5)
	for i, p := range pubs {
		if string(p.Data) != string(numbered(i)) || p.Tags["echo"] != "7" {
			t.Fatalf("echo %d: %s tags %v", i, p.Data, p.Tags)
		}
	}
	c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: ch, Data: []byte(`"bye"`)}})
	p := c.WaitPush("unsubscribe push", func(p *protocol.Push) bool { return p.Unsubscribe != nil })
	if p.Channel != ch || p.Unsubscribe.Code != 2000 {
		t.Fatalf("unsubscribe push %s %+v, want 2000", p.Channel, p.Unsubscribe)
	}
	// The subscription is gone: a publication into the channel is no
	// longer the stream's (the node has no publish rule for it).
	r := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: ch, Data: []byte(`{}`)}})
	if r.Error == nil {
		t.Fatal("publish after the stream ended was accepted")
	}
}

// TestStreamBackendStopsReading: a backend that stops reading the
// client's publications cannot hold the client's commands for longer than
// the proxy's timeout: the publish that waits gets error 100, the stream
// is cancelled and the client unsubscribed with 2500.
func TestStreamBackendStopsReading(t *testing.T) {
	e := newEnv(t)
	const ch = "slowbidi:deaf"
	c := e.client(t, protocol.TypeProtobuf, "1")
	c.MustSubscribe(ch)
	big := []byte(`"` + strings.Repeat("x", 60000) + `"`)
	var refused *protocol.Error
	for i := 0; i < 2000 && refused == nil; i++ {
		r := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: ch, Data: big}})
		refused = r.Error
	}
	if refused == nil || refused.Code != 100 {
		t.Fatalf("publications into a backend that reads nothing: last error %+v, want 100", refused)
	}
	p := c.WaitPush("unsubscribe push", func(p *protocol.Push) bool { return p.Unsubscribe != nil })
	if p.Unsubscribe.Code != 2500 {
		t.Fatalf("unsubscribe %+v, want 2500", p.Unsubscribe)
	}
	e.waitEnded(t, ch)
	if len(e.logs.Find(slog.LevelWarn, "", map[string]string{"proxy": "slow", "channel": ch})) == 0 {
		t.Error("no warning naming the proxy and channel")
	}
}

// TestStreamEndedByBackend: a backend that finishes its stream
// unsubscribes the client with 2000 "server unsubscribe" after the
// publications it sent; one whose stream breaks, with 2500 "insufficient
// state", which makes the client subscribe again.
func TestStreamEndedByBackend(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, protocol.TypeProtobuf, "1")
	for _, tt := range []struct {
		ch     string
		pubs   int
		code   uint32
		reason string
	}{
		{"uni:finish", 2, 2000, "server unsubscribe"},
		{"uni:break", 1, 2500, "insufficient state"},
	} {
		t.Run(tt.ch, func(t *testing.T) {
			c.MustSubscribe(tt.ch)
			p := c.WaitPush("unsubscribe push", func(p *protocol.Push) bool { return p.Unsubscribe != nil && p.Channel == tt.ch })
			if p.Unsubscribe.Code != tt.code || p.Unsubscribe.Reason != tt.reason {
				t.Fatalf("unsubscribe %+v, want %d %q", p.Unsubscribe, tt.code, tt.reason)
			}
			// Everything sent before the end arrived before the push.
			var before int
			for _, p := range c.Pushes() {
				if p.Channel != tt.ch {
					continue
				}
				if p.Unsubscribe != nil {
					break
				}
				before++
			}
			if before != tt.pubs {
				t.Fatalf("%d publications before the unsubscribe push, want %d", before, tt.pubs)
			}
		})
	}
}

// TestStreamSubscribeRefused: every way the backend's first message (or
// its absence) refuses a subscribe reaches the client with the right
// code, and the connection stays unless the backend disconnected it.
func TestStreamSubscribeRefused(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, protocol.TypeJSON, "1")
	for _, tt := range []struct {
		ch   string
		code uint32
		log  string // the error logged, "" for the backend's own refusal
	}{
		{"uni:refuse", 1403, ""},
		{"uni:fail", 100, "subscription stream: backend call failed"},
		{"uni:no-response", 100, "subscription stream: the backend's first message has no subscribe_response"},
		{"slow:silent", 100, "subscription stream: no first message from the backend in time"},
		{"uni:unknown-thing", 100, "subscription stream: backend call failed"},
	} {
		t.Run(tt.ch, func(t *testing.T) {
			r := c.Subscribe(&protocol.SubscribeRequest{Channel: tt.ch})
			if r.Error == nil || r.Error.Code != tt.code {
				t.Fatalf("subscribe: %+v, want error %d", r, tt.code)
			}
			proxy := "default"
			if strings.HasPrefix(tt.ch, "slow:") {
				proxy = "slow"
			}
			if tt.log != "" && len(e.logs.Find(slog.LevelError, tt.log, map[string]string{"proxy": proxy, "channel": tt.ch})) != 1 {
				t.Errorf("no log line %q naming proxy %s and channel %s", tt.log, proxy, tt.ch)
			}
			if behaviour(tt.ch) == "silent" {
				e.waitEnded(t, tt.ch) // the backend's stream was cancelled
			}
		})
	}

	r, closed := c.TryCall(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "uni:disconnect"}})
	if r != nil || closed == nil || closed.Code != 4501 || closed.Reason != "go away" {
		t.Fatalf("disconnect reply: reply %+v close %+v, want close 4501", r, closed)
	}
}

// TestStreamCancelledOnDisconnect: a client that goes away ends its
// stream on the backend.
func TestStreamCancelledOnDisconnect(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, protocol.TypeJSON, "1")
	const ch = "uni:ordered.gone"
	c.MustSubscribe(ch)
	c.WaitPubs(ch, 1)
	c.Close()
	e.waitEnded(t, ch)
}

// TestStreamClientGoneWhileWaiting: a client disconnected by the server
// while the backend has not answered yet ends the backend's stream
// without waiting for the timeout (a minute here, past the test's own
// wait limit).
func TestStreamClientGoneWhileWaiting(t *testing.T) {
	e := newEnv(t)
	c := e.client(t, protocol.TypeJSON, "gone")
	const ch = "patient:silent"
	c.Send(&protocol.Command{Id: 10, Subscribe: &protocol.SubscribeRequest{Channel: ch}})
	select {
	case <-e.backend.opened:
	case <-time.After(10 * time.Second):
		t.Fatal("the backend's stream did not open")
	}
	if err := e.node.Disconnect("gone", gyre.DisconnectForceNoReconnect, gyre.ClientFilter{}, nil); err != nil {
		t.Fatal(err)
	}
	e.waitEnded(t, ch)
	if ce := c.WaitClose(); ce.Code != 3503 {
		t.Fatalf("close %d %s, want 3503", ce.Code, ce.Reason)
	}
}

// TestNewConfig: a proxy needs a connection and a positive timeout.
func TestNewConfig(t *testing.T) {
	conn, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, cfg := range []substream.Config{{Name: "x", Timeout: time.Second}, {Name: "x", Conn: conn}} {
		if _, err := substream.New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

func signHS256(t *testing.T, secret, user string) string {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(secret), map[string]any{"sub": user})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
