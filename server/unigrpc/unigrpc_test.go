package unigrpc_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/server/unigrpc"
	"github.com/gyrehq/gyre/server/unigrpc/unistreampb"
)

// TestConsume: the connect push comes first (client id, connect data,
// the server-side subscription, ping advertised and no pong), then the
// publications in the order they were published, then an unsubscribe push
// when the server unsubscribes the client, and a disconnect push before
// the stream ends with status OK. A second consumer recovers what it
// missed from the stream position of the first.
func TestConsume(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, eng enginetest.Engine) {
		cfg := gyre.Config{Channels: gyre.ChannelConfig{WithoutNamespace: gyre.ChannelOptions{
			HistorySize: 100, HistoryTTL: time.Minute, AllowRecovery: true,
		}}}
		cfg = eng.Config(t, cfg)
		events := make(chan gyre.ConnectingEvent, 2)
		s := startServer(t, cfg, unigrpc.Config{}, func(n *gyre.Node) {
			n.OnConnecting(func(_ context.Context, e gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
				events <- e
				return gyre.ConnectingReply{Data: []byte(`{"welcome":"` + e.Name + `"}`), Channels: []string{"news"}}, nil
			})
		})
		client := dial(t, s.addr)
		tok := connToken(t, "ann", nil)
		c := consume(t, client, &unistreampb.ConnectRequest{
			Token: tok, Name: "go-test", Version: "1.2", Data: []byte(`{"hi":1}`), Headers: map[string]string{"X-Trace": "t1"},
		})

		p := c.next()
		if p.Connect == nil || p.Connect.Client == "" {
			t.Fatalf("first push %v, want connect", p)
		}
		if string(p.Connect.Data) != `{"welcome":"go-test"}` {
			t.Errorf("connect data %q, want the connecting handler's", p.Connect.Data)
		}
		if p.Connect.Ping != 25 || p.Connect.Pong {
			t.Errorf("connect ping %d pong %v, want 25 false", p.Connect.Ping, p.Connect.Pong)
		}
		e := <-events
		if e.Transport != "uni_grpc" || e.Name != "go-test" || e.Version != "1.2" || string(e.Data) != `{"hi":1}` ||
			e.Headers["X-Trace"] != "t1" || e.Credentials == nil || e.Credentials.UserID != "ann" {
			t.Errorf("connecting event %+v, want the ConnectRequest's fields on uni_grpc", e)
		}
		sub, ok := p.Connect.Subs["news"]
		if !ok || !sub.Recoverable {
			t.Fatalf("connect subs %v, want news, recoverable", p.Connect.Subs)
		}

		const n = 20
		for i := range n {
			if _, err := s.node.Publish("news", []byte(strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
		var last *unistreampb.Publication
		for i := range n {
			p := c.nextNonPing()
			if p.Channel != "news" || p.Pub == nil || string(p.Pub.Data) != strconv.Itoa(i) {
				t.Fatalf("push %d: %v, want publication %d in news", i, p, i)
			}
			if last != nil && p.Pub.Offset != last.Offset+1 {
				t.Errorf("offset %d after %d", p.Pub.Offset, last.Offset)
			}
			last = p.Pub
		}

		if err := s.node.Unsubscribe("ann", "news", gyre.ClientFilter{}); err != nil {
			t.Fatal(err)
		}
		if p := c.nextNonPing(); p.Channel != "news" || p.Unsubscribe == nil || p.Unsubscribe.Code != 2000 {
			t.Errorf("push %v, want unsubscribe 2000 from news", p)
		}
		if err := s.node.Disconnect("ann", nil, gyre.ClientFilter{}, nil); err != nil {
			t.Fatal(err)
		}
		if p := c.nextNonPing(); p.Disconnect == nil || p.Disconnect.Code != 3503 || p.Disconnect.Reconnect {
			t.Errorf("push %v, want disconnect 3503 without reconnect", p)
		}
		c.expectEnd()

		// Two publications while away; a consumer that names the last
		// position it saw gets them in its connect push.
		for _, d := range []string{"a", "b"} {
			if _, err := s.node.Publish("news", []byte(`"`+d+`"`)); err != nil {
				t.Fatal(err)
			}
		}
		r := consume(t, client, &unistreampb.ConnectRequest{Token: tok, Subs: map[string]*unistreampb.SubscribeRequest{
			"news": {Recover: true, Epoch: sub.Epoch, Offset: last.Offset},
		}})
		p = r.next()
		rs := p.GetConnect().GetSubs()["news"]
		if rs == nil || !rs.Recovered || !rs.WasRecovering || len(rs.Publications) != 2 ||
			string(rs.Publications[0].Data) != `"a"` || string(rs.Publications[1].Data) != `"b"` {
			t.Errorf("connect push %v, want news recovered with a and b", p)
		}
	})
}

// TestConsumeJoinLeave: a channel with join/leave pushed sends the joins
// and leaves of other clients.
func TestConsumeJoinLeave(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, eng enginetest.Engine) {
		cfg := gyre.Config{Channels: gyre.ChannelConfig{WithoutNamespace: gyre.ChannelOptions{
			Presence: true, JoinLeave: true, ForcePushJoinLeave: true,
		}}}
		cfg = eng.Config(t, cfg)
		s := startServer(t, cfg, unigrpc.Config{}, nil)
		client := dial(t, s.addr)
		a := consume(t, client, &unistreampb.ConnectRequest{Token: connToken(t, "ann", map[string]any{"channels": []string{"room"}})})
		if p := a.next(); p.Connect == nil {
			t.Fatalf("first push %v, want connect", p)
		}
		b := consume(t, client, &unistreampb.ConnectRequest{Token: connToken(t, "bob", map[string]any{"channels": []string{"room"}})})
		if p := b.next(); p.Connect == nil {
			t.Fatalf("first push %v, want connect", p)
		}
		p := a.nextNonPing()
		for p.Join != nil && p.Join.Info.GetUser() == "ann" {
			p = a.nextNonPing() // its own join, when pushed
		}
		if p.Channel != "room" || p.Join == nil || p.Join.Info.GetUser() != "bob" {
			t.Fatalf("push %v, want bob's join in room", p)
		}
		b.cancel()
		if p := a.nextNonPing(); p.Channel != "room" || p.Leave == nil || p.Leave.Info.GetUser() != "bob" {
			t.Errorf("push %v, want bob's leave from room", p)
		}
	})
}

// TestConsumeRefused: a refused connect is a disconnect push, as on the
// other unidirectional transports, and then the end of the stream with
// status OK, as Centrifugo does.
func TestConsumeRefused(t *testing.T) {
	s := startServer(t, gyre.Config{}, unigrpc.Config{}, nil)
	client := dial(t, s.addr)
	expired := connToken(t, "ivy", map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})
	tests := []struct {
		name  string
		token string
		code  uint32
	}{
		{"bad token", "bad", 3500},
		{"expired token", expired, 3005},
		{"no credentials", "", 3501},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := consume(t, client, &unistreampb.ConnectRequest{Token: tt.token})
			if p := c.next(); p.Disconnect == nil || p.Disconnect.Code != tt.code {
				t.Errorf("push %v, want disconnect %d", p, tt.code)
			}
			c.expectEnd()
		})
	}
}

// TestConsumePings: pings are empty pushes, and the stream stays open
// without any answer.
func TestConsumePings(t *testing.T) {
	t.Parallel()
	s := startServer(t, gyre.Config{PingInterval: 2 * time.Second, PongTimeout: time.Second}, unigrpc.Config{}, nil)
	c := consume(t, dial(t, s.addr), &unistreampb.ConnectRequest{Token: connToken(t, "jay", map[string]any{"channels": []string{"news"}})})
	if p := c.next(); p.Connect == nil || p.Connect.Ping != 2 {
		t.Fatalf("first push %v, want connect with ping 2", p)
	}
	for range 2 {
		if p := c.next(); !isPing(p) {
			t.Fatalf("push %v, want a ping", p)
		}
	}
	if _, err := s.node.Publish("news", []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	if p := c.nextNonPing(); p.Pub == nil {
		t.Errorf("push %v after pings, want the publication", p)
	}
}

// TestConsumerGone: a consumer that cancels its call is a closed
// connection to the node.
func TestConsumerGone(t *testing.T) {
	s := startServer(t, gyre.Config{}, unigrpc.Config{}, nil)
	c := consume(t, dial(t, s.addr), &unistreampb.ConnectRequest{Token: connToken(t, "kim", nil)})
	if p := c.next(); p.Connect == nil {
		t.Fatalf("first push %v, want connect", p)
	}
	c.cancel()
	if e := s.waitDisconnect(t); e.Disconnect.Code != gyre.DisconnectConnectionClosed.Code {
		t.Errorf("disconnect %d, want %d", e.Disconnect.Code, gyre.DisconnectConnectionClosed.Code)
	}
}

// notReading connects a consumer to news that reads only its connect
// push, over a fixed flow control window (gRPC would otherwise grow it to
// megabytes): once the window is full, the server's sends block.
func notReading(t *testing.T, s *testServer) *consumer {
	t.Helper()
	client := dial(t, s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	c := consume(t, client, &unistreampb.ConnectRequest{Token: connToken(t, "lea", map[string]any{"channels": []string{"news"}})})
	if p := c.next(); p.Connect == nil {
		t.Fatalf("first push %v, want connect", p)
	}
	return c
}

// expectReset reads what the server sent before it ended the stream and
// checks that it ended: an error status, as the call was cut, not closed.
func (c *consumer) expectReset() {
	c.t.Helper()
	for {
		if _, err := c.stream.Recv(); err != nil {
			if status.Code(err) == codes.OK {
				c.t.Errorf("stream ended with %v, want it cut", err)
			}
			return
		}
	}
}

// TestConsumerNotReadingSlow: a consumer that stops reading fills the flow
// control window and then its client's queue; the server closes it as
// slow (3008), which also ends the send blocked on it.
func TestConsumerNotReadingSlow(t *testing.T) {
	s := startServer(t, gyre.Config{}, unigrpc.Config{WriteTimeout: time.Hour}, nil)
	c := notReading(t, s)
	data := bytes.Repeat([]byte("x"), 8<<10)
	closed := make(chan gyre.DisconnectEvent, 1)
	go func() { closed <- s.waitDisconnect(t) }()
	for {
		if _, err := s.node.Publish("news", data); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-closed:
			if e.Disconnect.Code != gyre.DisconnectSlow.Code {
				t.Errorf("disconnect %d, want %d", e.Disconnect.Code, gyre.DisconnectSlow.Code)
			}
			c.expectReset()
			return
		default:
		}
	}
}

// TestConsumerNotReadingWriteTimeout: a send blocked on a consumer that
// does not read, with room left in the client's queue, ends the stream
// after the write timeout (3009).
func TestConsumerNotReadingWriteTimeout(t *testing.T) {
	s := startServer(t, gyre.Config{}, unigrpc.Config{WriteTimeout: 100 * time.Millisecond}, nil)
	c := notReading(t, s)
	// 512 KiB: more than the window and gRPC's own buffer of 64 KiB,
	// well under the 1 MiB queue.
	data := bytes.Repeat([]byte("x"), 8<<10)
	for range 64 {
		if _, err := s.node.Publish("news", data); err != nil {
			t.Fatal(err)
		}
	}
	if e := s.waitDisconnect(t); e.Disconnect.Code != gyre.DisconnectWriteError.Code {
		t.Errorf("disconnect %d, want %d", e.Disconnect.Code, gyre.DisconnectWriteError.Code)
	}
	c.expectReset()
}

// TestMaxReceiveMessageSize: a ConnectRequest over the limit ends the call
// with RESOURCE_EXHAUSTED and makes no client; one under it connects.
func TestMaxReceiveMessageSize(t *testing.T) {
	var logs logBuffer
	s := startServer(t, gyre.Config{}, unigrpc.Config{MaxReceiveMessageSize: 1024, Logger: logs.logger()}, nil)
	client := dial(t, s.addr)
	tok := connToken(t, "max", nil)
	big := consume(t, client, &unistreampb.ConnectRequest{Token: tok, Data: bytes.Repeat([]byte("x"), 2048)})
	if _, err := big.stream.Recv(); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("oversized request: %v, want ResourceExhausted", err)
	}
	if l := logs.waitFor("uni_grpc: call refused", "ResourceExhausted"); !strings.Contains(l, "uni_grpc: call refused") || !strings.Contains(l, "ResourceExhausted") {
		t.Errorf("log %q, want the refused call and its cause", l)
	}
	small := consume(t, client, &unistreampb.ConnectRequest{Token: tok, Data: []byte(`{}`)})
	if p := small.next(); p.Connect == nil {
		t.Errorf("first push %v, want connect", p)
	}
}

// rawBytes is a request sent as it is, through rawCodec.
type rawBytes []byte

// rawCodec lets a test send bytes that are no valid ConnectRequest.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.(rawBytes), nil }
func (rawCodec) Unmarshal([]byte, any) error   { return nil }
func (rawCodec) Name() string                  { return "proto" }

// TestMalformedConnectRequest: bytes that are no ConnectRequest end the
// call with an error status and make no client.
func TestMalformedConnectRequest(t *testing.T) {
	var logs logBuffer
	s := startServer(t, gyre.Config{}, unigrpc.Config{Logger: logs.logger()}, nil)
	cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	desc := &unistreampb.CentrifugoUniStream_ServiceDesc.Streams[0]
	stream, err := cc.NewStream(ctx, desc, unistreampb.CentrifugoUniStream_Consume_FullMethodName, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	// Field 1 (token) as a string whose length runs past the end.
	if err := stream.SendMsg(rawBytes{0x0a, 0x7f, 'x'}); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	err = stream.RecvMsg(new(rawBytes))
	if code := status.Code(err); code == codes.OK || code == codes.Unknown {
		t.Errorf("malformed request: %v, want an error status", err)
	}
	if got := s.node.LocalInfo().NumClients; got != 0 {
		t.Errorf("%d clients, want none", got)
	}
	if l := logs.waitFor("uni_grpc: call refused", "unmarshal"); !strings.Contains(l, "uni_grpc: call refused") || !strings.Contains(l, "unmarshal") {
		t.Errorf("log %q, want the refused call and its cause", l)
	}
}

// TestTLS: with a TLS config the server speaks TLS only.
func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	s := startServer(t, gyre.Config{}, unigrpc.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}}, nil)
	secure := dial(t, s.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
	c := consume(t, secure, &unistreampb.ConnectRequest{Token: connToken(t, "tls", nil)})
	if p := c.next(); p.Connect == nil {
		t.Fatalf("first push %v, want connect", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The call fails when it is opened or at the first read.
	plain, err := dial(t, s.addr).Consume(ctx, &unistreampb.ConnectRequest{Token: connToken(t, "tls", nil)})
	if err == nil {
		_, err = plain.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("plain client: %v, want Unavailable", err)
	}
}

// TestShutdown: shutting down the node ends every stream with a
// disconnect push 3001, after which the server stops.
func TestShutdown(t *testing.T) {
	s := startServer(t, gyre.Config{}, unigrpc.Config{}, nil)
	c := consume(t, dial(t, s.addr), &unistreampb.ConnectRequest{Token: connToken(t, "sam", nil)})
	if p := c.next(); p.Connect == nil {
		t.Fatalf("first push %v, want connect", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- s.srv.Shutdown(ctx) }()
	if err := s.node.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if p := c.nextNonPing(); p.Disconnect == nil || p.Disconnect.Code != 3001 || !p.Disconnect.Reconnect {
		t.Errorf("push %v, want disconnect 3001 with reconnect", p)
	}
	c.expectEnd()
	if err := <-stopped; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// selfSigned makes a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(parsed)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: parsed}, pool
}

// TestConsumeBinary: the transport is protobuf, so binary publication data
// arrives as it was published (JSON transports refuse it).
func TestConsumeBinary(t *testing.T) {
	s := startServer(t, gyre.Config{}, unigrpc.Config{}, nil)
	c := consume(t, dial(t, s.addr), &unistreampb.ConnectRequest{Token: connToken(t, "bin", map[string]any{"channels": []string{"raw"}})})
	if p := c.next(); p.Connect == nil {
		t.Fatalf("first push %v, want connect", p)
	}
	data := []byte{0xff, 0x00, 0xfe, '\n'}
	if _, err := s.node.Publish("raw", data); err != nil {
		t.Fatal(err)
	}
	if p := c.nextNonPing(); !bytes.Equal(p.GetPub().GetData(), data) {
		t.Errorf("push %v, want the binary publication", p)
	}
}
