package grpcapi

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gyrehq/gyre/server/api"
)

// tracing starts a SERVER span per call, continuing the trace of the
// call's traceparent metadata. A small interceptor rather than otelgrpc's
// stats handler: the span names and attributes are the API's contract,
// the trace metadata must be size-checked before it is parsed (as the
// HTTP API's headers are), and nothing else (message events, metrics) is
// wanted.
func tracing(tp trace.TracerProvider) grpc.UnaryServerInterceptor {
	tracer := tp.Tracer("github.com/gyrehq/gyre/server/grpcapi")
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		ctx = api.RemoteContext(ctx, first(md, "traceparent"), api.TraceState(md.Get("tracestate")))
		name := strings.TrimPrefix(info.FullMethod, "/")
		service, method, _ := strings.Cut(name, "/")
		ctx, span := tracer.Start(ctx, name,
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("rpc.system", "grpc"),
				attribute.String("rpc.service", service),
				attribute.String("rpc.method", method),
			))
		defer span.End()
		resp, err := handler(ctx, req)
		code := status.Code(err)
		span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)))
		if serverFault(code) {
			span.SetStatus(codes.Error, status.Convert(err).Message())
		}
		return resp, err
	}
}

// serverFault reports whether a call that ended with code failed on the
// server's side, which marks its span as an error (OpenTelemetry's rule
// for gRPC servers); a method's error in transport error mode is marked
// by the API error it carries.
func serverFault(code grpccodes.Code) bool {
	switch code {
	case grpccodes.Unknown, grpccodes.DeadlineExceeded, grpccodes.Unimplemented,
		grpccodes.Internal, grpccodes.Unavailable, grpccodes.DataLoss:
		return true
	}
	return false
}

// first is the first value of key in md, "" without one.
func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}
