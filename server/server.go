package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/memory"
	"github.com/gyrehq/gyre/internal/frontdoor"
	"github.com/gyrehq/gyre/server/admin"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/metrics"
	"github.com/gyrehq/gyre/server/proxy"
	"github.com/gyrehq/gyre/server/telemetry"
)

// Version of the server, set at build time with -ldflags "-X ...".
var Version = "0.1.0-dev"

// Server is a running Gyre server.
type Server struct {
	cfg     *config.Config
	log     *slog.Logger
	node    *gyre.Node
	metrics *metrics.Metrics
	// mux serves clients; internal serves the API, metrics, health and
	// pprof when http_server.internal_port is set (else it is mux).
	mux      *http.ServeMux
	internal *http.ServeMux
	ws       *gyre.WebsocketHandler // nil when WebSocket is off
	// TLS of the client port and of the internal one; nil is plain.
	tls, internalTLS *tls.Config
	servers          []*http.Server
	ln               net.Listener
	// exec runs the API methods for the HTTP and the gRPC API.
	exec    *api.Executor
	grpcAPI *grpcAPI // nil when grpc_api is off
	uniGRPC *uniGRPC // nil when uni_grpc is off
	// proxyPool holds the gRPC connections of the proxies to the
	// backend; proxyHeaders are the client request headers they forward.
	proxyPool *proxy.Pool
	// hooks sends channel state and user status events; nil without
	// them.
	hooks        *eventHooks
	proxyHeaders []string
	admin        *admin.Handler // nil when admin is off
	// connRate applies client.connection_rate_limit; nil without one.
	connRate *connRate
	// serves lists, per mux, the endpoints its listening line names.
	serves map[*http.ServeMux][]string
	// consumers read API commands from queues (config consumers).
	consumers *consume.Set
	// tel holds the OpenTelemetry providers; off, it hands out none.
	tel *telemetry.Telemetry
	// delivery is the node's delivery tracer with opentelemetry.delivery.
	delivery *deliveryRelay
	// sharedPoll knows the shared_poll channels, which exec refuses to
	// publish into.
	sharedPoll sharedPollIndex
}

// New creates the node and the HTTP handlers for cfg. Nothing listens
// until Start.
func New(cfg *config.Config, log *slog.Logger) (_ *Server, err error) {
	ncfg := nodeConfig(cfg)
	ncfg.Logger = log
	ncfg.SharedPollConcurrency = sharedPollConcurrency(cfg)
	var delivery *deliveryRelay
	if o := cfg.OpenTelemetry; o.Enabled && o.Delivery {
		delivery = &deliveryRelay{}
		ncfg.DeliveryTracer = delivery
	}
	m := metrics.New(metrics.Options{
		Version:                        Version,
		Centrifugo:                     cfg.Prometheus.CentrifugoNames,
		RecoveredPublicationsHistogram: cfg.Prometheus.RecoveredPublicationsHistogram,
	})
	ncfg.Observer = m
	logEngine(cfg, log)
	if _, err := useRedisEngine(cfg, &ncfg, log, m); err != nil {
		return nil, err
	}
	if cfg.EventHooksOn() && ncfg.Occupancy == nil {
		// Presence in memory: one node (Validate refuses a broker that
		// several share), which tracks occupancy itself.
		tr, err := routedOccupancy(cfg, func(route string) (broker.OccupancyTracker, error) {
			return memory.NewOccupancyTracker(memory.OccupancyConfig{Logger: log.With("route", route)})
		})
		if err != nil {
			return nil, err
		}
		ncfg.Occupancy = tr
	}
	if cfg.MapBrokerType() == "memory" {
		// Always there, so that map namespaces added by a reload work.
		mb, err := memory.NewMapBroker(memory.MapConfig{Logger: log})
		if err != nil {
			return nil, fmt.Errorf("server: map_broker: %w", err)
		}
		ncfg.MapBroker = mb
	}
	node, err := gyre.NewNode(ncfg)
	if err != nil {
		if ncfg.MapBroker != nil {
			_ = ncfg.MapBroker.Close()
		}
		if ncfg.Occupancy != nil {
			_ = ncfg.Occupancy.Close()
		}
		return nil, fmt.Errorf("server: %w", err)
	}
	m.Bind(node)
	if dc, ok := ncfg.Occupancy.(broker.OccupancyDropCounter); ok {
		m.OccupancyDropped(dc.OccupancyDropped)
	}
	s := &Server{cfg: cfg, log: log, node: node, metrics: m, mux: http.NewServeMux(), delivery: delivery}
	s.sharedPoll.set(cfg)
	if err := s.setupTelemetry(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.shutdownTelemetry(context.Background())
		}
	}()
	if s.tls, s.internalTLS, err = listenTLS(cfg.HTTPServer); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.internal = s.mux
	if lim := cfg.Client.ConnectionRateLimit; lim > 0 {
		s.connRate = newConnRate(lim, log)
	}
	if cfg.HTTPServer.InternalPort != 0 {
		s.internal = http.NewServeMux()
	}
	if err := s.setupProxies(); err != nil {
		return nil, err
	}
	// One executor runs the methods of the HTTP and the gRPC API. Its
	// RPC hook (api.Config.RPC) is where the RPC proxy plugs in; without
	// one, the rpc method answers 104 "not found", as Centrifugo does.
	s.exec = api.NewExecutor(node, api.Config{Logger: log, SharedPoll: s.sharedPoll.has})
	if err := s.setupConsumers(); err != nil {
		return nil, err
	}
	m.Consumers(s.consumers.Snapshots)
	s.routes()
	if err := s.adminRoutes(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if s.grpcAPI, err = s.newGRPCAPI(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := s.newUniGRPC(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return s, nil
}

// Node is the server's engine.
func (s *Server) Node() *gyre.Node { return s.node }

// Handler is the server's HTTP handler (all endpoints on one port).
func (s *Server) Handler() http.Handler { return s.mux }

// client wraps a client transport's handler: it counts new connections
// against client.connection_rate_limit, takes the user from
// client.user_id_http_header, and keeps the client headers proxies forward
// in the connection's context.
func (s *Server) client(h http.Handler) http.Handler {
	if name := s.cfg.Client.UserIDHTTPHeader; name != "" {
		h = userFromHeader(name, h)
	}
	if len(s.proxyHeaders) > 0 {
		h = proxy.KeepHeaders(s.proxyHeaders, h)
	}
	if s.connRate != nil {
		h = s.connRate.wrap(h)
	}
	return h
}

// userFromHeader authenticates connections whose request carries the
// named header as the user it names (client.user_id_http_header): a proxy
// in front that authenticated the request sets it, and must strip it from
// what clients send. A request without it goes the usual way (token,
// connect proxy, anonymous).
func userFromHeader(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user := r.Header.Get(name); user != "" {
			r = r.WithContext(gyre.WithCredentials(r.Context(), &gyre.Credentials{UserID: user}))
		}
		next.ServeHTTP(w, r)
	})
}

// instrument wraps a handler so that the HTTP metrics count its requests,
// when prometheus.instrument_http_handlers asks for it.
func (s *Server) instrument(handler string, h http.Handler) http.Handler {
	if !s.cfg.Prometheus.InstrumentHTTPHandlers {
		return h
	}
	return s.metrics.InstrumentHTTP(handler, h)
}

func (s *Server) routes() {
	c := s.cfg
	if !c.WebSocket.Disabled {
		s.ws = gyre.NewWebsocketHandler(s.node, gyre.WebsocketConfig{
			MessageSizeLimit:             int64(c.WebSocket.MessageSizeLimit),
			WriteTimeout:                 c.WebSocket.WriteTimeout,
			AllowedOrigins:               c.Client.AllowedOrigins,
			Compression:                  c.WebSocket.Compression,
			CompressionLevel:             c.WebSocket.CompressionLevel,
			CompressionMinSize:           c.WebSocket.CompressionMinSize,
			DecompressedMessageSizeLimit: int64(c.WebSocket.DecompressedMessageSizeLimit),
		})
		s.route(s.mux, "websocket", c.WebSocket.HandlerPrefix, s.instrument("websocket", s.client(s.ws)))
	}
	origins := c.Client.AllowedOrigins
	if c.HTTPStream.Enabled {
		s.route(s.mux, "http_stream", c.HTTPStream.HandlerPrefix, s.instrument("http_stream", s.client(gyre.NewHTTPStreamHandler(s.node, gyre.StreamConfig{
			MaxRequestBodySize: int64(c.HTTPStream.MaxRequestBodySize), AllowedOrigins: origins,
		}))))
	}
	if c.SSE.Enabled {
		s.route(s.mux, "sse", c.SSE.HandlerPrefix, s.instrument("sse", s.client(gyre.NewSSEHandler(s.node, gyre.StreamConfig{
			MaxRequestBodySize: int64(c.SSE.MaxRequestBodySize), AllowedOrigins: origins,
		}))))
	}
	if c.HTTPStream.Enabled || c.SSE.Enabled {
		s.route(s.mux, "emulation", c.Emulation.HandlerPrefix, s.instrument("emulation", gyre.NewEmulationHandler(s.node, gyre.EmulationConfig{
			MaxRequestBodySize: int64(c.Emulation.MaxRequestBodySize), AllowedOrigins: origins,
		})))
	}
	if u := c.UniWebSocket; u.Enabled {
		s.route(s.mux, "uni_websocket", u.HandlerPrefix, s.instrument("uni_websocket", s.client(gyre.NewUniWebsocketHandler(s.node, gyre.UniWebsocketConfig{
			MessageSizeLimit: int64(u.MessageSizeLimit), WriteTimeout: u.WriteTimeout,
			AllowedOrigins: origins, JoinPushMessages: u.JoinPushMessages,
			Compression: u.Compression, CompressionLevel: u.CompressionLevel, CompressionMinSize: u.CompressionMinSize,
			DecompressedMessageSizeLimit: int64(u.DecompressedMessageSizeLimit),
		}))))
	}
	if c.UniSSE.Enabled {
		s.route(s.mux, "uni_sse", c.UniSSE.HandlerPrefix, s.instrument("uni_sse", s.client(gyre.NewUniSSEHandler(s.node, gyre.StreamConfig{
			MaxRequestBodySize: int64(c.UniSSE.MaxRequestBodySize), AllowedOrigins: origins,
		}))))
	}
	if c.UniHTTPStream.Enabled {
		s.route(s.mux, "uni_http_stream", c.UniHTTPStream.HandlerPrefix, s.instrument("uni_http_stream", s.client(gyre.NewUniHTTPStreamHandler(s.node, gyre.StreamConfig{
			MaxRequestBodySize: int64(c.UniHTTPStream.MaxRequestBodySize), AllowedOrigins: origins,
		}))))
	}
	if !c.HTTPAPI.Disabled {
		prefix := c.HTTPAPI.HandlerPrefix
		var h http.Handler = api.NewHandlerFor(s.exec, api.Config{
			Key:                c.HTTPAPI.Key,
			Insecure:           c.HTTPAPI.Insecure,
			TransportErrorMode: c.HTTPAPI.ErrorMode == "transport",
			MaxBodySize:        int64(c.HTTPAPI.MaxRequestBodySize),
			Prefix:             prefix,
			Logger:             s.log,
			OnCall:             s.metrics.APICalls("http"),
			TracerProvider:     s.tel.APITracerProvider(),
		})
		h = s.instrument("api", h)
		mux := s.internalOr(c.HTTPAPI.External)
		mux.Handle(prefix+"/", h)
		// The legacy form (the method in the body) posts to the prefix
		// itself; a redirect to prefix+"/" would lose clients that do
		// not follow it.
		if strings.Trim(prefix, "/") != "" {
			mux.Handle(prefix, h)
		}
		s.note(mux, "api "+prefix+" ("+apiAccess(c.HTTPAPI)+")")
	}
	if c.Health.Enabled {
		s.route(s.internal, "health", c.Health.HandlerPrefix, s.instrument("health", http.HandlerFunc(s.health)))
	}
	if c.Prometheus.Enabled {
		s.route(s.internal, "metrics", c.Prometheus.HandlerPrefix, s.metrics.Handler())
	}
	if c.Debug.Enabled {
		p := strings.TrimSuffix(c.Debug.HandlerPrefix, "/")
		s.note(s.internal, "pprof "+p+"/")
		s.internal.HandleFunc(p+"/", pprof.Index)
		s.internal.HandleFunc(p+"/cmdline", pprof.Cmdline)
		s.internal.HandleFunc(p+"/profile", pprof.Profile)
		s.internal.HandleFunc(p+"/symbol", pprof.Symbol)
		s.internal.HandleFunc(p+"/trace", pprof.Trace)
	}
}

// adminRoutes serves the admin interface when admin.enabled, on the
// internal port unless admin.external.
func (s *Server) adminRoutes() error {
	a := s.cfg.Admin
	if !a.Enabled {
		return nil
	}
	connKey, subKey, separate := adminTokenKeys(s.cfg)
	proxies, err := a.TrustedProxyPrefixes()
	if err != nil {
		return fmt.Errorf("admin.trusted_proxies: %w", err)
	}
	h, err := admin.New(s.node, s.exec, admin.Config{
		Prefix:                     a.HandlerPrefix,
		Password:                   a.Password,
		Secret:                     a.Secret,
		Insecure:                   a.Insecure,
		WebPath:                    a.WebPath,
		WebProxyAddress:            a.WebProxyAddress,
		Version:                    Version,
		TokenKey:                   connKey,
		SubscriptionTokenKey:       subKey,
		SeparateSubscriptionTokens: separate,
		TrustedProxies:             proxies,
		Logger:                     s.log,
		OnAPICall:                  s.metrics.APICalls("http"),
		Consumers:                  s.consumers.Snapshots,
		EventHooks:                 s.hooks.snapshot,
	})
	if err != nil {
		return err
	}
	s.admin = h
	mux := s.internalOr(a.External)
	if err := handle(mux, h.Prefix()+"/", h); err != nil {
		return fmt.Errorf("admin.handler_prefix: %w", err)
	}
	s.note(mux, "admin "+h.Prefix()+"/")
	if a.Insecure {
		s.log.Warn("admin interface without login (admin.insecure): keep it on a trusted network", "prefix", h.Prefix()+"/")
	}
	s.log.Info("admin interface enabled", "prefix", h.Prefix()+"/", "external", a.External || s.cfg.HTTPServer.InternalPort == 0)
	return nil
}

// handle registers h for pattern on mux, with an error where ServeMux
// panics (a pattern another endpoint has, or one it cannot parse).
func handle(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot serve %q: %v", pattern, r)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// adminTokenKeys are the HMAC keys the admin token route signs
// connection and subscription tokens with, and whether the latter are
// separate.
func adminTokenKeys(c *config.Config) (conn, sub string, separate bool) {
	st := c.Client.SubscriptionToken
	return c.Client.Token.HMACSecretKey, st.Token.HMACSecretKey, st.Enabled
}

// internalOr is the mux of an internal endpoint that may be asked to stay
// on the external port.
func (s *Server) internalOr(external bool) *http.ServeMux {
	if external {
		return s.mux
	}
	return s.internal
}

// health answers 200 while the node can serve (its broker is reachable)
// and 503 otherwise, with the state of its consumers in the body. A
// consumer whose source is down does not make the node unhealthy: the
// node still serves its clients, and a load balancer that took it out
// would cut them off without bringing the source back.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	type consumerHealth struct {
		Type      string `json:"type"`
		Running   bool   `json:"running"`
		Connected bool   `json:"connected"`
		Lag       int64  `json:"lag"`
		Error     string `json:"error,omitempty"`
		ErrorTime int64  `json:"error_time_ms,omitempty"`
	}
	var body struct {
		Error     string                    `json:"error,omitempty"`
		Consumers map[string]consumerHealth `json:"consumers,omitempty"`
	}
	status := http.StatusOK
	if err := s.node.Healthy(); err != nil {
		status, body.Error = http.StatusServiceUnavailable, err.Error()
	}
	for _, c := range s.consumers.Snapshots() {
		if body.Consumers == nil {
			body.Consumers = map[string]consumerHealth{}
		}
		body.Consumers[c.Name] = consumerHealth{Type: c.Type, Running: c.Running, Connected: c.Connected, Lag: c.Lag, Error: c.Error, ErrorTime: c.ErrorTime}
	}
	b, _ := json.Marshal(&body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Start runs the node and starts listening. Addr tells where.
func (s *Server) Start() error {
	if err := s.node.Run(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	hs := s.cfg.HTTPServer
	ws := s.ws
	if len(s.proxyHeaders) > 0 || s.cfg.Client.UserIDHTTPHeader != "" || s.connRate != nil {
		// The handshake must go through net/http so that the forwarded
		// headers, or the user's header, are seen and the connection
		// rate is counted (see client).
		ws = nil
	}
	ln, err := s.listen("http_server.port", hs.Address, hs.Port, s.mux, ws, s.tls)
	if err != nil {
		return err
	}
	s.ln = ln
	if hs.InternalPort != 0 {
		addr := hs.InternalAddress
		if addr == "" {
			addr = hs.Address
		}
		if _, err := s.listen("http_server.internal_port", addr, hs.InternalPort, s.internal, nil, s.internalTLS); err != nil {
			return err
		}
	}
	if s.grpcAPI != nil {
		if err := s.grpcAPI.start(s); err != nil {
			return err
		}
	}
	if err := s.startUniGRPC(); err != nil {
		return err
	}
	// Last: a consumer publishes as soon as it runs.
	s.consumers.Start()
	return nil
}

// listenConfig is how the server's sockets listen.
func listenConfig() net.ListenConfig {
	lc := keepAliveOnListener()
	// Go listens with Multipath TCP where the kernel has it. Browsers and
	// the SDKs do not speak it, and the kernel then wraps every plain TCP
	// connection in an MPTCP socket that falls back to TCP, which costs
	// CPU on every system call (7-10 % of the server's CPU per connect).
	lc.SetMultipathTCP(false)
	return lc
}

// listen serves mux on host:port, over TLS with tlsCfg; portKey names the
// config key of the port in the log. With ws and without TLS, WebSocket
// handshakes for its path are taken before net/http sees them (see
// internal/frontdoor): a connect then costs no request parsing, context or
// buffers of net/http.
func (s *Server) listen(portKey, host string, port int, mux *http.ServeMux, ws *gyre.WebsocketHandler, tlsCfg *tls.Config) (net.Listener, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	lc := listenConfig()
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen on %s: %w", addr, err)
	}
	if ws != nil && tlsCfg == nil {
		ln = frontdoor.New(ln, frontdoor.Config{
			Path: s.cfg.WebSocket.HandlerPrefix,
			Upgrade: func(nc net.Conn, head []byte) {
				ws.ServeConn(context.Background(), nc, head)
			},
			HeadTimeout: s.cfg.HTTPServer.ReadHeaderTimeout,
			Logger:      s.log,
		})
	}
	srv := s.httpServer(mux)
	s.servers = append(s.servers, srv)
	serve := srv.Serve
	if tlsCfg != nil {
		// The certificate is in TLSConfig already; ServeTLS adds HTTP/2 to
		// it, so each server gets its own copy.
		srv.TLSConfig = tlsCfg.Clone()
		serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
	}
	go func() {
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "address", addr, "error", err)
		}
	}()
	s.logListening(portKey, ln.Addr().String(), tlsCfg != nil, s.serves[mux])
	return ln, nil
}

// httpServer serves h with the timeouts of http_server. Handlers of
// long-lived streams lift them for their own request once it is read
// (httpstream.Start, the WebSocket upgrade, the admin tail), so that an
// idle, slow or silent peer holds a socket only as long as they allow.
func (s *Server) httpServer(h http.Handler) *http.Server {
	hs := s.cfg.HTTPServer
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: hs.ReadHeaderTimeout,
		ReadTimeout:       hs.ReadTimeout,
		WriteTimeout:      hs.WriteTimeout,
		IdleTimeout:       hs.IdleTimeout,
	}
}

// Addr is the address the server listens on, once started.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops accepting, closes clients with 3001 and stops the node,
// within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	// Consumers first, while the node still publishes: each finishes the
	// batch it is running and acknowledges it.
	errs := []error{s.consumers.Stop(ctx)}
	// Shutdown stops accepting and waits for API requests; it does not
	// wait for hijacked (WebSocket) connections: the node closes those
	// with 3001.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, srv := range s.servers {
		wg.Go(func() {
			err := srv.Shutdown(ctx)
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	if s.grpcAPI != nil {
		wg.Go(func() { s.grpcAPI.stop(ctx) })
	}
	wg.Go(func() {
		err := s.shutdownUniGRPC(ctx)
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	})
	nodeErr := s.node.Shutdown(ctx)
	wg.Wait()
	errs = append(errs, nodeErr)
	if s.hooks != nil {
		// After the node: its tracker no longer hands events over.
		s.hooks.close()
	}
	if s.proxyPool != nil {
		errs = append(errs, s.proxyPool.Close())
	}
	// Last: the spans of everything above go out with it.
	s.shutdownTelemetry(ctx)
	return errors.Join(errs...)
}

// Reload applies what can change without dropping connections: channel
// options and token keys. Existing subscriptions keep what they got; new
// subscriptions and commands use the new rules. Every other change (ports,
// engine, proxies and the namespaces' choice of them ...) waits for a
// restart, and a warning names its keys.
func (s *Server) Reload(cfg *config.Config) error {
	ncfg := nodeConfig(cfg)
	if err := s.node.SetChannelConfig(ncfg.Channels); err != nil {
		return fmt.Errorf("server: reload channels: %w", err)
	}
	s.sharedPoll.set(cfg)
	if err := s.node.SetTokenConfig(ncfg.Token, ncfg.SubscriptionToken); err != nil {
		return fmt.Errorf("server: reload tokens: %w", err)
	}
	if s.admin != nil {
		s.admin.SetTokenKeys(adminTokenKeys(cfg))
	}
	if keys := restartOnly(s.cfg, cfg); len(keys) > 0 {
		s.log.Warn("config reload: these settings changed but apply only after a restart", "keys", keys)
	}
	return nil
}
