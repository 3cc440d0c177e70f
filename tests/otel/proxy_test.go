package otel_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// TestProxyTrace has a node call an HTTP backend and a gRPC backend on
// connect and on rpc, and finds, for the traceparent each call carried,
// the "proxy <kind>" client span that the traceparent names as parent, in
// the trace it names.
func TestProxyTrace(t *testing.T) {
	requireJaeger(t)
	t.Parallel()
	for _, kind := range []string{"http", "grpc"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			be := newBackend(t)
			endpoint := be.httpURL
			if kind == "grpc" {
				endpoint = "grpc://" + be.grpcAddr
			}
			hookURL := func(hook string) string {
				if kind == "grpc" {
					return endpoint
				}
				return endpoint + "/" + hook
			}
			cfg := nodeConfig("A").
				Set("client.proxy.connect", map[string]any{"enabled": true, "endpoint": hookURL("connect"), "timeout": "20s"}).
				Set("rpc.proxy", map[string]any{"endpoint": hookURL("rpc"), "timeout": "20s"}).
				Set("rpc.without_namespace.proxy_enabled", true)
			service := serviceName(t)
			n := startNode(t, "A", cfg, toJaeger("http/protobuf", service))

			c := connectProxied(t, n)
			r := c.Call(&protocol.Command{Rpc: &protocol.RPCRequest{Method: "echo", Data: []byte(`{"n":1}`)}})
			if r.Error != nil {
				t.Fatalf("rpc: error %d %s", r.Error.Code, r.Error.Message)
			}

			for _, hook := range []string{"connect", "rpc"} {
				tp := be.traceparent(hook)
				traceID, spanID, ok := parseTraceparent(tp)
				if !ok {
					t.Errorf("the %s backend got traceparent %q on %s, want a version 00 one", kind, tp, hook)
					continue
				}
				name := "proxy " + hook
				waitTrace(t, traceID, "span "+name+" "+spanID, func(spans []span) string {
					for _, s := range spans {
						if s.SpanID != spanID {
							continue
						}
						if s.Name != name || s.Kind != "client" || s.Attrs["gyre.proxy.kind"] != hook || s.Service != service {
							return "the span the backend got as parent is not a client span " + name + " of " + service + ": " + s.String()
						}
						if kind == "grpc" && s.Attrs["rpc.system"] != "grpc" {
							return "a gRPC proxy call's span without rpc.system=grpc: " + s.String()
						}
						if kind == "http" && s.Attrs["http.request.method"] != "POST" {
							return "an HTTP proxy call's span without http.request.method=POST: " + s.String()
						}
						return ""
					}
					return "no span " + spanID
				})
			}
		})
	}
}

// connectProxied connects to n without a token, which the connect proxy
// decides.
func connectProxied(t *testing.T, n *gyreproc.Node) *wstest.Client {
	t.Helper()
	c := dialNode(t, n)
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Name: "otel-test"}})
	if r.Error != nil {
		t.Fatalf("connect through the proxy: error %d %s", r.Error.Code, r.Error.Message)
	}
	if r.Connect.GetClient() == "" {
		t.Fatalf("connect through the proxy: no client id in %v", r.Connect)
	}
	return c
}

// backend is an application backend on HTTP (a path per hook) and on
// gRPC (proxypb's service) that allows every connection and answers every
// rpc, recording the traceparent of each call.
type backend struct {
	proxypb.UnimplementedCentrifugoProxyServer

	httpURL  string
	grpcAddr string

	mu  sync.Mutex
	got map[string]string // hook: the traceparent of its last call
}

func newBackend(t *testing.T) *backend {
	b := &backend{got: map[string]string{}}
	hs := httptest.NewServer(http.HandlerFunc(b.serveHTTP))
	t.Cleanup(hs.Close)
	b.httpURL = hs.URL

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	proxypb.RegisterCentrifugoProxyServer(gs, b)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	b.grpcAddr = ln.Addr().String()
	return b
}

func (b *backend) record(hook, tp string) {
	b.mu.Lock()
	b.got[hook] = tp
	b.mu.Unlock()
}

// traceparent is what the last call of hook carried.
func (b *backend) traceparent(hook string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got[hook]
}

func (b *backend) serveHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	hook := strings.TrimPrefix(r.URL.Path, "/")
	b.record(hook, r.Header.Get("Traceparent"))
	var reply any
	switch hook {
	case "connect":
		reply = map[string]any{"result": map[string]any{"user": "proxied"}}
	case "rpc":
		reply = map[string]any{"result": map[string]any{"data": map[string]any{"ok": true}}}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

func grpcTraceparent(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("traceparent"); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (b *backend) Connect(ctx context.Context, _ *proxypb.ConnectRequest) (*proxypb.ConnectResponse, error) {
	b.record("connect", grpcTraceparent(ctx))
	return &proxypb.ConnectResponse{Result: &proxypb.ConnectResult{User: "proxied"}}, nil
}

func (b *backend) RPC(ctx context.Context, _ *proxypb.RPCRequest) (*proxypb.RPCResponse, error) {
	b.record("rpc", grpcTraceparent(ctx))
	return &proxypb.RPCResponse{Result: &proxypb.RPCResult{Data: []byte(`{"ok":true}`)}}, nil
}
