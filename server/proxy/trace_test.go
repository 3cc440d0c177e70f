package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	gyrepkg "github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/proxy"
)

// tracedProxy is a proxy named "main" to b's hook over kind that records
// its spans in rec, which tp feeds.
func tracedProxy(t *testing.T, kind, hook string, b *backend, cfg proxy.Config) (*proxy.Proxy, *tracetest.SpanRecorder, trace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	pool := proxy.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	cfg.Name, cfg.Endpoint, cfg.Timeout, cfg.TracerProvider = "main", b.endpoint(kind, hook), 2*time.Second, tp
	p, err := proxy.New(cfg, pool)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec, tp
}

// spanNamed is the one ended span of rec called name.
func spanNamed(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %q, want 1", len(found), name)
	}
	return found[0]
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func wantSpanAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	got := spanAttrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", s.Name(), k, got[k], v, got)
		}
	}
}

// wantSentParent fails unless the backend's call carried a traceparent
// naming span s as the parent.
func wantSentParent(t *testing.T, c call, s sdktrace.ReadOnlySpan) {
	t.Helper()
	want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
	if got := c.header.Get("Traceparent"); got != want {
		t.Errorf("backend got traceparent %q, want %q", got, want)
	}
}

// TestTraceCall: a call made in a span's context is a CLIENT span under
// it, and the backend gets the trace.
func TestTraceCall(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b := newBackend(t)
			defaultAnswers(b)
			p, rec, tp := tracedProxy(t, kind, "connect", b, proxy.Config{})
			ctx, caller := tp.Tracer("test").Start(t.Context(), "caller")
			if _, err := p.Connect(ctx, gyrepkg.ConnectingEvent{ClientID: "c1", Transport: "websocket", Protocol: protocol.TypeJSON}); err != nil {
				t.Fatal(err)
			}
			caller.End()
			s := spanNamed(t, rec, "proxy connect")
			if s.SpanKind() != trace.SpanKindClient {
				t.Errorf("kind %v, want CLIENT", s.SpanKind())
			}
			if s.Parent().SpanID() != caller.SpanContext().SpanID() || s.SpanContext().TraceID() != caller.SpanContext().TraceID() {
				t.Errorf("span under %v, want under the caller %v", s.Parent(), caller.SpanContext())
			}
			got := b.received("connect")
			if len(got) != 1 {
				t.Fatalf("%d connect calls, want 1", len(got))
			}
			wantSentParent(t, got[0], s)
			want := map[string]string{"gyre.proxy.name": "main", "gyre.proxy.kind": "connect", "server.address": "127.0.0.1"}
			if kind == "http" {
				want["http.request.method"], want["http.response.status_code"] = "POST", "200"
			} else {
				want["rpc.system"], want["rpc.grpc.status_code"] = "grpc", "0"
			}
			wantSpanAttrs(t, s, want)
			if s.Status().Code != codes.Unset {
				t.Errorf("status %v, want unset", s.Status())
			}
		})
	}
}

// TestTraceNewRoot: a call without a span in its context starts a trace,
// which the backend gets; a traceparent the client sent, forwarded by
// http_headers, gives way to it.
func TestTraceNewRoot(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b := newBackend(t)
			defaultAnswers(b)
			p, rec, _ := tracedProxy(t, kind, "connect", b, proxy.Config{HTTPHeaders: []string{"Traceparent", "X-Kept"}, GRPCMetadata: []string{"traceparent"}})
			// The client's request headers, kept as the server keeps them.
			var ctx context.Context
			req := httptest.NewRequest(http.MethodGet, "/connection/websocket", nil)
			req.Header.Set("Traceparent", "00-11111111111111111111111111111111-2222222222222222-01")
			req.Header.Set("X-Kept", "yes")
			proxy.KeepHeaders([]string{"Traceparent", "X-Kept"}, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				ctx = r.Context()
			})).ServeHTTP(httptest.NewRecorder(), req)
			if _, err := p.Connect(ctx, gyrepkg.ConnectingEvent{ClientID: "c1", Protocol: protocol.TypeJSON}); err != nil {
				t.Fatal(err)
			}
			s := spanNamed(t, rec, "proxy connect")
			if s.Parent().IsValid() {
				t.Errorf("span under %v, want a root", s.Parent())
			}
			got := b.received("connect")[0]
			wantSentParent(t, got, s)
			if got.header.Get("X-Kept") != "yes" {
				t.Errorf("X-Kept %q, want the client's header forwarded as before", got.header.Get("X-Kept"))
			}
		})
	}
}

// TestTraceFailure: a call that fails is the span's error.
func TestTraceFailure(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b := newBackend(t)
			b.set("connect", func(map[string]any) answer { return answer{status: http.StatusInternalServerError} })
			p, rec, _ := tracedProxy(t, kind, "connect", b, proxy.Config{})
			if _, err := p.Connect(t.Context(), gyrepkg.ConnectingEvent{ClientID: "c1", Protocol: protocol.TypeJSON}); err == nil {
				t.Fatal("connect succeeded, want a failure")
			}
			s := spanNamed(t, rec, "proxy connect")
			if s.Status().Code != codes.Error {
				t.Errorf("status %v, want Error", s.Status())
			}
			if kind == "http" {
				wantSpanAttrs(t, s, map[string]string{"http.response.status_code": "500"})
			} else {
				wantSpanAttrs(t, s, map[string]string{"rpc.grpc.status_code": "14"})
			}
		})
	}
}

// clientEnv is a node whose connections are accepted and whose
// subscribes go to subscribe; it returns a connected client.
func clientEnv(t *testing.T, subscribe gyrepkg.SubscribeHandler, rpc gyrepkg.RPCHandler) *wstest.Client {
	t.Helper()
	n, err := gyrepkg.NewNode(gyrepkg.Config{Channels: gyrepkg.ChannelConfig{
		Namespaces: []gyrepkg.Namespace{{Name: "chat"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	n.OnConnecting(func(context.Context, gyrepkg.ConnectingEvent) (gyrepkg.ConnectingReply, error) {
		return gyrepkg.ConnectingReply{Credentials: &gyrepkg.Credentials{UserID: "u1"}}, nil
	})
	n.OnSubscribe(subscribe)
	n.OnRPC(rpc)
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gyrepkg.NewWebsocketHandler(n, gyrepkg.WebsocketConfig{}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		hs.Close()
	})
	c := wstest.Dial(t, "ws"+strings.TrimPrefix(hs.URL, "http"), protocol.TypeJSON)
	if r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{}}); r.Error != nil {
		t.Fatalf("connect: %v", r.Error)
	}
	return c
}

// TestTraceClientEvents: a subscribe is a span naming its channel, an RPC
// one without.
func TestTraceClientEvents(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b := newBackend(t)
			defaultAnswers(b)
			sub, rec, _ := tracedProxy(t, kind, "subscribe", b, proxy.Config{})
			rpc, rpcRec, _ := tracedProxy(t, kind, "rpc", b, proxy.Config{})
			c := clientEnv(t, sub.Subscribe, rpc.RPC)
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:x"}); r.Error != nil {
				t.Fatalf("subscribe: %v", r.Error)
			}
			if r := c.Call(&protocol.Command{Rpc: &protocol.RPCRequest{Method: "m"}}); r.Error != nil {
				t.Fatalf("rpc: %v", r.Error)
			}
			s := spanNamed(t, rec, "proxy subscribe")
			wantSpanAttrs(t, s, map[string]string{"gyre.proxy.kind": "subscribe", "gyre.channel": "chat:x"})
			wantSentParent(t, b.received("subscribe")[0], s)
			r := spanNamed(t, rpcRec, "proxy rpc")
			wantSpanAttrs(t, r, map[string]string{"gyre.proxy.kind": "rpc"})
			if _, ok := spanAttrs(r)["gyre.channel"]; ok {
				t.Errorf("rpc span names a channel: %v", spanAttrs(r))
			}
			wantSentParent(t, b.received("rpc")[0], r)
		})
	}
}

// TestTraceSubscribeStream: a subscription stream's call until its first
// answer is a span, whose context the stream's metadata carries.
func TestTraceSubscribeStream(t *testing.T) {
	sb := newStreamBackend(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	pool := proxy.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	p, err := proxy.New(proxy.Config{Name: "streams", Endpoint: "grpc://" + sb.addr, Timeout: 2 * time.Second, TracerProvider: tp}, pool)
	if err != nil {
		t.Fatal(err)
	}
	c := clientEnv(t, func(ctx context.Context, c *gyrepkg.Client, e gyrepkg.SubscribeEvent) (gyrepkg.SubscribeReply, error) {
		return p.SubscribeStream(ctx, c, e, false)
	}, nil)
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:s"}); r.Error != nil {
		t.Fatalf("subscribe: %v", r.Error)
	}
	s := spanNamed(t, rec, "proxy subscribe_stream")
	wantSpanAttrs(t, s, map[string]string{"gyre.proxy.kind": "subscribe_stream", "gyre.channel": "chat:s", "rpc.system": "grpc", "rpc.grpc.status_code": "0"})
	sb.mu.Lock()
	defer sb.mu.Unlock()
	want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
	if len(sb.traceparents) != 1 || sb.traceparents[0] != want {
		t.Errorf("stream metadata traceparent %q, want %q", sb.traceparents, want)
	}
}
