package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/gyrehq/gyre/server/proxy"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

// answer is what a test backend replies to one call: an HTTP status (a
// gRPC backend answers any other status than 200 with an Unavailable
// error), a JSON body, and a delay before answering.
type answer struct {
	status int
	body   string
	delay  time.Duration
}

func ok(body string) answer { return answer{status: http.StatusOK, body: body} }

// call is one request a backend received: the hook (connect, subscribe,
// ...), the body as generic JSON, and the headers (or gRPC metadata).
type call struct {
	hook   string
	body   map[string]any
	header http.Header
}

// backend is the application backend of the tests: it records every call
// and answers with what the test set for the hook. It serves HTTP (one
// path per hook) and gRPC (proxypb's service), so that every test runs
// against both.
type backend struct {
	t       *testing.T
	mu      sync.Mutex
	calls   []call
	answers map[string]func(body map[string]any) answer

	httpURL  string
	grpcAddr string
}

func newBackend(t *testing.T) *backend {
	b := &backend{t: t, answers: map[string]func(map[string]any) answer{}}
	hs := httptest.NewServer(http.HandlerFunc(b.serveHTTP))
	t.Cleanup(hs.Close)
	b.httpURL = hs.URL

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	proxypb.RegisterCentrifugoProxyServer(gs, &grpcBackend{b: b})
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	b.grpcAddr = ln.Addr().String()
	return b
}

// endpoint is the backend's endpoint for hook over kind ("http" or
// "grpc").
func (b *backend) endpoint(kind, hook string) string {
	if kind == "grpc" {
		return "grpc://" + b.grpcAddr
	}
	return b.httpURL + "/" + hook
}

func (b *backend) set(hook string, f func(body map[string]any) answer) {
	b.mu.Lock()
	b.answers[hook] = f
	b.mu.Unlock()
}

func (b *backend) setBody(hook, body string) {
	b.set(hook, func(map[string]any) answer { return ok(body) })
}

// received lists the calls of hook so far.
func (b *backend) received(hook string) []call {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []call
	for _, c := range b.calls {
		if c.hook == hook {
			out = append(out, c)
		}
	}
	return out
}

// waitCalls waits for at least n calls of hook.
func (b *backend) waitCalls(hook string, n int) []call {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := b.received(hook); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("backend: fewer than %d %s calls", n, hook)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *backend) answerFor(ctx context.Context, hook string, raw []byte, h http.Header) answer {
	var body map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&body); err != nil {
		b.t.Errorf("backend: %s request is not a JSON object: %v: %s", hook, err, raw)
	}
	b.mu.Lock()
	b.calls = append(b.calls, call{hook: hook, body: body, header: h})
	f := b.answers[hook]
	b.mu.Unlock()
	if f == nil {
		return answer{status: http.StatusNotFound}
	}
	a := f(body)
	if a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-ctx.Done():
			// The caller gave up: a late success that still arrived
			// at the very moment of its deadline must not count.
			return answer{status: http.StatusGatewayTimeout}
		}
	}
	return a
}

func (b *backend) serveHTTP(w http.ResponseWriter, r *http.Request) {
	hook := strings.TrimPrefix(r.URL.Path, "/")
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		b.t.Errorf("backend: %s %s with Content-Type %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	raw, _ := io.ReadAll(r.Body)
	a := b.answerFor(r.Context(), hook, raw, r.Header.Clone())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// grpcBackend serves the backend's answers over gRPC.
type grpcBackend struct {
	proxypb.UnimplementedCentrifugoProxyServer
	b *backend
}

func (g *grpcBackend) handle(ctx context.Context, hook string, req, resp proto.Message) error {
	raw, err := proxy.MarshalJSON(req)
	if err != nil {
		g.b.t.Errorf("backend: %s request: %v", hook, err)
	}
	h := http.Header{}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for k, v := range md {
			h[http.CanonicalHeaderKey(k)] = v
		}
	}
	a := g.b.answerFor(ctx, hook, raw, h)
	if a.status != http.StatusOK {
		return status.Errorf(codes.Unavailable, "backend status %d", a.status)
	}
	if err := proxy.UnmarshalJSON([]byte(a.body), resp); err != nil {
		return status.Errorf(codes.Internal, "backend body: %v", err)
	}
	return nil
}

func (g *grpcBackend) Connect(ctx context.Context, r *proxypb.ConnectRequest) (*proxypb.ConnectResponse, error) {
	resp := &proxypb.ConnectResponse{}
	return resp, g.handle(ctx, "connect", r, resp)
}

func (g *grpcBackend) Refresh(ctx context.Context, r *proxypb.RefreshRequest) (*proxypb.RefreshResponse, error) {
	resp := &proxypb.RefreshResponse{}
	return resp, g.handle(ctx, "refresh", r, resp)
}

func (g *grpcBackend) Subscribe(ctx context.Context, r *proxypb.SubscribeRequest) (*proxypb.SubscribeResponse, error) {
	resp := &proxypb.SubscribeResponse{}
	return resp, g.handle(ctx, "subscribe", r, resp)
}

func (g *grpcBackend) Publish(ctx context.Context, r *proxypb.PublishRequest) (*proxypb.PublishResponse, error) {
	resp := &proxypb.PublishResponse{}
	return resp, g.handle(ctx, "publish", r, resp)
}

func (g *grpcBackend) RPC(ctx context.Context, r *proxypb.RPCRequest) (*proxypb.RPCResponse, error) {
	resp := &proxypb.RPCResponse{}
	return resp, g.handle(ctx, "rpc", r, resp)
}

func (g *grpcBackend) SubRefresh(ctx context.Context, r *proxypb.SubRefreshRequest) (*proxypb.SubRefreshResponse, error) {
	resp := &proxypb.SubRefreshResponse{}
	return resp, g.handle(ctx, "sub_refresh", r, resp)
}

func (g *grpcBackend) MapPublish(ctx context.Context, r *proxypb.MapPublishRequest) (*proxypb.MapPublishResponse, error) {
	resp := &proxypb.MapPublishResponse{}
	return resp, g.handle(ctx, "map_publish", r, resp)
}

func (g *grpcBackend) MapRemove(ctx context.Context, r *proxypb.MapRemoveRequest) (*proxypb.MapRemoveResponse, error) {
	resp := &proxypb.MapRemoveResponse{}
	return resp, g.handle(ctx, "map_remove", r, resp)
}
