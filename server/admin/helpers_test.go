package admin_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/server/admin"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/token"
)

const (
	testPassword = "admin-test-password"
	testSecret   = "admin-test-secret"
	testHMAC     = "admin-test-hmac-key"
)

// clock is a settable time for session expiry and the login limit.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

// newClock starts at the real time (connection tokens signed on it are
// checked by the node's real clock), in whole seconds.
func newClock() *clock { return &clock{now: time.Now().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// env is a node with its admin handler served by httptest.
type env struct {
	t     *testing.T
	node  *gyre.Node
	base  string // server URL + prefix
	srv   *httptest.Server
	h     *admin.Handler
	logs  *logtest.Recorder
	clock *clock
}

func TestMain(m *testing.M) { enginetest.Main(m) }

// testChannels: channels without namespace and "chat:" keep history and
// are open to clients; "wild:" allows wildcard subscriptions.
func testChannels() gyre.ChannelConfig {
	open := gyre.ChannelOptions{HistorySize: 100, HistoryTTL: time.Minute, AllowSubscribeForClient: true}
	return gyre.ChannelConfig{
		WithoutNamespace: open,
		Namespaces: []gyre.Namespace{
			{Name: "chat", ChannelOptions: open},
			{Name: "private"}, // subscription tokens only
			{Name: "wild", ChannelOptions: gyre.ChannelOptions{AllowSubscribeForClient: true, AllowWildcardSubscriptions: true}},
		},
	}
}

// nodeConfig is the configuration of a test node named name.
func nodeConfig(name string) gyre.Config {
	return gyre.Config{Name: name, Version: "test-version", Token: token.Config{HMACSecretKey: testHMAC}, Channels: testChannels()}
}

// newNode runs a node on cfg.
func newNode(t *testing.T, ncfg gyre.Config) *gyre.Node {
	t.Helper()
	n, err := gyre.NewNode(ncfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return n
}

// newEnv serves the admin handler of a fresh memory node with cfg, whose
// unset Password, Secret and Now get the test's.
func newEnv(t *testing.T, cfg admin.Config) *env {
	t.Helper()
	return newEnvOn(t, newNode(t, nodeConfig("node-a")), cfg)
}

func newEnvOn(t *testing.T, n *gyre.Node, cfg admin.Config) *env {
	t.Helper()
	if cfg.Password == "" && !cfg.Insecure {
		cfg.Password = testPassword
	}
	if cfg.Secret == "" && !cfg.Insecure {
		cfg.Secret = testSecret
	}
	return serve(t, n, cfg)
}

// newEnvNoDefaults is newEnv with cfg's password and secret as they are.
func newEnvNoDefaults(t *testing.T, cfg admin.Config) *env {
	t.Helper()
	return serve(t, newNode(t, nodeConfig("node-a")), cfg)
}

func serve(t *testing.T, n *gyre.Node, cfg admin.Config) *env {
	t.Helper()
	e := &env{t: t, node: n, logs: &logtest.Recorder{}, clock: newClock()}
	if cfg.Now == nil {
		cfg.Now = e.clock.Now
	}
	if cfg.Version == "" {
		cfg.Version = "test-version"
	}
	cfg.Logger = slog.New(e.logs)
	exec := api.NewExecutor(n, api.Config{Logger: cfg.Logger})
	h, err := admin.New(n, exec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	mux := http.NewServeMux()
	mux.Handle(h.Prefix()+"/", h)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	e.base = e.srv.URL + h.Prefix()
	return e
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   string
}

func (e *env) do(method, path, tok, contentType, body string) response {
	e.t.Helper()
	return e.doWith(method, path, tok, contentType, body, nil)
}

// doWith is do with more request headers.
func (e *env) doWith(method, path, tok, contentType, body string, header http.Header) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.base+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if tok != "" {
		req.Header.Set("Authorization", "token "+tok)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(b)}
}

func (e *env) get(path, tok string) response { return e.do(http.MethodGet, path, tok, "", "") }

func (e *env) postJSON(path, tok, body string) response {
	return e.do(http.MethodPost, path, tok, "application/json", body)
}

func (e *env) login(password string) response {
	e.t.Helper()
	return e.loginWith(password, nil)
}

// loginWith logs in with more request headers (those of a proxy).
func (e *env) loginWith(password string, header http.Header) response {
	e.t.Helper()
	return e.doWith(http.MethodPost, "/admin/auth", "", "application/x-www-form-urlencoded", url.Values{"password": {password}}.Encode(), header)
}

// waits makes throttled logins of e move its clock instead of sleeping,
// and returns what they waited.
func (e *env) waits() *[]time.Duration {
	var mu sync.Mutex
	var got []time.Duration
	admin.SetSleep(e.h, func(_ context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, d)
		e.clock.advance(d)
		return nil
	})
	return &got
}

// token logs in and returns the session token.
func (e *env) token() string {
	e.t.Helper()
	r := e.login(testPassword)
	if r.status != 200 {
		e.t.Fatalf("login: %d %s", r.status, r.body)
	}
	var v struct{ Token string }
	mustJSON(e.t, r.body, &v)
	if v.Token == "" {
		e.t.Fatalf("login: no token in %s", r.body)
	}
	return v.Token
}
