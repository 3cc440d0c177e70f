package proxy_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
	"github.com/gyrehq/gyre/server/unigrpc/unistreampb"
)

// streamBackend serves subscription streams: a one-way stream sends
// what the test puts on feed, a two-way one echoes each client
// publication back. It records every stream's request, metadata and end.
type streamBackend struct {
	proxypb.UnimplementedCentrifugoProxyServer
	feed chan []byte

	mu       sync.Mutex
	requests []*proxypb.SubscribeRequest
	auth     []string
	// traceparents are the streams' traceparent metadata.
	traceparents []string
	ended        []string // channels whose stream the server cancelled
	addr         string
}

func newStreamBackend(t *testing.T) *streamBackend {
	t.Helper()
	b := &streamBackend{feed: make(chan []byte, 16)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	proxypb.RegisterCentrifugoProxyServer(gs, b)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	b.addr = ln.Addr().String()
	return b
}

func (b *streamBackend) record(ctx context.Context, req *proxypb.SubscribeRequest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests = append(b.requests, req)
	md, _ := metadata.FromIncomingContext(ctx)
	b.auth = append(b.auth, strings.Join(md.Get("authorization"), ","))
	b.traceparents = append(b.traceparents, strings.Join(md.Get("traceparent"), ","))
}

func (b *streamBackend) end(ch string) {
	b.mu.Lock()
	b.ended = append(b.ended, ch)
	b.mu.Unlock()
}

func (b *streamBackend) accept(data string) *proxypb.StreamSubscribeResponse {
	return &proxypb.StreamSubscribeResponse{SubscribeResponse: &proxypb.SubscribeResponse{
		Result: &proxypb.SubscribeResult{Data: []byte(data)},
	}}
}

func (b *streamBackend) SubscribeUnidirectional(req *proxypb.SubscribeRequest, s grpc.ServerStreamingServer[proxypb.StreamSubscribeResponse]) error {
	b.record(s.Context(), req)
	if err := s.Send(b.accept(`{"stream":"uni"}`)); err != nil {
		return err
	}
	for {
		select {
		case data := <-b.feed:
			if err := s.Send(&proxypb.StreamSubscribeResponse{Publication: &proxypb.Publication{Data: data, Tags: map[string]string{"from": "stream"}}}); err != nil {
				return err
			}
		case <-s.Context().Done():
			b.end(req.Channel)
			return nil
		}
	}
}

func (b *streamBackend) SubscribeBidirectional(s grpc.BidiStreamingServer[proxypb.StreamSubscribeRequest, proxypb.StreamSubscribeResponse]) error {
	first, err := s.Recv()
	if err != nil {
		return err
	}
	req := first.GetSubscribeRequest()
	b.record(s.Context(), req)
	if err := s.Send(b.accept(`{"stream":"bidi"}`)); err != nil {
		return err
	}
	for {
		in, err := s.Recv()
		if err != nil {
			b.end(req.Channel)
			return nil
		}
		echo := append(append([]byte(`{"echo":`), in.GetPublication().GetData()...), '}')
		if err := s.Send(&proxypb.StreamSubscribeResponse{Publication: &proxypb.Publication{Data: echo}}); err != nil {
			return err
		}
	}
}

// TestSubscriptionStreams runs subscription streams through the server's
// configuration: a namespace on the default subscribe_stream proxy, one
// on a named bidirectional proxy, the client's Authorization header
// forwarded as metadata, and the streams cancelled when the client
// unsubscribes or leaves.
func TestSubscriptionStreams(t *testing.T) {
	b := newStreamBackend(t)
	c := config.Default()
	c.Client.Insecure = true
	c.Channel.Proxy.SubscribeStream = config.Proxy{Endpoint: "grpc://" + b.addr, Timeout: 2 * time.Second, HTTPHeaders: []string{"Authorization"}}
	c.Proxies = []config.NamedProxy{{Name: "echo", Proxy: config.Proxy{Endpoint: "grpc://" + b.addr, Timeout: 2 * time.Second}}}
	c.Channel.Namespaces = []config.Namespace{
		{Name: "uni", ChannelOptions: config.ChannelOptions{SubscribeStreamProxyEnabled: true, SubscribeStreamProxyName: "default"}},
		{Name: "bidi", ChannelOptions: config.ChannelOptions{SubscribeStreamProxyEnabled: true, SubscribeStreamProxyName: "echo", SubscribeStreamProxyBidirectional: true}},
	}
	g := startGyre(t, c)

	cl := wstest.Dial(t, g.url, protocol.TypeJSON, wstest.Header(map[string][]string{"Authorization": {"Bearer abc"}}))
	if r := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{}}); r.Error != nil {
		t.Fatalf("connect: %v", r.Error)
	}

	// One-way: the backend's first message answers the subscribe, the
	// next ones reach this subscriber in order.
	sr := cl.Subscribe(&protocol.SubscribeRequest{Channel: "uni:a", Data: []byte(`{"from":"client"}`)})
	if sr.Error != nil {
		t.Fatalf("subscribe uni:a: %v", sr.Error)
	}
	jsonEq(t, "uni subscribe data", sr.Subscribe.Data, `{"stream":"uni"}`)
	for _, d := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
		b.feed <- []byte(d)
	}
	pubs := cl.WaitPubs("uni:a", 3)
	for i, p := range pubs {
		jsonEq(t, "stream publication", p.Data, `{"n":`+string(rune('1'+i))+`}`)
		if p.Tags["from"] != "stream" {
			t.Errorf("publication tags = %v", p.Tags)
		}
	}
	// A one-way stream takes no publications.
	if r := cl.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "uni:a", Data: []byte(`{}`)}}); r.Error == nil || r.Error.Code != 108 {
		t.Errorf("publish into a one-way stream = %v, want 108", r.Error)
	}

	// Two-way, through a named proxy: the client's publication goes to
	// the backend, which answers on the stream.
	if r := cl.Subscribe(&protocol.SubscribeRequest{Channel: "bidi:b"}); r.Error != nil {
		t.Fatalf("subscribe bidi:b: %v", r.Error)
	}
	if r := cl.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "bidi:b", Data: []byte(`{"say":"hi"}`)}}); r.Error != nil {
		t.Fatalf("publish into bidi:b: %v", r.Error)
	}
	jsonEq(t, "echo", cl.WaitPubs("bidi:b", 1)[0].Data, `{"echo":{"say":"hi"}}`)

	// Another client, without a stream subscription, has nowhere to
	// publish into a stream namespace.
	other := wstest.Dial(t, g.url, protocol.TypeJSON)
	if r := other.Call(&protocol.Command{Connect: &protocol.ConnectRequest{}}); r.Error != nil {
		t.Fatalf("connect: %v", r.Error)
	}
	if r := other.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "bidi:b", Data: []byte(`{}`)}}); r.Error == nil || r.Error.Code != 108 {
		t.Errorf("publish without a stream = %v, want 108", r.Error)
	}

	b.mu.Lock()
	if len(b.requests) != 2 || b.requests[0].Channel != "uni:a" || string(b.requests[0].Data) != `{"from":"client"}` || b.requests[1].Channel != "bidi:b" {
		t.Errorf("stream requests = %v", b.requests)
	}
	if b.auth[0] != "Bearer abc" || b.auth[1] != "" {
		t.Errorf("authorization metadata = %q, want it on the proxy that forwards it only", b.auth)
	}
	b.mu.Unlock()

	// Unsubscribing ends the one-way stream, leaving ends the other.
	if r := cl.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: "uni:a"}}); r.Error != nil {
		t.Fatalf("unsubscribe: %v", r.Error)
	}
	waitEnded(t, b, "uni:a")
	cl.Close()
	waitEnded(t, b, "bidi:b")
}

func waitEnded(t *testing.T, b *streamBackend, ch string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b.mu.Lock()
		for _, e := range b.ended {
			if e == ch {
				b.mu.Unlock()
				return
			}
		}
		b.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the backend stream of %s was not cancelled", ch)
}

// connectBackend answers the gRPC connect proxy, recording the metadata
// of each call.
type connectBackend struct {
	proxypb.UnimplementedCentrifugoProxyServer
	mu   sync.Mutex
	seen []metadata.MD
	reqs []*proxypb.ConnectRequest
}

func (b *connectBackend) Connect(ctx context.Context, r *proxypb.ConnectRequest) (*proxypb.ConnectResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	b.mu.Lock()
	b.seen = append(b.seen, md)
	b.reqs = append(b.reqs, r)
	b.mu.Unlock()
	if len(md.Get("x-app-token")) == 0 {
		return &proxypb.ConnectResponse{Disconnect: &proxypb.Disconnect{Code: 4403, Reason: "no app token"}}, nil
	}
	return &proxypb.ConnectResponse{Result: &proxypb.ConnectResult{User: "u-" + md.Get("x-app-token")[0], Channels: []string{"feed"}}}, nil
}

// TestUniGRPCThroughConnectProxy: a uni_grpc consumer without a token is
// decided by the connect proxy, which gets the consumer's gRPC metadata
// named in grpc_metadata; a refusal ends the stream with the backend's
// disconnect.
func TestUniGRPCThroughConnectProxy(t *testing.T) {
	be := &connectBackend{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	proxypb.RegisterCentrifugoProxyServer(gs, be)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)

	c := config.Default()
	c.HTTPServer.Address, c.HTTPServer.Port = "127.0.0.1", 0
	c.UniGRPC = config.UniGRPC{Enabled: true, Address: "127.0.0.1", Port: 0}
	c.Client.Proxy.Connect = config.EnabledProxy{Enabled: true, Proxy: config.Proxy{
		Endpoint: "grpc://" + ln.Addr().String(), Timeout: 2 * time.Second, GRPCMetadata: []string{"x-app-token"},
	}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := server.New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	cc, err := grpc.NewClient(s.UniGRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	consume := func(md metadata.MD) grpc.ServerStreamingClient[unistreampb.Push] {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t.Cleanup(cancel)
		if md != nil {
			ctx = metadata.NewOutgoingContext(ctx, md)
		}
		st, err := unistreampb.NewCentrifugoUniStreamClient(cc).Consume(ctx, &unistreampb.ConnectRequest{Name: "uni-test"})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	st := consume(metadata.Pairs("x-app-token", "42", "x-other", "not forwarded"))
	p, err := st.Recv()
	if err != nil || p.Connect == nil {
		t.Fatalf("first push %v, %v; want connect", p, err)
	}
	if p.Connect.Subs["feed"] == nil {
		t.Errorf("connect push subs = %v, want feed from the proxy", p.Connect.Subs)
	}
	be.mu.Lock()
	md, req := be.seen[0], be.reqs[0]
	be.mu.Unlock()
	if got := md.Get("x-app-token"); len(got) != 1 || got[0] != "42" {
		t.Errorf("x-app-token forwarded = %q", got)
	}
	if got := md.Get("x-other"); len(got) != 0 {
		t.Errorf("x-other forwarded though not configured: %q", got)
	}
	if req.Transport != "uni_grpc" || req.Protocol != "protobuf" || req.Name != "uni-test" {
		t.Errorf("connect request transport %q protocol %q name %q", req.Transport, req.Protocol, req.Name)
	}

	refused := consume(nil)
	p, err = refused.Recv()
	if err != nil || p.Disconnect == nil || p.Disconnect.Code != 4403 {
		t.Fatalf("push %v, %v; want disconnect 4403 from the backend", p, err)
	}
}
