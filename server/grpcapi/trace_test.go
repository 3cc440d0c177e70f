package grpcapi_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gyrehq/gyre/server/grpcapi"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

const (
	callerTrace  = "0af7651916cd43dd8448eb211c80319c"
	callerSpan   = "b7ad6b7169203331"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// newTracedEnv is newEnv with the calls' spans recorded.
func newTracedEnv(t *testing.T, cfg grpcapi.Config) (*env, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg.TracerProvider = tp
	return newEnv(t, cfg), rec
}

// withTrace is ctx carrying traceparent (and tracestate) metadata.
func withTrace(ctx context.Context, kv ...string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// lastSpan is the one span rec holds, ended.
func lastSpan(t *testing.T, rec *tracetest.SpanRecorder) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	return spans[0]
}

// wantAttrs fails unless s has the attributes of want, compared as
// emitted, and none of absent.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string, absent ...string) {
	t.Helper()
	got := map[string]string{}
	for _, kv := range s.Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", s.Name(), k, got[k], v, got)
		}
	}
	for _, k := range absent {
		if v, ok := got[k]; ok {
			t.Errorf("span %q: %s = %q, want none", s.Name(), k, v)
		}
	}
}

func TestTraceCall(t *testing.T) {
	t.Parallel()
	e, rec := newTracedEnv(t, grpcapi.Config{Key: testKey})
	ctx := withTrace(e.ctx(), "traceparent", callerParent, "tracestate", "gyre=1")
	resp, err := e.client.Publish(ctx, &apipb.PublishRequest{Channel: "hist:a", Data: []byte(`{}`)})
	noErr(t, "publish", err, resp.GetError())
	s := lastSpan(t, rec)
	if s.Name() != "centrifugal.centrifugo.api.CentrifugoApi/Publish" || s.SpanKind() != trace.SpanKindServer {
		t.Fatalf("span %q of kind %v", s.Name(), s.SpanKind())
	}
	if s.SpanContext().TraceID().String() != callerTrace || s.Parent().SpanID().String() != callerSpan {
		t.Errorf("span in trace %s under %s, want the caller's %s under %s",
			s.SpanContext().TraceID(), s.Parent().SpanID(), callerTrace, callerSpan)
	}
	if ts := s.SpanContext().TraceState().String(); ts != "gyre=1" {
		t.Errorf("tracestate %q, want gyre=1", ts)
	}
	wantAttrs(t, s, map[string]string{
		"rpc.system": "grpc", "rpc.service": "centrifugal.centrifugo.api.CentrifugoApi", "rpc.method": "Publish",
		"gyre.api.method": "publish", "gyre.channel": "hist:a", "rpc.grpc.status_code": "0",
	}, "gyre.api.error_code")
	if s.Status().Code != codes.Unset {
		t.Errorf("status %v, want unset", s.Status())
	}
}

func TestTraceCallError(t *testing.T) {
	t.Parallel()
	for _, transport := range []bool{false, true} {
		e, rec := newTracedEnv(t, grpcapi.Config{TransportErrorMode: transport})
		resp, err := e.client.Broadcast(t.Context(), &apipb.BroadcastRequest{Channels: nil, Data: []byte(`{}`)})
		wantCode := "0"
		if transport {
			if status.Code(err) != grpccodes.InvalidArgument {
				t.Fatalf("transport mode: %v, want InvalidArgument", err)
			}
			wantCode = "3"
		} else {
			wantErr(t, "broadcast", resp.GetError(), 107)
		}
		s := lastSpan(t, rec)
		wantAttrs(t, s, map[string]string{
			"gyre.api.method": "broadcast", "gyre.channels.count": "0",
			"gyre.api.error_code": "107", "rpc.grpc.status_code": wantCode,
		})
		if s.Status().Code != codes.Error {
			t.Errorf("transport %v: status %v, want Error", transport, s.Status())
		}
	}
}

func TestTraceBatch(t *testing.T) {
	t.Parallel()
	e, rec := newTracedEnv(t, grpcapi.Config{})
	_, err := e.client.Batch(t.Context(), &apipb.BatchRequest{Commands: []*apipb.Command{
		{Publish: &apipb.PublishRequest{Channel: "plain:a", Data: []byte(`{}`)}},
		{Broadcast: &apipb.BroadcastRequest{Channels: []string{"plain:b", "plain:c"}, Data: []byte(`{}`)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := lastSpan(t, rec)
	wantAttrs(t, s, map[string]string{"gyre.api.method": "batch", "gyre.api.commands": "2", "rpc.method": "Batch"},
		"gyre.channel", "gyre.channels.count")
}

// TestTraceRefused: a call refused for its key has its span, which is no
// server error.
func TestTraceRefused(t *testing.T) {
	t.Parallel()
	e, rec := newTracedEnv(t, grpcapi.Config{Key: testKey})
	_, err := e.client.Info(withKey(t.Context(), "wrong"), &apipb.InfoRequest{})
	if status.Code(err) != grpccodes.Unauthenticated {
		t.Fatalf("%v, want Unauthenticated", err)
	}
	s := lastSpan(t, rec)
	wantAttrs(t, s, map[string]string{"rpc.grpc.status_code": "16"}, "gyre.api.method")
	if s.Status().Code != codes.Unset {
		t.Errorf("status %v, want unset", s.Status())
	}
}

func TestTraceHostileMetadata(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"oversized": {"traceparent", "01-" + callerTrace + "-" + callerSpan + "-01-" + strings.Repeat("a", 600)},
		"bad hex":   {"traceparent", "00-" + strings.Repeat("g", 32) + "-" + callerSpan + "-01"},
		"zero ids":  {"traceparent", "00-" + strings.Repeat("0", 32) + "-" + strings.Repeat("0", 16) + "-01"},
		"version":   {"traceparent", "ff-" + callerTrace + "-" + callerSpan + "-01"},
		"twice":     {"traceparent", "garbage", "traceparent", callerParent},
	}
	for name, kv := range cases {
		e, rec := newTracedEnv(t, grpcapi.Config{})
		resp, err := e.client.Publish(withTrace(t.Context(), kv...), &apipb.PublishRequest{Channel: "plain:a", Data: []byte(`{}`)})
		noErr(t, name, err, resp.GetError())
		s := lastSpan(t, rec)
		if s.Parent().IsValid() || s.SpanContext().TraceID().String() == callerTrace {
			t.Errorf("%s: span under %v, want a new root", name, s.Parent())
		}
	}
	// A tracestate too long is dropped alone.
	e, rec := newTracedEnv(t, grpcapi.Config{})
	ctx := withTrace(t.Context(), "traceparent", callerParent, "tracestate", "a="+strings.Repeat("b", 9000))
	resp, err := e.client.Publish(ctx, &apipb.PublishRequest{Channel: "plain:a", Data: []byte(`{}`)})
	noErr(t, "long tracestate", err, resp.GetError())
	s := lastSpan(t, rec)
	if s.Parent().SpanID().String() != callerSpan || s.SpanContext().TraceState().Len() != 0 {
		t.Errorf("long tracestate: parent %v, tracestate %q; want the caller's span without tracestate", s.Parent(), s.SpanContext().TraceState())
	}
}
