package proxy

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/status"
)

// Tracing: with Config.TracerProvider set, every call of the proxy
// service is a CLIENT span "proxy <type>" (proxy connect, proxy
// subscribe ...), a child of the span in the call's context (an API call
// that runs an RPC, say) or else a new trace, and the backend is sent
// its W3C traceparent (and tracestate) as an HTTP header or gRPC
// metadata, so that the backend's own spans join the trace.

// spanNames are the span names of the call types.
var spanNames = map[string]string{}

func init() {
	for _, typ := range []string{"connect", "refresh", "subscribe", "publish", "sub_refresh", "rpc", "subscribe_stream", "map_publish", "map_remove"} {
		spanNames[typ] = "proxy " + typ
	}
}

// tracing is the tracing part of a Proxy; its zero value traces nothing.
type tracing struct {
	tracer trace.Tracer
	// attrs are the attributes every span of the proxy has.
	attrs []attribute.KeyValue
}

func newTracing(cfg Config, isHTTP bool) tracing {
	if cfg.TracerProvider == nil {
		return tracing{}
	}
	t := tracing{tracer: cfg.TracerProvider.Tracer("github.com/gyrehq/gyre/server/proxy")}
	t.attrs = append(t.attrs, attribute.String("gyre.proxy.name", cfg.Name))
	if u, err := url.Parse(cfg.Endpoint); err == nil {
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			host = u.Hostname()
		}
		t.attrs = append(t.attrs, attribute.String("server.address", host))
		if n, err := strconv.Atoi(port); err == nil {
			t.attrs = append(t.attrs, attribute.Int("server.port", n))
		}
	}
	if isHTTP {
		t.attrs = append(t.attrs, attribute.String("http.request.method", http.MethodPost))
	} else {
		t.attrs = append(t.attrs, attribute.String("rpc.system", "grpc"))
	}
	return t
}

// start starts the span of a call of type typ, about channel when it is
// not "", and adds its trace context to the headers hdr sent with the
// call, which it returns (made when nil).
func (t *tracing) start(ctx context.Context, typ, channel string, hdr map[string]string) (context.Context, trace.Span, map[string]string) {
	name, ok := spanNames[typ]
	if !ok {
		name = "proxy " + typ
	}
	attrs := make([]attribute.KeyValue, 0, len(t.attrs)+2)
	attrs = append(append(attrs, t.attrs...), attribute.String("gyre.proxy.kind", typ))
	if channel != "" {
		attrs = append(attrs, attribute.String("gyre.channel", channel))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if hdr == nil {
		hdr = make(map[string]string, 2)
	}
	// The span's context replaces whatever a client sent under these
	// names (forwarded with http_headers): the backend's parent is this
	// call.
	delete(hdr, "Traceparent")
	delete(hdr, "Tracestate")
	propagation.TraceContext{}.Inject(ctx, headerCarrier(hdr))
	return ctx, span, hdr
}

// end ends span of a call that ended with err (nil when the backend
// answered, refusing or not): a failure is the span's error. grpc: the
// call was a gRPC one, whose status code the span gets.
func (t *tracing) end(span trace.Span, err error, grpc bool) {
	if grpc {
		span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(status.Code(err))))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// headerCarrier sets the propagator's fields in forwarded headers, under
// canonical names as forwarded ones are.
type headerCarrier map[string]string

func (h headerCarrier) Get(key string) string { return h[http.CanonicalHeaderKey(key)] }
func (h headerCarrier) Set(key, value string) { h[http.CanonicalHeaderKey(key)] = value }
func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// responseStatus records the HTTP status of a backend's response on the
// span of ctx.
func responseStatus(ctx context.Context, code int) {
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.SetAttributes(attribute.Int("http.response.status_code", code))
	}
}

// channelOf is the channel a request is about; "" when none.
func channelOf(req any) string {
	if c, ok := req.(interface{ GetChannel() string }); ok {
		return c.GetChannel()
	}
	return ""
}
