package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/config"
)

// Version of the server, set at build time with -ldflags "-X ...".
var Version = "0.1.0-dev"

// Server is a running Gyre server.
type Server struct {
	cfg  *config.Config
	log  *slog.Logger
	node *gyre.Node
	mux  *http.ServeMux
	http *http.Server
	ln   net.Listener
}

// New creates the node and the HTTP handlers for cfg. Nothing listens
// until Start.
func New(cfg *config.Config, log *slog.Logger) (*Server, error) {
	ncfg := nodeConfig(cfg)
	ncfg.Logger = log
	node, err := gyre.NewNode(ncfg)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{cfg: cfg, log: log, node: node, mux: http.NewServeMux()}
	s.routes()
	return s, nil
}

// Node is the server's engine.
func (s *Server) Node() *gyre.Node { return s.node }

// Handler is the server's HTTP handler (all endpoints on one port).
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) routes() {
	c := s.cfg
	if !c.WebSocket.Disabled {
		s.mux.Handle(c.WebSocket.HandlerPrefix, gyre.NewWebsocketHandler(s.node, gyre.WebsocketConfig{
			MessageSizeLimit: int64(c.WebSocket.MessageSizeLimit),
			WriteTimeout:     c.WebSocket.WriteTimeout,
			AllowedOrigins:   c.Client.AllowedOrigins,
		}))
	}
	if !c.HTTPAPI.Disabled {
		prefix := c.HTTPAPI.HandlerPrefix
		h := api.NewHandler(s.node, api.Config{
			Key:                c.HTTPAPI.Key,
			Insecure:           c.HTTPAPI.Insecure,
			TransportErrorMode: c.HTTPAPI.ErrorMode == "transport",
			Prefix:             prefix,
			Logger:             s.log,
		})
		s.mux.Handle(prefix+"/", h)
	}
	if c.Health.Enabled {
		s.mux.HandleFunc(c.Health.HandlerPrefix, s.health)
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

// Start runs the node and starts listening. Addr tells where.
func (s *Server) Start() error {
	if err := s.node.Run(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	addr := net.JoinHostPort(s.cfg.HTTPServer.Address, strconv.Itoa(s.cfg.HTTPServer.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", addr, err)
	}
	s.ln = ln
	s.http = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "error", err)
		}
	}()
	s.log.Info("listening", "address", ln.Addr().String())
	return nil
}

// Addr is the address the server listens on, once started.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops accepting, closes clients with 3001 and stops the node,
// within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	if s.http != nil {
		// Shutdown does not wait for hijacked (WebSocket) connections; the
		// node closes those.
		errs = append(errs, s.http.Shutdown(ctx))
	}
	errs = append(errs, s.node.Shutdown(ctx))
	return errors.Join(errs...)
}

// Reload applies what can change without dropping connections: channel
// options and token keys. Existing subscriptions keep what they got; new
// subscriptions and commands use the new rules.
func (s *Server) Reload(cfg *config.Config) error {
	ncfg := nodeConfig(cfg)
	if err := s.node.SetChannelConfig(ncfg.Channels); err != nil {
		return fmt.Errorf("server: reload channels: %w", err)
	}
	if err := s.node.SetTokenConfig(ncfg.Token, ncfg.SubscriptionToken); err != nil {
		return fmt.Errorf("server: reload tokens: %w", err)
	}
	return nil
}
