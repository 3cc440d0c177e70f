package proxy_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
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
	ended    []string // channels whose stream the server cancelled
	addr     string
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
