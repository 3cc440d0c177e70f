package grpcapi

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/gyrehq/gyre/server/api"
)

// Config configures the gRPC API.
type Config struct {
	// Key is the API key: every call must carry the metadata
	// "authorization: apikey <Key>", or it is refused with
	// UNAUTHENTICATED. Empty accepts every call, as Centrifugo does.
	Key string
	// TransportErrorMode answers a method's error with a gRPC status
	// (its code mapped, the API error in the details) instead of in the
	// response's error field. A call may ask for it with the metadata
	// "x-centrifugo-error-mode: transport".
	TransportErrorMode bool
	// MaxReceiveMessageSize caps an incoming message in bytes; 0 keeps
	// gRPC's default (4 MiB).
	MaxReceiveMessageSize int
	// TLS, when set, serves over TLS.
	TLS *tls.Config
	// Reflection registers the gRPC server reflection service, which
	// lets tools such as grpcurl list and call the API without its proto.
	// Like Centrifugo, it answers without the key: it tells the schema,
	// not data.
	Reflection bool
	// HandshakeTimeout bounds how long a new connection may take to
	// complete its handshake (TLS and the HTTP/2 preface); one that does
	// not is closed. Zero keeps gRPC's default, 120 s.
	HandshakeTimeout time.Duration
	// IdleTimeout is how long a connection may stay without a call; then
	// it is sent GOAWAY and closed, and the client dials again for its
	// next call. Zero keeps idle connections open.
	IdleTimeout time.Duration
	// Logger logs refused calls; nil logs nothing.
	Logger *slog.Logger
	// OnCall, when set, is told about every call of a method: its name as
	// the HTTP API spells it, its error code (0 for success) and how long
	// it took.
	OnCall func(method string, code uint32, d time.Duration)
	// TracerProvider, when set, traces the calls: a SERVER span per call
	// named by its full method (centrifugal.centrifugo.api.CentrifugoApi/
	// Publish), continuing the trace of the call's W3C traceparent
	// metadata; the executor names the API method and channels on it.
	// Nil traces nothing and reads no trace metadata.
	TracerProvider trace.TracerProvider
}

// NewServer creates a gRPC server serving the API on exec. The caller
// serves it on a listener and stops it (GracefulStop).
func NewServer(exec *api.Executor, cfg Config) *grpc.Server {
	svc := &service{exec: exec, cfg: cfg}
	desc, err := svc.serviceDesc()
	if err != nil {
		// The table and api.proto are compiled in: a method without its
		// rpc is a mistake that every test of the package shows.
		panic(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var opts []grpc.ServerOption
	if cfg.HandshakeTimeout > 0 {
		opts = append(opts, grpc.ConnectionTimeout(cfg.HandshakeTimeout))
	}
	if cfg.IdleTimeout > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: cfg.IdleTimeout}))
	}
	var chain []grpc.UnaryServerInterceptor
	if cfg.TracerProvider != nil {
		// First, so that a call refused for its key has its span too.
		chain = append(chain, tracing(cfg.TracerProvider))
	}
	if cfg.Key != "" {
		chain = append(chain, keyAuth(cfg.Key, cfg.Logger))
	}
	if len(chain) > 0 {
		opts = append(opts, grpc.ChainUnaryInterceptor(chain...))
	}
	if cfg.MaxReceiveMessageSize > 0 {
		opts = append(opts, grpc.MaxRecvMsgSize(cfg.MaxReceiveMessageSize))
	}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(desc, svc)
	if cfg.Reflection {
		reflection.Register(srv)
	}
	return srv
}

// keyAuth refuses calls without "authorization: apikey <key>".
func keyAuth(key string, log *slog.Logger) grpc.UnaryServerInterceptor {
	want := []byte(key)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !authorized(ctx, want) {
			attrs := []any{"method", info.FullMethod}
			if p, ok := peer.FromContext(ctx); ok {
				attrs = append(attrs, "remote", p.Addr.String())
			}
			log.Info("grpc api call with a wrong or missing key", attrs...)
			return nil, status.Error(codes.Unauthenticated, "unauthenticated")
		}
		return handler(ctx, req)
	}
}

func authorized(ctx context.Context, key []byte) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return false
	}
	a := vals[0]
	const scheme = "apikey "
	if len(a) <= len(scheme) || !strings.EqualFold(a[:len(scheme)], scheme) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(a[len(scheme):]), key) == 1
}

// transportMode reports whether a method's error becomes a gRPC status.
func (s *service) transportMode(ctx context.Context) bool {
	if s.cfg.TransportErrorMode {
		return true
	}
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get("x-centrifugo-error-mode")
	return len(v) > 0 && v[0] == "transport"
}
