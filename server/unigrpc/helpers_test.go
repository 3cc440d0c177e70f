package unigrpc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/server/unigrpc"
	"github.com/gyrehq/gyre/server/unigrpc/unistreampb"
	"github.com/gyrehq/gyre/token"
)

const testSecret = "unigrpc-test-secret"

func TestMain(m *testing.M) { enginetest.Main(m) }

// testServer is a node with a uni_grpc server on a local port.
type testServer struct {
	node *gyre.Node
	srv  *unigrpc.Server
	addr string
	// disconnects receives the node's disconnect events.
	disconnects chan gyre.DisconnectEvent
}

// startServer runs a node with cfg (token secret filled in) and serves
// uni_grpc for it with ucfg. setup may register handlers.
func startServer(t testing.TB, cfg gyre.Config, ucfg unigrpc.Config, setup func(*gyre.Node)) *testServer {
	t.Helper()
	cfg.Token.HMACSecretKey = testSecret
	n, err := gyre.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{node: n, disconnects: make(chan gyre.DisconnectEvent, 16)}
	n.OnDisconnect(func(_ *gyre.Client, e gyre.DisconnectEvent) {
		select {
		case s.disconnects <- e:
		default:
		}
	})
	if setup != nil {
		setup(n)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.srv = unigrpc.New(n, ucfg)
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		_ = s.srv.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// dial connects a gRPC client to addr, plain unless opts say otherwise.
func dial(t testing.TB, addr string, opts ...grpc.DialOption) unistreampb.CentrifugoUniStreamClient {
	t.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return unistreampb.NewCentrifugoUniStreamClient(cc)
}

// consumer is one Consume call.
type consumer struct {
	t      *testing.T
	stream grpc.ServerStreamingClient[unistreampb.Push]
	cancel context.CancelFunc
}

func consume(t *testing.T, c unistreampb.CentrifugoUniStreamClient, req *unistreampb.ConnectRequest, opts ...grpc.CallOption) *consumer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	stream, err := c.Consume(ctx, req, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &consumer{t: t, stream: stream, cancel: cancel}
}

// next is the next push, pings included.
func (c *consumer) next() *unistreampb.Push {
	c.t.Helper()
	p, err := c.stream.Recv()
	if err != nil {
		c.t.Fatalf("Recv: %v", err)
	}
	return p
}

// nextNonPing skips empty pushes (pings).
func (c *consumer) nextNonPing() *unistreampb.Push {
	c.t.Helper()
	for {
		if p := c.next(); !isPing(p) {
			return p
		}
	}
}

func isPing(p *unistreampb.Push) bool {
	return p.Channel == "" && p.Pub == nil && p.Join == nil && p.Leave == nil && p.Unsubscribe == nil &&
		p.Message == nil && p.Subscribe == nil && p.Connect == nil && p.Disconnect == nil && p.Refresh == nil
}

// expectEnd checks that the stream ends with status OK (io.EOF) after
// skipping pings.
func (c *consumer) expectEnd() {
	c.t.Helper()
	for {
		p, err := c.stream.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			c.t.Fatalf("stream ended with %v, want status OK", err)
		}
		if !isPing(p) {
			c.t.Fatalf("push %v, want the end of the stream", p)
		}
	}
}

func connToken(t testing.TB, user string, claims map[string]any) string {
	t.Helper()
	all := map[string]any{"sub": user}
	for k, v := range claims {
		all[k] = v
	}
	tok, err := token.SignHMAC("HS256", []byte(testSecret), all)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// logBuffer collects log lines; safe for the server's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// waitFor returns the log once it holds every one of parts, or what it
// holds after a few seconds. The client may learn that its call ended
// before the server's interceptor has written the line about it.
func (b *logBuffer) waitFor(parts ...string) string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		l := b.String()
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all || time.Now().After(deadline) {
			return l
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitDisconnect waits for the node to report a client's disconnect.
func (s *testServer) waitDisconnect(t *testing.T) gyre.DisconnectEvent {
	t.Helper()
	select {
	case e := <-s.disconnects:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no disconnect event")
		return gyre.DisconnectEvent{}
	}
}
