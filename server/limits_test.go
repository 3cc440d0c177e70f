package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/server/config"
)

// loadConfig reads a JSON config on top of testConfig's secrets.
func loadConfig(t *testing.T, js string) *config.Config {
	t.Helper()
	c, unknown, err := config.LoadBytes([]byte(js), "json")
	if err != nil || len(unknown) > 0 {
		t.Fatalf("config: %v (unknown keys %v)", err, unknown)
	}
	c.Client.Token.HMACSecretKey = testSecret
	c.HTTPAPI.Key = testKey
	c.Channel.WithoutNamespace.AllowSubscribeForClient = true
	return c
}

func TestCommandRateLimitKeys(t *testing.T) {
	for _, tt := range []struct {
		disconnect bool
		closed     int
		code       int
	}{{false, 0, 111}, {true, 3013, 0}} {
		t.Run("disconnect="+strconv.FormatBool(tt.disconnect), func(t *testing.T) {
			// One subscribe an hour: the second is over the limit however
			// slow the machine.
			c := loadConfig(t, `{"client": {"rate_limit": {"disconnect": `+strconv.FormatBool(tt.disconnect)+`,
				"client_command": {"enabled": true, "subscribe": {"enabled": true, "buckets": [{"interval": "1h", "rate": 1}]}}}}}`)
			_, base := newServer(t, c)
			cl := dialConnect(t, base, "42")
			if code := cl.subscribe("a"); code != 0 {
				t.Fatalf("first subscribe: error %d", code)
			}
			r, closed := cl.call(`"subscribe":{"channel":"b"}`)
			code := 0
			if r.Error != nil {
				code = r.Error.Code
			}
			if closed != tt.closed || code != tt.code {
				t.Fatalf("second subscribe: error %d, closed %d; want error %d, closed %d", code, closed, tt.code, tt.closed)
			}
		})
	}
}

func TestCommandRateLimitOffSections(t *testing.T) {
	// Buckets of a section that is not enabled limit nothing.
	c := loadConfig(t, `{"client": {"rate_limit": {"client_command": {"enabled": false,
		"subscribe": {"enabled": true, "buckets": [{"interval": "1h", "rate": 1}]}},
		"user_command": {"enabled": true, "subscribe": {"enabled": false, "buckets": [{"interval": "1h", "rate": 1}]}}}}}`)
	_, base := newServer(t, c)
	cl := dialConnect(t, base, "42")
	for _, ch := range []string{"a", "b", "c"} {
		if code := cl.subscribe(ch); code != 0 {
			t.Fatalf("subscribe %s: error %d", ch, code)
		}
	}
}

func TestCommandRateLimitValidated(t *testing.T) {
	c := loadConfig(t, `{"client": {"rate_limit": {"user_command": {"enabled": true,
		"publish": {"enabled": true, "buckets": [{"interval": "0s", "rate": 0}]}}}}}`)
	err := c.Validate()
	for _, key := range []string{"client.rate_limit.user_command.publish.buckets[0].interval", "client.rate_limit.user_command.publish.buckets[0].rate"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("validate: %v; want an error naming %s", err, key)
		}
	}
}

// TestChannelLimitZero: client.channel_limit 0 means no limit, as in
// Centrifugo; the default stays 128.
func TestChannelLimitZero(t *testing.T) {
	for _, tt := range []struct {
		limit, ok int
	}{{0, 140}, {128, 128}} {
		t.Run(strconv.Itoa(tt.limit), func(t *testing.T) {
			c := testConfig()
			if c.Client.ChannelLimit != 128 {
				t.Fatalf("default channel_limit %d, want 128", c.Client.ChannelLimit)
			}
			c.Client.ChannelLimit = tt.limit
			_, base := newServer(t, c)
			cl := dialConnect(t, base, "42")
			for i := range tt.ok {
				if code := cl.subscribe("ch" + strconv.Itoa(i)); code != 0 {
					t.Fatalf("subscribe %d: error %d", i, code)
				}
			}
			if tt.limit > 0 {
				if code := cl.subscribe("one-more"); code != 106 {
					t.Fatalf("subscribe over the limit: error %d, want 106", code)
				}
			}
		})
	}
}

// dialStatus opens a WebSocket with header set and returns the HTTP
// status of a refused handshake, 0 when it succeeds.
func dialStatus(t *testing.T, base string, header http.Header) (*rawClient, int) {
	t.Helper()
	d := ws.Dialer{Timeout: 5 * time.Second}
	if header != nil {
		d.Header = ws.HandshakeHeaderHTTP(header)
	}
	conn, _, _, err := d.Dial(context.Background(), "ws"+strings.TrimPrefix(base, "http")+"/connection/websocket")
	if err != nil {
		if se, ok := err.(ws.StatusError); ok {
			return nil, int(se)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawClient{t: t, conn: conn}, 0
}

type fakeClock struct{ now time.Duration }

func (c *fakeClock) Now() time.Duration { return c.now }

func TestConnectionRateLimit(t *testing.T) {
	c := testConfig()
	c.Client.ConnectionRateLimit = 2
	s, base := newServer(t, c)
	clock := &fakeClock{}
	s.connRate.now = clock.Now
	for i := range 2 {
		if _, status := dialStatus(t, base, nil); status != 0 {
			t.Fatalf("connection %d: status %d", i, status)
		}
	}
	if _, status := dialStatus(t, base, nil); status != http.StatusServiceUnavailable {
		t.Fatalf("third connection in the same second: status %d, want 503", status)
	}
	clock.now += time.Second / 2 // one token back at two a second
	cl, status := dialStatus(t, base, nil)
	if status != 0 {
		t.Fatalf("connection after half a second: status %d", status)
	}
	if _, closed := cl.connect(signToken(t, testSecret, "42")); closed != 0 {
		t.Fatalf("connect: closed %d", closed)
	}
	if _, status := dialStatus(t, base, nil); status != http.StatusServiceUnavailable {
		t.Fatalf("next connection: status %d, want 503", status)
	}
}

func TestUserIDHTTPHeader(t *testing.T) {
	c := testConfig()
	c.Client.UserIDHTTPHeader = "X-User-Id"
	c.Channel.WithoutNamespace.Presence = true
	_, base := newServer(t, c)

	// With the header and no token: the header's user.
	cl, _ := dialStatus(t, base, http.Header{"X-User-Id": {"alice"}})
	if _, closed := cl.connect(""); closed != 0 {
		t.Fatalf("connect with the user header: closed %d", closed)
	}
	if code := cl.subscribe("room"); code != 0 {
		t.Fatalf("subscribe: error %d", code)
	}
	// With the header and a token: the token's user.
	withToken, _ := dialStatus(t, base, http.Header{"X-User-Id": {"mallory"}})
	if _, closed := withToken.connect(signToken(t, testSecret, "bob")); closed != 0 {
		t.Fatalf("connect with token: closed %d", closed)
	}
	if code := withToken.subscribe("room"); code != 0 {
		t.Fatalf("subscribe: error %d", code)
	}
	status, body := post(t, base+"/api/presence", `{"channel":"room"}`)
	if status != 200 || !strings.Contains(body, `"user":"alice"`) || !strings.Contains(body, `"user":"bob"`) || strings.Contains(body, "mallory") {
		t.Fatalf("presence: %d %s; want alice (header) and bob (token)", status, body)
	}

	// Without the header or a token: refused as before.
	bare, _ := dialStatus(t, base, nil)
	if _, closed := bare.connect(""); closed != 3501 {
		t.Fatalf("connect without header or token: closed %d, want 3501", closed)
	}
}

func TestAPIMaxRequestBodySize(t *testing.T) {
	c := testConfig()
	if c.HTTPAPI.MaxRequestBodySize != 16<<20 {
		t.Fatalf("default http_api.max_request_body_size %d, want 16 MiB", c.HTTPAPI.MaxRequestBodySize)
	}
	c.HTTPAPI.MaxRequestBodySize = 100
	_, base := newServer(t, c)
	if status, body := post(t, base+"/api/info", `{}`); status != 200 {
		t.Fatalf("small request: %d %s", status, body)
	}
	big := `{"channel":"a","data":{"x":"` + strings.Repeat("x", 100) + `"}}`
	if status, _ := post(t, base+"/api/publish", big); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("request over the limit: status %d, want 413", status)
	}
}

// TestWebsocketMessageSizeLimit: websocket.message_size_limit 0 means the
// default, 64 KiB, not "no limit".
func TestWebsocketMessageSizeLimit(t *testing.T) {
	for _, tt := range []struct{ limit, size int }{{0, 64<<10 + 1}, {1000, 1001}} {
		t.Run(strconv.Itoa(tt.limit), func(t *testing.T) {
			c := testConfig()
			c.WebSocket.MessageSizeLimit = tt.limit
			_, base := newServer(t, c)
			cl := dialConnect(t, base, "42")
			// Just under the limit passes (a valid command padded with
			// spaces).
			cmd := `{"id":2,"ping":{}}`
			if err := wsutil.WriteClientText(cl.conn, []byte(cmd+strings.Repeat(" ", tt.size-1-len(cmd)))); err != nil {
				t.Fatal(err)
			}
			cl.id = 2
			if _, closed := cl.replyOrClose(); closed != 0 {
				t.Fatalf("message at the limit: closed %d", closed)
			}
			if err := wsutil.WriteClientText(cl.conn, []byte(cmd+strings.Repeat(" ", tt.size-len(cmd)))); err != nil {
				t.Fatal(err)
			}
			if code := cl.waitClose(); code != 1009 {
				t.Fatalf("message over the limit: closed %d, want 1009", code)
			}
		})
	}
}

func TestTagsFilterLimits(t *testing.T) {
	leaf := `{"key":"k","cmp":"eq","val":"v"}`
	three := `{"op":"and","nodes":[` + leaf + `,` + leaf + `]}` // three nodes
	for _, tt := range []struct {
		maxNodes int
		want     int
	}{{0, 0}, {3, 0}, {2, 107}} {
		t.Run(strconv.Itoa(tt.maxNodes), func(t *testing.T) {
			c := testConfig()
			c.Channel.WithoutNamespace.AllowTagsFilter = true
			if tt.maxNodes > 0 {
				c.Client.TagsFilter.MaxNodes = tt.maxNodes
			}
			_, base := newServer(t, c)
			cl := dialConnect(t, base, "42")
			r, closed := cl.call(`"subscribe":{"channel":"a","tf":` + three + `}`)
			code := 0
			if r.Error != nil {
				code = r.Error.Code
			}
			if closed != 0 || code != tt.want {
				t.Fatalf("subscribe with a three-node filter: error %d, closed %d; want error %d", code, closed, tt.want)
			}
		})
	}
}

// TestUserIDHTTPHeaderWithConnectProxy: the connect proxy decides the
// connections without the header, not those the proxy in front vouched
// for.
func TestUserIDHTTPHeaderWithConnectProxy(t *testing.T) {
	var calls atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"result":{"user":"from-backend"}}`))
	}))
	t.Cleanup(backend.Close)
	c := testConfig()
	c.Client.UserIDHTTPHeader = "X-User-Id"
	c.Client.Proxy.Connect.Enabled = true
	c.Client.Proxy.Connect.Endpoint = backend.URL
	c.Channel.WithoutNamespace.Presence = true
	_, base := newServer(t, c)

	withHeader, _ := dialStatus(t, base, http.Header{"X-User-Id": {"alice"}})
	if _, closed := withHeader.connect(""); closed != 0 {
		t.Fatalf("connect with the header: closed %d", closed)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("connect proxy called %d times for a connection with the header", n)
	}
	without, _ := dialStatus(t, base, nil)
	if _, closed := without.connect(""); closed != 0 {
		t.Fatalf("connect without the header: closed %d", closed)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("connect proxy called %d times, want 1", n)
	}
	for _, cl := range []*rawClient{withHeader, without} {
		if code := cl.subscribe("room"); code != 0 {
			t.Fatalf("subscribe: error %d", code)
		}
	}
	status, body := post(t, base+"/api/presence", `{"channel":"room"}`)
	if status != 200 || !strings.Contains(body, `"user":"alice"`) || !strings.Contains(body, `"user":"from-backend"`) {
		t.Fatalf("presence: %d %s; want alice and from-backend", status, body)
	}
}
