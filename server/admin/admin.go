package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/consume"
)

// Config configures the admin interface.
type Config struct {
	// Prefix is the URL path everything is served under ("" is the root).
	Prefix string
	// Password logs in; Secret signs the session tokens. Both are needed
	// unless Insecure.
	Password, Secret string
	// Insecure serves every route without a token.
	Insecure bool
	// WebPath, when set, is a directory holding the web application to
	// serve instead of the embedded one.
	WebPath string
	// WebProxyAddress, when set, is the URL of a running development
	// server of the web application, which the handler proxies to.
	WebProxyAddress string
	// Version is the server version init reports.
	Version string
	// TokenKey is the HMAC key of connection tokens
	// (client.token.hmac_secret_key), and of subscription tokens unless
	// SeparateSubscriptionTokens, when SubscriptionTokenKey is theirs
	// (client.subscription_token). An empty key leaves the token route
	// answering 400 for its kind.
	TokenKey, SubscriptionTokenKey string
	SeparateSubscriptionTokens     bool
	// Logger logs refusals; nil logs nothing.
	Logger *slog.Logger
	// OnAPICall, when set, is told about every call of the API route, as
	// api.Config.OnCall.
	OnAPICall func(method string, code uint32, d time.Duration)
	// Now is the clock of session expiry and of the login rate limit;
	// nil is time.Now.
	Now func() time.Time
	// SessionTTL is how long a session token is valid; 0 is 24 hours.
	SessionTTL time.Duration
	// LoginFailures failed logins within LoginWindow from one client
	// address throttle its further attempts: they are answered one at a
	// time, LoginWindow/LoginFailures apart; 0 means 10 within a minute.
	LoginFailures int
	LoginWindow   time.Duration
	// TrustedProxies are the reverse proxies whose forwarding headers
	// (X-Forwarded-For, X-Real-IP, Forwarded) name the client the login
	// limit counts against; a request from any other peer is counted
	// against its socket address.
	TrustedProxies []netip.Prefix
	// PingInterval is how often the tail sends a comment to keep its
	// stream open; 0 is 15 seconds.
	PingInterval time.Duration
	// Consumers, when set, reports the states of the node's consumers
	// (config consumers) for the consumers route; nil is none.
	Consumers func() []consume.Snapshot
	// EventHooks, when set, reports the queues of the node's event hook
	// proxies (channel state and user status events) for the event_hooks
	// route, in the order to show them; nil is none.
	EventHooks func() []EventHookQueue
}

// Handler serves the admin interface.
type Handler struct {
	node   *gyre.Node
	cfg    Config
	log    *slog.Logger
	mux    *http.ServeMux
	api    *api.Handler
	logins *loginLimiter
	// sleep waits for a throttled login's turn (tests replace it).
	sleep func(context.Context, time.Duration) error
	// keys are the HMAC keys of the token route, which a config reload
	// may change (SetTokenKeys).
	keys atomic.Pointer[tokenKeys]
}

type tokenKeys struct{ conn, sub string }

// SetTokenKeys changes the HMAC keys the token route signs with, as
// Config.TokenKey, SubscriptionTokenKey and SeparateSubscriptionTokens
// (a server calls it when a config reload changes them).
func (h *Handler) SetTokenKeys(conn, sub string, separate bool) {
	if !separate {
		sub = conn
	}
	h.keys.Store(&tokenKeys{conn: conn, sub: sub})
}

// New creates the admin handler of node n; the API route runs its methods
// on exec (nil: an executor of its own), without the API key (the session
// token stands for it).
func New(n *gyre.Node, exec *api.Executor, cfg Config) (*Handler, error) {
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	if cfg.Prefix != "" && !strings.HasPrefix(cfg.Prefix, "/") {
		cfg.Prefix = "/" + cfg.Prefix
	}
	if strings.ContainsAny(cfg.Prefix, "{} \t\n") {
		return nil, fmt.Errorf("admin: prefix %q: no braces or spaces", cfg.Prefix)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = 24 * time.Hour
	}
	if cfg.LoginFailures == 0 {
		cfg.LoginFailures = 10
	}
	if cfg.LoginWindow == 0 {
		cfg.LoginWindow = time.Minute
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = 15 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		node:   n,
		cfg:    cfg,
		log:    log,
		mux:    http.NewServeMux(),
		logins: newLoginLimiter(cfg.LoginFailures, cfg.LoginWindow, cfg.Now),
		sleep:  sleep,
	}
	h.SetTokenKeys(cfg.TokenKey, cfg.SubscriptionTokenKey, cfg.SeparateSubscriptionTokens)
	if exec == nil {
		exec = api.NewExecutor(n, api.Config{Logger: log})
	}
	p := cfg.Prefix
	h.api = api.NewHandlerFor(exec, api.Config{Insecure: true, Prefix: p + "/admin/api", Logger: log, OnCall: cfg.OnAPICall})
	routes := []struct {
		method, path string
		h            http.Handler
	}{
		{"GET", "/admin/init", http.HandlerFunc(h.init)},
		{"POST", "/admin/auth", http.HandlerFunc(h.auth)},
		{"POST", "/admin/api", h.secure(h.api)},
		{"GET", "/admin/tail", h.secureStream(http.HandlerFunc(h.tail))},
		{"GET", "/admin/nodes", h.secure(http.HandlerFunc(h.nodes))},
		{"GET", "/admin/consumers", h.secure(http.HandlerFunc(h.consumers))},
		{"GET", "/admin/event_hooks", h.secure(http.HandlerFunc(h.eventHooks))},
		{"GET", "/admin/methods", h.secure(http.HandlerFunc(h.methods))},
		{"POST", "/admin/filter", h.secure(http.HandlerFunc(h.filter))},
		{"POST", "/admin/token", h.secure(http.HandlerFunc(h.token))},
	}
	for _, rt := range routes {
		h.mux.Handle(rt.method+" "+p+rt.path, rt.h)
		// The route with another method: 405, as Centrifugo answers.
		h.mux.HandleFunc(p+rt.path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", rt.method)
			writeError(w, http.StatusMethodNotAllowed, "use "+rt.method)
		})
	}
	// Any other PREFIX/admin/ path is an unknown route, not a page of
	// the application.
	h.mux.HandleFunc(p+"/admin/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such admin route: "+r.Method+" "+r.URL.Path)
	})
	app, err := h.app()
	if err != nil {
		return nil, err
	}
	h.mux.Handle(p+"/", app)
	return h, nil
}

// Prefix is the URL path the handler serves (its Config.Prefix, cleaned).
// Mount the handler at Prefix+"/".
func (h *Handler) Prefix() string { return h.cfg.Prefix }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// requestToken is the session token of r: "Authorization: token <t>",
// or with inQuery, the token query parameter when r has no Authorization
// header.
func requestToken(r *http.Request, inQuery bool) string {
	if a := r.Header.Get("Authorization"); a != "" {
		f := strings.Fields(a)
		if len(f) == 2 && strings.EqualFold(f[0], "token") {
			return f[1]
		}
		return ""
	}
	if inQuery {
		return r.URL.Query().Get("token")
	}
	return ""
}

// authenticated checks r's token (see requestToken); the error says why
// it is refused.
func (h *Handler) authenticated(r *http.Request, inQuery bool) error {
	if h.cfg.Insecure {
		return nil
	}
	if h.cfg.Secret == "" {
		return fmt.Errorf("admin.secret is not set")
	}
	tok := requestToken(r, inQuery)
	if tok == "" {
		return fmt.Errorf("no token")
	}
	return checkSession(h.cfg.Secret, tok, h.cfg.Now())
}

// secure lets through the requests with a valid session token in their
// Authorization header. A token in the URL is not looked at: URLs end up
// in logs, histories and Referer headers.
func (h *Handler) secure(next http.Handler) http.Handler { return h.guard(next, false) }

// secureStream is secure for an EventSource's route, which takes the
// token from the query as well: EventSource cannot send a header.
func (h *Handler) secureStream(next http.Handler) http.Handler { return h.guard(next, true) }

func (h *Handler) guard(next http.Handler, inQuery bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.authenticated(r, inQuery); err != nil {
			h.log.Info("admin request refused", "path", r.URL.Path, "remote", h.remote(r), "reason", err.Error())
			writeError(w, http.StatusUnauthorized, "unauthorized")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// remote is the client address of r for the logs (see clientAddr).
func (h *Handler) remote(r *http.Request) string {
	if a := clientAddr(r, h.cfg.TrustedProxies); a.IsValid() {
		return a.String()
	}
	return r.RemoteAddr
}

func (h *Handler) init(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"insecure":      h.cfg.Insecure,
		"edition":       "oss",
		"authenticated": h.authenticated(r, false) == nil,
		"version":       h.cfg.Version,
		"node_name":     h.node.Name(),
		"tokens":        h.keys.Load().conn != "",
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers {"error": {"message": msg}}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg}})
}
