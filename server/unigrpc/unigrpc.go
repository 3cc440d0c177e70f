package unigrpc

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/unigrpc/unistreampb"
)

// Config configures the uni_grpc server. The zero value works.
type Config struct {
	// MaxReceiveMessageSize is the largest ConnectRequest accepted, in
	// bytes; 0 keeps gRPC's default (4 MiB). A larger one ends the call
	// with RESOURCE_EXHAUSTED before a client is made.
	MaxReceiveMessageSize int
	// TLS, when set, serves over TLS; nil is plain HTTP/2.
	TLS *tls.Config
	// WriteTimeout bounds the sending of one frame of pushes to a
	// consumer that does not read; 0 means 1s. Past it the stream ends.
	WriteTimeout time.Duration
	// HandshakeTimeout bounds how long a new connection may take to
	// complete its handshake (TLS and the HTTP/2 preface); one that does
	// not is closed. Zero keeps gRPC's default, 120 s.
	HandshakeTimeout time.Duration
	// IdleTimeout is how long a connection may stay without a stream;
	// then it is sent GOAWAY and closed. Zero keeps such connections open
	// (the keepalive pings still drop a consumer that is gone).
	IdleTimeout time.Duration
	// Logger receives refused calls; nil discards.
	Logger *slog.Logger
}

// Keepalive of the HTTP/2 connections: the server pings a connection idle
// for keepaliveTime and drops it when no answer comes in keepaliveTimeout,
// so that a consumer gone without a FIN does not hold its client. Consumers
// may ping no more often than keepaliveMinTime.
const (
	keepaliveTime    = 25 * time.Second
	keepaliveTimeout = 5 * time.Second
	keepaliveMinTime = 5 * time.Second
)

// Server is a gRPC server with the CentrifugoUniStream service of one node.
type Server struct {
	grpc *grpc.Server
	log  *slog.Logger
}

// New creates the uni_grpc server of n. Nothing listens until Serve.
func New(n *gyre.Node, cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = time.Second
	}
	s := &Server{log: log}
	opts := []grpc.ServerOption{
		grpc.ForceServerCodecV2(codec{}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time: keepaliveTime, Timeout: keepaliveTimeout, MaxConnectionIdle: cfg.IdleTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
		grpc.StreamInterceptor(s.logRefused),
	}
	if cfg.HandshakeTimeout > 0 {
		opts = append(opts, grpc.ConnectionTimeout(cfg.HandshakeTimeout))
	}
	if cfg.MaxReceiveMessageSize > 0 {
		opts = append(opts, grpc.MaxRecvMsgSize(cfg.MaxReceiveMessageSize))
	}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	s.grpc = grpc.NewServer(opts...)
	unistreampb.RegisterCentrifugoUniStreamServer(s.grpc, &service{node: n, writeTimeout: cfg.WriteTimeout})
	return s
}

// Serve accepts consumers on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.grpc.Serve(ln)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for the streams to end, which they do
// when the node shuts down and closes their clients with a disconnect
// push. When ctx ends first the remaining streams are cut.
func (s *Server) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
		return ctx.Err()
	}
}

// logRefused logs calls that end in an error, which Consume never returns:
// those are ConnectRequests too large or malformed, refused by gRPC before
// Consume runs.
func (s *Server) logRefused(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	if err != nil {
		s.log.Info("uni_grpc: call refused", "method", info.FullMethod, "remote", remote(ss.Context()), "error", err)
	}
	return err
}

func remote(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// service runs one client per Consume call.
type service struct {
	unistreampb.UnimplementedCentrifugoUniStreamServer
	node         *gyre.Node
	writeTimeout time.Duration
}

// Consume connects a client with req and streams its pushes until the
// engine closes it (after a disconnect push) or the consumer goes away.
// The call then ends with status OK, as Centrifugo's does: the reason is
// in the disconnect push.
func (s *service) Consume(req *unistreampb.ConnectRequest, stream grpc.ServerStreamingServer[unistreampb.Push]) error {
	ctx := stream.Context()
	t := newTransport(stream, s.writeTimeout)
	c := s.node.NewClient(ctx, t)
	c.Connect(connectRequest(req))
	var d *gyre.Disconnect
	select {
	case <-t.closing:
		d = t.disconnect
	case <-ctx.Done():
	}
	// A write still in flight is one blocked by flow control; returning
	// cancels the stream, which ends it.
	t.ended.Store(true)
	c.Close(d)
	return nil
}

// connectRequest is req in the client protocol's terms.
func connectRequest(req *unistreampb.ConnectRequest) *protocol.ConnectRequest {
	out := &protocol.ConnectRequest{
		Token: req.Token, Data: req.Data, Name: req.Name, Version: req.Version, Headers: req.Headers,
	}
	if len(req.Subs) > 0 {
		out.Subs = make(map[string]*protocol.SubscribeRequest, len(req.Subs))
		for ch, sr := range req.Subs {
			if sr == nil {
				sr = &unistreampb.SubscribeRequest{}
			}
			out.Subs[ch] = &protocol.SubscribeRequest{Recover: sr.Recover, Epoch: sr.Epoch, Offset: sr.Offset}
		}
	}
	return out
}
