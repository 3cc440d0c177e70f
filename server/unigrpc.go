package server

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/gyrehq/gyre/server/unigrpc"
)

// uniGRPC is the listening part of the uni_grpc transport; nil when the
// transport is off.
type uniGRPC struct {
	srv *unigrpc.Server
	ln  net.Listener
}

// newUniGRPC creates the uni_grpc server when uni_grpc.enabled is set.
func (s *Server) newUniGRPC() error {
	u := s.cfg.UniGRPC
	if !u.Enabled {
		return nil
	}
	tlsCfg, err := serverTLS(u.TLS)
	if err != nil {
		return fmt.Errorf("uni_grpc.tls: %w", err)
	}
	s.uniGRPC = &uniGRPC{srv: unigrpc.New(s.node, unigrpc.Config{
		MaxReceiveMessageSize: u.MaxReceiveMessageSize,
		TLS:                   tlsCfg,
		HandshakeTimeout:      s.cfg.HTTPServer.ReadHeaderTimeout,
		IdleTimeout:           s.cfg.HTTPServer.IdleTimeout,
		Logger:                s.log,
	})}
	return nil
}

// startUniGRPC listens on uni_grpc.address:port.
func (s *Server) startUniGRPC() error {
	if s.uniGRPC == nil {
		return nil
	}
	u := s.cfg.UniGRPC
	addr := net.JoinHostPort(u.Address, strconv.Itoa(u.Port))
	lc := listenConfig()
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("server: uni_grpc: listen on %s: %w", addr, err)
	}
	s.uniGRPC.ln = ln
	go func() {
		if err := s.uniGRPC.srv.Serve(ln); err != nil {
			s.log.Error("uni_grpc server stopped", "address", addr, "error", err)
		}
	}()
	s.logListening("uni_grpc.port", ln.Addr().String(), u.TLS.Enabled, []string{"uni_grpc"})
	return nil
}

// UniGRPCAddr is the address the uni_grpc transport listens on, once
// started; nil when it is off.
func (s *Server) UniGRPCAddr() net.Addr {
	if s.uniGRPC == nil || s.uniGRPC.ln == nil {
		return nil
	}
	return s.uniGRPC.ln.Addr()
}

// shutdownUniGRPC stops accepting consumers and waits, within ctx, for
// their streams to end as the node closes their clients.
func (s *Server) shutdownUniGRPC(ctx context.Context) error {
	if s.uniGRPC == nil {
		return nil
	}
	return s.uniGRPC.srv.Shutdown(ctx)
}
