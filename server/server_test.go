package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/token"
)

const (
	testSecret = "server-test-secret"
	testKey    = "server-test-key"
)

func testConfig() *config.Config {
	c := config.Default()
	c.Client.Token.HMACSecretKey = testSecret
	c.HTTPAPI.Key = testKey
	c.Channel.WithoutNamespace.AllowSubscribeForClient = true
	c.Channel.Namespaces = []config.Namespace{{Name: "locked"}}
	return c
}

// newServer creates a server for c whose handler is served by httptest
// (Start is not called) and returns the base URL.
func newServer(t *testing.T, c *config.Config) (*Server, string) {
	t.Helper()
	s, err := New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Node().Run(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Node().Shutdown(ctx)
		srv.Close()
	})
	return s, srv.URL
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAPILegacyPath: the legacy form of the API is POST to the prefix
// itself, answered there: API clients that do not follow redirects (httpx,
// PHP's curl by default) would fail on a redirect to the prefix with a
// slash.
func TestAPILegacyPath(t *testing.T) {
	t.Parallel()
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, prefix := range []string{"/api", "/v1"} {
		t.Run(prefix, func(t *testing.T) {
			t.Parallel()
			c := testConfig()
			c.HTTPAPI.HandlerPrefix = prefix
			_, base := newServer(t, c)
			req, err := http.NewRequest(http.MethodPost, base+prefix, strings.NewReader(`{"method":"info","params":{}}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-API-Key", testKey)
			resp, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(b), `{"result":{"nodes":`) {
				t.Fatalf("status %d: %.200s", resp.StatusCode, b)
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(c *config.Config)
		method string
		path   string
		want   int
	}{
		{"API", nil, "POST", "/api/info", 200},
		{"API disabled", func(c *config.Config) { c.HTTPAPI.Disabled = true }, "POST", "/api/info", 404},
		{"API prefix", func(c *config.Config) { c.HTTPAPI.HandlerPrefix = "/v1" }, "POST", "/v1/info", 200},
		{"API error mode from config", func(c *config.Config) { c.HTTPAPI.ErrorMode = "transport" }, "POST", "/api/history", 400},
		{"health off by default", nil, "GET", "/health", 404},
		{"health", func(c *config.Config) { c.Health.Enabled = true }, "GET", "/health", 200},
		{"health prefix", func(c *config.Config) { c.Health.Enabled = true; c.Health.HandlerPrefix = "/ready" }, "GET", "/ready", 200},
		{"metrics off by default", nil, "GET", "/metrics", 404},
		{"metrics", func(c *config.Config) { c.Prometheus.Enabled = true }, "GET", "/metrics", 200},
		{"pprof off by default", nil, "GET", "/debug/pprof/", 404},
		{"pprof", func(c *config.Config) { c.Debug.Enabled = true }, "GET", "/debug/pprof/", 200},
		{"websocket needs an upgrade", nil, "GET", "/connection/websocket", 400},
		{"websocket disabled", func(c *config.Config) { c.WebSocket.Disabled = true }, "GET", "/connection/websocket", 404},
		{"no demo unless enabled", nil, "GET", "/", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := testConfig()
			if tt.setup != nil {
				tt.setup(c)
			}
			_, base := newServer(t, c)
			var status int
			var body string
			if tt.method == "POST" {
				status, body = post(t, base+tt.path, `{}`)
			} else {
				status, body = get(t, base+tt.path)
			}
			if status != tt.want {
				t.Fatalf("%s %s: status %d, want %d: %.200s", tt.method, tt.path, status, tt.want, body)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.Health.Enabled = true
	s, base := newServer(t, c)
	status, body := get(t, base+"/health")
	if status != 200 || body != "{}" {
		t.Fatalf("status %d: %s", status, body)
	}
	// A node that is shutting down is not healthy.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Node().Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	status, body = get(t, base+"/health")
	var r struct {
		Error string `json:"error"`
	}
	if status != http.StatusServiceUnavailable || json.Unmarshal([]byte(body), &r) != nil || r.Error == "" {
		t.Fatalf("status %d: %s; want 503 with an error", status, body)
	}
}

func TestDemo(t *testing.T) {
	t.Parallel()
	s, base := newServer(t, testConfig())
	s.EnableDemo()
	status, body := get(t, base+"/")
	if status != 200 || !strings.Contains(strings.ToLower(body), "<html") {
		t.Fatalf("status %d: %.200s", status, body)
	}
	if status, _ := get(t, base+"/other"); status != 404 {
		t.Fatalf("demo page served at /other: status %d", status)
	}
}

func TestReload(t *testing.T) {
	t.Parallel()
	c := testConfig()
	s, base := newServer(t, c)
	cl := dialConnect(t, base, "alice")
	if code := cl.subscribe("locked:a"); code != 103 {
		t.Fatalf("subscribe before reload: %d, want 103", code)
	}

	next := testConfig()
	next.Channel.Namespaces[0].AllowSubscribeForClient = true
	next.Client.Token.HMACSecretKey = "rotated"
	if err := s.Reload(next); err != nil {
		t.Fatal(err)
	}
	if code := cl.subscribe("locked:a"); code != 0 {
		t.Fatalf("subscribe after reload: %d", code)
	}
	// New connections need tokens of the new key.
	other := dial(t, base)
	if _, closed := other.connect(signToken(t, testSecret, "bob")); closed != 3500 {
		t.Fatalf("connect with the old key: close %d, want 3500", closed)
	}
	fresh := dial(t, base)
	if _, closed := fresh.connect(signToken(t, "rotated", "bob")); closed != 0 {
		t.Fatalf("connect with the new key: close %d", closed)
	}

	bad := testConfig()
	bad.Channel.Namespaces = append(bad.Channel.Namespaces, config.Namespace{Name: "x"})
	if err := s.Reload(bad); err == nil {
		t.Fatal("reload with an invalid namespace name succeeded")
	}
	if code := cl.subscribe("locked:b"); code != 0 {
		t.Fatalf("a failed reload changed the running config: subscribe %d", code)
	}
}

// TestReloadRestartOnly: a reload names the changes it cannot apply and
// stays quiet about those it applies.
func TestReloadRestartOnly(t *testing.T) {
	t.Parallel()
	rec := &logtest.Recorder{}
	s, err := New(testConfig(), slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	applied := testConfig()
	applied.Channel.Namespaces[0].Presence = true
	applied.Client.Token.HMACSecretKey = "rotated"
	applied.Client.InsecureSkipTokenSignatureVerify = true
	if err := s.Reload(applied); err != nil {
		t.Fatal(err)
	}
	if logs := rec.Find(slog.LevelWarn, "config reload: these settings changed but apply only after a restart", nil); len(logs) != 0 {
		t.Fatalf("warned about applied changes: %v", logs[0].Attr("keys"))
	}

	next := testConfig()
	next.GRPCAPI.Port = 10001
	next.Client.Proxy.Connect.Endpoint = "http://app/connect"
	next.Channel.Namespaces[0].SubscribeProxyEnabled = true
	if err := s.Reload(next); err != nil {
		t.Fatal(err)
	}
	logs := rec.Find(slog.LevelWarn, "config reload: these settings changed but apply only after a restart", nil)
	if len(logs) != 1 {
		t.Fatalf("warnings = %d, want 1", len(logs))
	}
	keys := logs[0].Attr("keys")
	for _, want := range []string{"grpc_api.port", "client.proxy.connect.endpoint", "proxy options"} {
		if !strings.Contains(keys, want) {
			t.Errorf("keys %s lack %s", keys, want)
		}
	}
	if strings.Contains(keys, "hmac") || strings.Contains(keys, "subscribe_proxy_name") {
		t.Errorf("keys %s name applied or unused settings", keys)
	}
}

// TestStartShutdown runs the server on real ports: the client port and an
// internal one, then shuts it down with a client connected.
func TestStartShutdown(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.HTTPServer.InternalPort = freePort(t)
	c.Health.Enabled = true
	c.Prometheus.Enabled = true
	s, err := New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr().String()
	internal := "http://127.0.0.1:" + strconv.Itoa(c.HTTPServer.InternalPort)

	for _, tt := range []struct {
		url  string
		want int
	}{
		{base + "/health", 404},
		{base + "/metrics", 404},
		{internal + "/health", 200},
		{internal + "/metrics", 200},
	} {
		if status, _ := get(t, tt.url); status != tt.want {
			t.Errorf("GET %s: status %d, want %d", tt.url, status, tt.want)
		}
	}
	if status, _ := post(t, internal+"/api/info", `{}`); status != 200 {
		t.Errorf("API on the internal port: status %d", status)
	}
	if status, _ := post(t, base+"/api/info", `{}`); status != 404 {
		t.Errorf("API on the client port: status %d, want 404", status)
	}

	cl := dialConnect(t, base, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if code := cl.waitClose(); code != 3001 {
		t.Fatalf("client closed with %d, want 3001", code)
	}
	if _, err := net.DialTimeout("tcp", s.Addr().String(), time.Second); err == nil {
		t.Fatal("client port still accepts after shutdown")
	}
}

func TestAPIExternal(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.HTTPServer.InternalPort = 1 // any: only the routing is looked at
	c.HTTPAPI.External = true
	_, base := newServer(t, c)
	if status, body := post(t, base+"/api/info", `{}`); status != 200 {
		t.Fatalf("API with external: status %d: %s", status, body)
	}
}

// start runs a server for c on its real ports until the test ends.
func start(t *testing.T, c *config.Config) *Server {
	t.Helper()
	s, _ := startLogged(t, c)
	return s
}

// startLogged is start, logging into a recorder.
func startLogged(t *testing.T, c *config.Config) (*Server, *logtest.Recorder) {
	t.Helper()
	logs := &logtest.Recorder{}
	s, err := New(c, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s, logs
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func signToken(t *testing.T, secret, user string) string {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(secret), map[string]any{"sub": user, "exp": time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// rawClient speaks the JSON protocol over a WebSocket, one command at a
// time: enough for the server's own tests.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	id   int
}

func dial(t *testing.T, base string) *rawClient {
	t.Helper()
	conn, _, _, err := ws.Dialer{Timeout: 5 * time.Second}.Dial(context.Background(), "ws"+strings.TrimPrefix(base, "http")+"/connection/websocket")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawClient{t: t, conn: conn}
}

func dialConnect(t *testing.T, base, user string) *rawClient {
	t.Helper()
	c := dial(t, base)
	if _, closed := c.connect(signToken(t, testSecret, user)); closed != 0 {
		t.Fatalf("connect: closed %d", closed)
	}
	return c
}

type rawReply struct {
	ID    int `json:"id"`
	Error *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// call sends one command and returns its reply, or the close code when
// the server closes instead.
func (c *rawClient) call(cmd string) (rawReply, int) {
	c.t.Helper()
	c.id++
	msg := `{"id":` + strconv.Itoa(c.id) + `,` + cmd + `}`
	if err := wsutil.WriteClientText(c.conn, []byte(msg)); err != nil {
		c.t.Fatal(err)
	}
	return c.replyOrClose()
}

// reply reads until the reply to the latest command.
func (c *rawClient) reply() rawReply {
	c.t.Helper()
	r, closed := c.replyOrClose()
	if closed != 0 {
		c.t.Fatalf("closed %d while waiting for reply %d", closed, c.id)
	}
	return r
}

func (c *rawClient) replyOrClose() (rawReply, int) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		frame, op, err := wsutil.ReadServerData(c.conn)
		if err != nil {
			var ce wsutil.ClosedError
			if ok := asClosed(err, &ce); ok {
				return rawReply{}, int(ce.Code)
			}
			c.t.Fatalf("read: %v", err)
		}
		if op != ws.OpText {
			continue
		}
		for _, line := range strings.Split(string(frame), "\n") {
			var r rawReply
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				c.t.Fatalf("decode %q: %v", line, err)
			}
			if r.ID == c.id {
				return r, 0
			}
		}
	}
}

func asClosed(err error, ce *wsutil.ClosedError) bool {
	if e, ok := err.(wsutil.ClosedError); ok {
		*ce = e
		return true
	}
	return false
}

func (c *rawClient) connect(tok string) (rawReply, int) {
	c.t.Helper()
	return c.call(`"connect":{"token":"` + tok + `"}`)
}

// subscribe returns the error code of the reply, 0 on success.
func (c *rawClient) subscribe(channel string) int {
	c.t.Helper()
	r, closed := c.call(`"subscribe":{"channel":"` + channel + `"}`)
	if closed != 0 {
		c.t.Fatalf("subscribe %s: closed %d", channel, closed)
	}
	if r.Error != nil {
		return r.Error.Code
	}
	return 0
}

// waitClose reads until the server closes and returns the close code.
func (c *rawClient) waitClose() int {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := wsutil.ReadServerData(c.conn)
		if err == nil {
			continue
		}
		var ce wsutil.ClosedError
		if asClosed(err, &ce) {
			return int(ce.Code)
		}
		c.t.Fatalf("read: %v", err)
	}
}

// TestWebsocketHandshakes connects through the real listener in the ways a
// handshake can arrive: whole (taken before net/http), split over two
// packets (served by net/http), with the connect command right behind it,
// from a refused origin, and with the empty Sec-WebSocket-Protocol line
// Python's websockets sends for an empty subprotocol list.
func TestWebsocketHandshakes(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.Client.AllowedOrigins = []string{"https://good.example"}
	s := start(t, c)
	headWith := func(origin, extra string) string {
		return "GET /connection/websocket HTTP/1.1\r\nHost: " + s.Addr().String() +
			"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13" +
			"\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: " + origin + "\r\n" + extra + "\r\n"
	}
	head := func(origin string) string { return headWith(origin, "") }
	emptyProtocol := headWith("https://good.example", "Sec-WebSocket-Protocol: \r\n")
	connectFrame := func() string {
		var b bytes.Buffer
		msg := `{"id":1,"connect":{"token":"` + signToken(t, testSecret, "alice") + `"}}`
		if err := wsutil.WriteClientText(&b, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}()
	tests := []struct {
		name       string
		parts      []string
		wantStatus int
		connected  bool // the connect command was sent along: expect its reply
	}{
		{"whole", []string{head("https://good.example")}, 101, false},
		{"split", []string{head("https://good.example")[:30], head("https://good.example")[30:]}, 101, false},
		{"connect behind the head", []string{head("https://good.example") + connectFrame}, 101, true},
		{"refused origin", []string{head("https://evil.example")}, 403, false},
		{"empty subprotocol", []string{emptyProtocol}, 101, false},
		{"empty subprotocol split", []string{emptyProtocol[:30], emptyProtocol[30:]}, 101, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			for i, p := range tt.parts {
				if i > 0 {
					time.Sleep(20 * time.Millisecond) // apart, whatever the listener makes of it
				}
				if _, err := io.WriteString(nc, p); err != nil {
					t.Fatal(err)
				}
			}
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(nc)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if resp.StatusCode != 101 {
				return
			}
			if p, ok := resp.Header["Sec-Websocket-Protocol"]; ok {
				t.Fatalf("answer names subprotocol %q, none was offered", p)
			}
			cl := &rawClient{t: t, conn: bufferedConn{Conn: nc, r: br}}
			if tt.connected {
				cl.id = 1
				if got := cl.reply(); got.Error != nil {
					t.Fatalf("connect sent behind the head: error %d", got.Error.Code)
				}
			} else if r, closed := cl.connect(signToken(t, testSecret, "alice")); closed != 0 || r.Error != nil {
				t.Fatalf("connect: closed %d, reply %+v", closed, r)
			}
			if code := cl.subscribe("news"); code != 0 {
				t.Fatalf("subscribe: error %d", code)
			}
		})
	}
}

// bufferedConn reads through the reader that took the handshake answer.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// TestInsecureSkipTokenSignatureVerify: the key lets a token signed with
// another secret connect, as Centrifugo's does; without it the token is
// refused with 3500.
func TestInsecureSkipTokenSignatureVerify(t *testing.T) {
	t.Parallel()
	_, base := newServer(t, testConfig())
	if _, closed := dial(t, base).connect(signToken(t, "someone else's secret", "eve")); closed != 3500 {
		t.Fatalf("without the key: close %d, want 3500", closed)
	}
	c := testConfig()
	c.Client.InsecureSkipTokenSignatureVerify = true
	_, base = newServer(t, c)
	if _, closed := dial(t, base).connect(signToken(t, "someone else's secret", "eve")); closed != 0 {
		t.Fatalf("with the key: close %d, want a connection", closed)
	}
}

// TestClientProtocolLimits: client.max_json_depth and
// client.token.max_length bound what a client sends, from the config.
func TestClientProtocolLimits(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.Client.MaxJSONDepth = 4
	c.Client.Token.MaxLength = 64
	_, base := newServer(t, c)

	// A connect token longer than 64 bytes is refused; real tokens of
	// this key are, so the key's bound is what refuses them.
	if _, closed := dial(t, base).connect(signToken(t, testSecret, "alice")); closed != 3500 {
		t.Fatalf("token over max_length: close %d, want 3500", closed)
	}

	c = testConfig()
	c.Client.MaxJSONDepth = 4
	_, base = newServer(t, c)
	cl := dialConnect(t, base, "bob")
	if _, closed := cl.call(`"publish":{"channel":"chat:a","data":[[1]]}`); closed != 0 {
		t.Fatalf("data nested 2 deep under a bound of 4: closed %d", closed)
	}
	if _, closed := cl.call(`"publish":{"channel":"chat:a","data":[[[[[1]]]]]}`); closed != 3501 {
		t.Fatalf("data nested 5 deep over a bound of 4: close %d, want 3501", closed)
	}
}
