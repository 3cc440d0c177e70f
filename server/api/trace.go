package api

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre/internal/tracectx"
)

// Tracing (OpenTelemetry). The front ends (HTTP here, gRPC in
// server/grpcapi, the consumers in server/consume) start a span per call
// or message when they are given a TracerProvider; the executor then
// names the method and channels on the span of its ctx and hands the
// span's context to every publication it makes, so that the fan-out on
// every node joins the caller's trace. Only the OpenTelemetry API is used
// here: the server brings the SDK. Without a TracerProvider nothing is
// parsed and no span is made; what the executor does for a ctx without a
// span is a context lookup per call.

// Span attributes of the API, a contract with docs and dashboards.
const (
	AttrMethod        = attribute.Key("gyre.api.method")
	AttrChannel       = attribute.Key("gyre.channel")
	AttrChannelsCount = attribute.Key("gyre.channels.count")
	AttrCommands      = attribute.Key("gyre.api.commands")
	AttrErrorCode     = attribute.Key("gyre.api.error_code")
)

// Longest traceparent and tracestate values read. A version 00
// traceparent is 55 bytes and W3C caps a tracestate at 32 members of
// 256 bytes; anything longer is dropped before parsing, so that a hostile
// header costs no more than its length check.
const (
	MaxTraceParent = 512
	MaxTraceState  = 8192
)

// tracerName is the instrumentation scope of the API's spans.
const tracerName = "github.com/gyrehq/gyre/server/api"

// RemoteContext returns ctx with the remote span context that the W3C
// traceparent and tracestate values carry, so that a span started in it
// continues the caller's trace. When traceparent is missing, over
// MaxTraceParent bytes or not valid (another version's layout, bad hex,
// all-zero ids), ctx comes back as it is and the span starts a new trace;
// a tracestate over MaxTraceState bytes or malformed is dropped alone.
// Bad input is never an error: tracing must not refuse a request.
func RemoteContext(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" || len(traceparent) > MaxTraceParent {
		return ctx
	}
	if len(tracestate) > MaxTraceState {
		tracestate = ""
	}
	return propagation.TraceContext{}.Extract(ctx, &traceHeaders{traceparent, tracestate})
}

// traceHeaders carries the two W3C values to the propagator.
type traceHeaders struct{ parent, state string }

func (h *traceHeaders) Get(key string) string {
	switch key {
	case "traceparent":
		return h.parent
	case "tracestate":
		return h.state
	}
	return ""
}

func (*traceHeaders) Set(string, string) {}

func (*traceHeaders) Keys() []string { return []string{"traceparent", "tracestate"} }

// TraceError records on s that its call was answered with e: status
// Error, and the code as gyre.api.error_code. Nil e records nothing.
func TraceError(s trace.Span, e *Error) {
	if e == nil || !s.IsRecording() {
		return
	}
	s.SetAttributes(AttrErrorCode.Int64(int64(e.Code)))
	s.SetStatus(codes.Error, e.Message)
}

// annotate names method m and the channels of its request req on s.
func annotate(s trace.Span, m *Method, req any) {
	if !s.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, AttrMethod.String(m.Name))
	switch r := req.(type) {
	case *BroadcastRequest:
		attrs = append(attrs, AttrChannelsCount.Int(len(r.Channels)))
		if len(r.Channels) > 0 {
			attrs = append(attrs, AttrChannel.String(r.Channels[0]))
		}
	case *BatchRequest:
		attrs = append(attrs, AttrCommands.Int(r.len()))
	default:
		if ch := requestChannel(req); ch != "" {
			attrs = append(attrs, AttrChannel.String(ch))
		}
	}
	s.SetAttributes(attrs...)
}

// requestChannel is the one channel a request is about; "" for none.
func requestChannel(req any) string {
	switch r := req.(type) {
	case *PublishRequest:
		return r.Channel
	case *ChannelRequest:
		return r.Channel
	case *HistoryRequest:
		return r.Channel
	case *SubscribeRequest:
		return r.Channel
	case *UnsubscribeRequest:
		return r.Channel
	case *MapPublishRequest:
		return r.Channel
	case *MapRemoveRequest:
		return r.Channel
	case *MapReadStateRequest:
		return r.Channel
	case *MapReadStreamRequest:
		return r.Channel
	case *SharedPollPublishRequest:
		return r.Channel
	}
	return ""
}

// traceOf is the trace context that publications made in ctx carry: the
// span of ctx, when it is valid and sampled; nil otherwise (an unsampled
// trace is not followed into the fan-out).
func traceOf(ctx context.Context) []byte {
	return tracectx.Encode(trace.SpanContextFromContext(ctx))
}
