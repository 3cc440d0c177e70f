package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
	"github.com/gyrehq/gyre/server/proxy/substream"
	"github.com/gyrehq/gyre/token"
)

// startBackend serves the backend on a free port and returns a client
// connection to it.
func startBackend(t *testing.T) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer()
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestTicker calls the backend as Gyre does: the first message accepts
// (or refuses) the subscribe, then come count ticks and a clean end.
func TestTicker(t *testing.T) {
	client := proxypb.NewCentrifugoProxyClient(startBackend(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	stream, err := client.SubscribeUnidirectional(ctx, &proxypb.SubscribeRequest{User: "1", Channel: "ticks:a", Data: []byte(`{"interval_ms":1,"count":3}`)})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil || first.GetSubscribeResponse().GetResult() == nil {
		t.Fatalf("first message %v, %v: want an accepting subscribe_response", first, err)
	}
	for n := 1; n <= 3; n++ {
		msg, err := stream.Recv()
		if err != nil || !strings.HasPrefix(string(msg.GetPublication().GetData()), `{"tick":`) {
			t.Fatalf("tick %d: %v, %v", n, msg, err)
		}
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last tick: %v, want the end of the stream", err)
	}

	anon, err := client.SubscribeUnidirectional(ctx, &proxypb.SubscribeRequest{Channel: "ticks:a"})
	if err != nil {
		t.Fatal(err)
	}
	first, err = anon.Recv()
	if err != nil || first.GetSubscribeResponse().GetError().GetCode() != 403 {
		t.Fatalf("anonymous subscribe: %v, %v: want error 403", first, err)
	}
}

// TestThroughGyre runs the backend behind a Gyre node, as the server
// wires it: a WebSocket client subscribes, receives the ticks and is
// unsubscribed with 2000 when the ticker ends; on the echo namespace its
// publications come back from the backend.
func TestThroughGyre(t *testing.T) {
	proxy, err := substream.New(substream.Config{Name: "default", Conn: startBackend(t), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n, err := gyre.NewNode(gyre.Config{
		Token:    token.Config{HMACSecretKey: "secret"},
		Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{{Name: "ticks"}, {Name: "echo"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	n.OnSubscribe(func(ctx context.Context, c *gyre.Client, e gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
		call := substream.Call{
			Request: &proxypb.SubscribeRequest{
				Client: c.ID(), Transport: c.Transport().Name(), Protocol: c.Transport().Protocol().String(),
				Encoding: "json", User: c.UserID(), Channel: e.Channel, Data: e.Data,
			},
			Bidirectional: strings.HasPrefix(e.Channel, "echo:"),
			Done:          c.Done(),
		}
		return proxy.Subscribe(ctx, call, func(r *proxypb.SubscribeResponse) (gyre.SubscribeReply, error) {
			if e := r.GetError(); e != nil {
				return gyre.SubscribeReply{}, &gyre.Error{Code: e.Code, Message: e.Message}
			}
			return gyre.SubscribeReply{Data: r.GetResult().GetData()}, nil
		})
	})
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", gyre.NewWebsocketHandler(n, gyre.WebsocketConfig{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		_ = n.Shutdown(context.Background())
	})

	c := wstest.Dial(t, "ws"+strings.TrimPrefix(srv.URL, "http")+"/connection/websocket", protocol.TypeJSON)
	tok, err := token.SignHMAC("HS256", []byte("secret"), map[string]any{"sub": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}}); r.Error != nil {
		t.Fatalf("connect: %+v", r.Error)
	}

	r := c.Subscribe(&protocol.SubscribeRequest{Channel: "ticks:1", Data: []byte(`{"interval_ms":1,"count":3}`)})
	if r.Error != nil || string(r.Subscribe.Data) != `{"ticking":true}` {
		t.Fatalf("subscribe: %+v", r)
	}
	if pubs := c.WaitPubs("ticks:1", 3); len(pubs) != 3 {
		t.Fatalf("%d ticks, want 3", len(pubs))
	}
	p := c.WaitPush("unsubscribe", func(p *protocol.Push) bool { return p.Unsubscribe != nil })
	if p.Unsubscribe.Code != 2000 {
		t.Fatalf("unsubscribe %+v, want 2000", p.Unsubscribe)
	}

	c.MustSubscribe("echo:1")
	if r := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "echo:1", Data: []byte(`{"hi":1}`)}}); r.Error != nil {
		t.Fatalf("publish: %+v", r.Error)
	}
	echo := c.WaitPubs("echo:1", 1)[0]
	if want := `{"echo":{"hi":1},"n":1,"user":"1"}`; string(echo.Data) != want {
		t.Fatalf("echo %s, want %s", echo.Data, want)
	}
}
