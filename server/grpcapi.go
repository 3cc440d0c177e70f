package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"google.golang.org/grpc"

	"github.com/gyrehq/gyre/server/grpcapi"
)

// grpcAPI is the server API over gRPC, on its own port.
type grpcAPI struct {
	srv *grpc.Server
	ln  net.Listener
}

// newGRPCAPI builds the gRPC API server of s's config on s's executor;
// nil when grpc_api is off.
func (s *Server) newGRPCAPI() (*grpcAPI, error) {
	g := s.cfg.GRPCAPI
	if !g.Enabled {
		return nil, nil
	}
	tlsCfg, err := serverTLS(g.TLS)
	if err != nil {
		return nil, fmt.Errorf("grpc_api.tls: %w", err)
	}
	if g.Key == "" {
		s.log.Warn("grpc_api.key is empty: the gRPC API accepts calls without a key")
	}
	srv := grpcapi.NewServer(s.exec, grpcapi.Config{
		Key:                   g.Key,
		TransportErrorMode:    g.ErrorMode == "transport",
		MaxReceiveMessageSize: g.MaxReceiveMessageSize,
		TLS:                   tlsCfg,
		Reflection:            g.Reflection,
		TracerProvider:        s.tel.APITracerProvider(),
		HandshakeTimeout:      s.cfg.HTTPServer.ReadHeaderTimeout,
		IdleTimeout:           s.cfg.HTTPServer.IdleTimeout,
		Logger:                s.log,
		OnCall:                s.metrics.APICalls("grpc"),
	})
	return &grpcAPI{srv: srv}, nil
}

// start listens on grpc_api.address:port and serves.
func (a *grpcAPI) start(s *Server) error {
	g := s.cfg.GRPCAPI
	addr := net.JoinHostPort(g.Address, strconv.Itoa(g.Port))
	lc := listenConfig()
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("server: grpc_api: listen on %s: %w", addr, err)
	}
	a.ln = ln
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error("grpc api server stopped", "address", addr, "error", err)
		}
	}()
	access := "api key required"
	if g.Key == "" {
		access = "no grpc_api.key: accepts every call"
	}
	s.logListening("grpc_api.port", ln.Addr().String(), g.TLS.Enabled, []string{"grpc_api (" + access + ")"}, "reflection", g.Reflection)
	return nil
}

// stop stops accepting calls and waits for those running, until ctx ends;
// then it cuts them.
func (a *grpcAPI) stop(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		a.srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		a.srv.Stop()
		<-done
	}
}

// GRPCAPIAddr is the address the gRPC API listens on, once started; nil
// when it is off.
func (s *Server) GRPCAPIAddr() net.Addr {
	if s.grpcAPI == nil || s.grpcAPI.ln == nil {
		return nil
	}
	return s.grpcAPI.ln.Addr()
}
