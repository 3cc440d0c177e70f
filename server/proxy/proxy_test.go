package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server"
	"github.com/gyrehq/gyre/server/config"
)

// kinds are the proxy protocols every test runs over.
var kinds = []string{"http", "grpc"}

// gyre is a running server whose proxies point at backends.
type gyre struct {
	url string
	log *logtest.Recorder
	srv *server.Server
}

// proxyConfig is a configuration with every proxy pointing at b over
// kind:
//   - chat: subscribe, publish and sub_refresh through the default proxies;
//   - other: subscribe through the named proxy "second" (at b2);
//   - open: no proxy, subscribe allowed for clients; closed: no proxy, no
//     permission; news: no proxy (connect results subscribe to it).
func proxyConfig(kind string, b, b2 *backend) *config.Config {
	c := config.Default()
	p := func(hook string) config.Proxy {
		return config.Proxy{Endpoint: b.endpoint(kind, hook), Timeout: 2 * time.Second, IncludeConnectionMeta: true}
	}
	c.Client.Proxy.Connect = config.EnabledProxy{Enabled: true, Proxy: p("connect")}
	c.Client.Proxy.Connect.HTTPHeaders = []string{"Authorization"}
	c.Channel.Proxy.Subscribe = p("subscribe")
	c.Channel.Proxy.Publish = p("publish")
	c.Channel.Proxy.SubRefresh = p("sub_refresh")
	c.RPC.Proxy = p("rpc")
	c.RPC.WithoutNamespace = config.RPCOptions{ProxyEnabled: true, ProxyName: "default"}
	c.RPC.Namespaces = []config.RPCNamespace{{Name: "second", RPCOptions: config.RPCOptions{ProxyEnabled: true, ProxyName: "second"}}}
	c.RPC.Ping.Enabled, c.RPC.Ping.Method = true, "ping"
	second := config.Proxy{Endpoint: b2.endpoint(kind, "subscribe"), Timeout: 2 * time.Second}
	if kind == "http" {
		// One named proxy serves subscribe and rpc: over HTTP both go to
		// its one URL, which the second backend answers as subscribe.
		second.Endpoint = b2.httpURL + "/subscribe"
	}
	c.Proxies = []config.NamedProxy{{Name: "second", Proxy: second}}
	ns := func(name string, o config.ChannelOptions) config.Namespace {
		o.SubscribeProxyName, o.PublishProxyName, o.SubRefreshProxyName = "default", "default", "default"
		return config.Namespace{Name: name, ChannelOptions: o}
	}
	c.Channel.Namespaces = []config.Namespace{
		ns("chat", config.ChannelOptions{SubscribeProxyEnabled: true, PublishProxyEnabled: true, SubRefreshProxyEnabled: true,
			HistorySize: 10, HistoryTTL: time.Minute}),
		ns("other", config.ChannelOptions{SubscribeProxyEnabled: true, SubscribeProxyName: "second"}),
		ns("open", config.ChannelOptions{AllowSubscribeForClient: true}),
		ns("closed", config.ChannelOptions{}),
		ns("news", config.ChannelOptions{}),
	}
	// ns() set the default name over "second"; put it back.
	c.Channel.Namespaces[1].SubscribeProxyName = "second"
	return c
}

func startGyre(t *testing.T, c *config.Config) *gyre {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	rec := &logtest.Recorder{}
	s, err := server.New(c, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Node().Run(); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		hs.Close()
	})
	return &gyre{url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/connection/websocket", log: rec, srv: s}
}

// defaultAnswers make the backend accept everything.
func defaultAnswers(b *backend) {
	b.setBody("connect", `{"result":{"user":"56","info":{"name":"alice"},"data":{"welcome":true},
		"channels":["news:a"],"subs":{"news:b":{"data":{"sub":"b"},"info":{"seat":7}}},"meta":{"plan":"pro"}}}`)
	b.setBody("subscribe", `{"result":{"info":{"role":"reader"},"data":{"history":[]}}}`)
	b.setBody("publish", `{"result":{"data":{"text":"rewritten"},"tags":{"by":"backend"}}}`)
	b.setBody("rpc", `{"result":{"data":{"answer":42}}}`)
	b.setBody("refresh", fmt.Sprintf(`{"result":{"expire_at":%d}}`, time.Now().Add(time.Hour).Unix()))
	b.setBody("sub_refresh", fmt.Sprintf(`{"result":{"expire_at":%d}}`, time.Now().Add(time.Hour).Unix()))
}

func connect(t *testing.T, g *gyre, opts ...wstest.Option) (*wstest.Client, *protocol.ConnectResult) {
	t.Helper()
	c := wstest.Dial(t, g.url, protocol.TypeJSON, opts...)
	rep := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Name: "go-test", Version: "1.0", Data: []byte(`{"hi":1}`)}})
	if rep.Error != nil {
		t.Fatalf("connect: error %d %s", rep.Error.Code, rep.Error.Message)
	}
	return c, rep.Connect
}

func jsonEq(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %q is not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("%s = %s, want %s", what, gb, wb)
	}
}

// field returns a request field as JSON text.
func field(c call, name string) string {
	v, ok := c.body[name]
	if !ok {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestHooks(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b, b2 := newBackend(t), newBackend(t)
			defaultAnswers(b)
			b2.setBody("subscribe", `{"result":{"data":{"from":"second"}}}`)
			g := startGyre(t, proxyConfig(kind, b, b2))

			hdr := http.Header{"Authorization": {"Bearer t0ken"}, "X-Secret": {"not forwarded"}}
			c, res := connect(t, g, wstest.Header(hdr))
			jsonEq(t, "connect data", res.Data, `{"welcome":true}`)
			if res.Subs["news:a"] == nil || res.Subs["news:b"] == nil {
				t.Fatalf("connect subs = %v, want news:a and news:b", res.Subs)
			}
			jsonEq(t, "news:b data", res.Subs["news:b"].Data, `{"sub":"b"}`)
			if res.Expires {
				t.Error("connect result expires without expire_at")
			}

			cc := b.waitCalls("connect", 1)[0]
			for name, want := range map[string]string{
				"client": `"` + res.Client + `"`, "transport": `"websocket"`, "protocol": `"json"`,
				"encoding": `"json"`, "name": `"go-test"`, "version": `"1.0"`, "data": `{"hi":1}`,
			} {
				if got := field(cc, name); got != want {
					t.Errorf("connect request %s = %s, want %s", name, got, want)
				}
			}
			if got := cc.header.Get("Authorization"); got != "Bearer t0ken" {
				t.Errorf("Authorization forwarded = %q", got)
			}
			if got := cc.header.Get("X-Secret"); got != "" {
				t.Errorf("X-Secret forwarded though not configured: %q", got)
			}

			// Subscribe through the proxy; the connect result's meta travels.
			sr := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:room", Data: []byte(`{"want":"in"}`)})
			if sr.Error != nil {
				t.Fatalf("subscribe chat:room: %v", sr.Error)
			}
			jsonEq(t, "subscribe data", sr.Subscribe.Data, `{"history":[]}`)
			sc := b.waitCalls("subscribe", 1)[0]
			for name, want := range map[string]string{
				"user": `"56"`, "channel": `"chat:room"`, "meta": `{"plan":"pro"}`, "data": `{"want":"in"}`,
			} {
				if got := field(sc, name); got != want {
					t.Errorf("subscribe request %s = %s, want %s", name, got, want)
				}
			}

			// Publish: the backend rewrites the data and adds tags; another
			// subscriber gets the rewritten publication.
			c2, _ := connect(t, g)
			if r := c2.Subscribe(&protocol.SubscribeRequest{Channel: "chat:room"}); r.Error != nil {
				t.Fatalf("second subscribe: %v", r.Error)
			}
			pr := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "chat:room", Data: []byte(`{"text":"raw"}`)}})
			if pr.Error != nil {
				t.Fatalf("publish: %v", pr.Error)
			}
			pub := c2.WaitPubs("chat:room", 1)[0]
			jsonEq(t, "publication data", pub.Data, `{"text":"rewritten"}`)
			if pub.Tags["by"] != "backend" {
				t.Errorf("publication tags = %v", pub.Tags)
			}
			if pub.Info == nil || pub.Info.User != "56" {
				t.Errorf("publication info = %v", pub.Info)
			}
			pc := b.waitCalls("publish", 1)[0]
			if got := field(pc, "data"); got != `{"text":"raw"}` {
				t.Errorf("publish request data = %s", got)
			}

			// RPC, by namespace: no namespace goes to the default proxy,
			// second: to the named one; ping answers without a backend.
			rr := c.Call(&protocol.Command{Rpc: &protocol.RPCRequest{Method: "getX", Data: []byte(`{"q":1}`)}})
			if rr.Error != nil {
				t.Fatalf("rpc: %v", rr.Error)
			}
			jsonEq(t, "rpc data", rr.Rpc.Data, `{"answer":42}`)
			if got := field(b.waitCalls("rpc", 1)[0], "method"); got != `"getX"` {
				t.Errorf("rpc method = %s", got)
			}
			if r := c.Call(&protocol.Command{Rpc: &protocol.RPCRequest{Method: "ping"}}); r.Error != nil {
				t.Errorf("ping rpc: %v", r.Error)
			}
			if n := len(b.received("rpc")); n != 1 {
				t.Errorf("rpc calls = %d after ping, want 1", n)
			}

			// Namespaces without a proxy keep their rules.
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "open:x"}); r.Error != nil {
				t.Errorf("subscribe open:x: %v", r.Error)
			}
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "closed:x"}); r.Error == nil || r.Error.Code != 103 {
				t.Errorf("subscribe closed:x = %v, want 103", r.Error)
			}
			// Private and user-limited channels of a proxied namespace
			// need a token, as without the proxy.
			for _, ch := range []string{"$chat:secret", "chat:dm#56"} {
				if r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch}); r.Error == nil || r.Error.Code != 103 {
					t.Errorf("subscribe %s = %v, want 103", ch, r.Error)
				}
			}
			for _, sc := range b.received("subscribe") {
				if ch := field(sc, "channel"); ch != `"chat:room"` {
					t.Errorf("backend asked about %s", ch)
				}
			}

			// A named proxy serves its namespace.
			or := c.Subscribe(&protocol.SubscribeRequest{Channel: "other:x"})
			if or.Error != nil {
				t.Fatalf("subscribe other:x: %v", or.Error)
			}
			jsonEq(t, "other:x data", or.Subscribe.Data, `{"from":"second"}`)
			if got := field(b2.waitCalls("subscribe", 1)[0], "channel"); got != `"other:x"` {
				t.Errorf("second backend channel = %s", got)
			}
		})
	}
}

// TestEmulatedHeaders: headers a client sends in its connect command
// (centrifuge-js's headers option, for browsers that cannot set real ones)
// are forwarded to the proxies whose emulated_headers name them, the
// connect proxy and those called later on the connection; a name in
// http_headers alone never forwards one (its value is the client's), and
// says so in the log; a real request header wins over an emulated one.
func TestEmulatedHeaders(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b, b2 := newBackend(t), newBackend(t)
			defaultAnswers(b)
			c := proxyConfig(kind, b, b2)
			c.Client.Proxy.Connect.HTTPHeaders = []string{"Authorization", "X-Forwarded-User"}
			c.Channel.Proxy.Subscribe.EmulatedHeaders = []string{"X-Tenant"}
			c.Client.Proxy.Connect.EmulatedHeaders = []string{"authorization", "x-real"}
			c.Client.Proxy.Connect.HTTPHeaders = append(c.Client.Proxy.Connect.HTTPHeaders, "X-Real")
			g := startGyre(t, c)
			cl := wstest.Dial(t, g.url, protocol.TypeJSON, wstest.Header(http.Header{"X-Real": {"from the request"}}))
			r := cl.Call(&protocol.Command{Connect: &protocol.ConnectRequest{
				Headers: map[string]string{"authorization": "Bearer emulated", "x-forwarded-user": "admin", "x-tenant": "acme", "x-other": "no", "x-real": "emulated"},
			}})
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			h := b.waitCalls("connect", 1)[0].header
			if got := h.Get("Authorization"); got != "Bearer emulated" {
				t.Errorf("connect: Authorization = %q, want the emulated header (listed in emulated_headers)", got)
			}
			if got := h.Get("X-Real"); got != "from the request" {
				t.Errorf("connect: X-Real = %q, want the request's own header over the emulated one", got)
			}
			for _, name := range []string{"X-Forwarded-User", "X-Tenant", "X-Other"} {
				if got := h.Get(name); got != "" {
					t.Errorf("connect: %s = %q forwarded, though emulated_headers does not name it", name, got)
				}
			}
			// The connect call logged it before the connect was answered.
			if lines := g.log.Find(slog.LevelInfo, "proxy: headers the client sent in its connect command are named in http_headers but not in emulated_headers: not forwarded (their values are the client's own)",
				map[string]string{"headers": "[X-Forwarded-User]"}); len(lines) != 1 {
				t.Errorf("%d log lines about the header not forwarded, want 1", len(lines))
			}

			// The subscribe proxy, called later, gets the emulated header
			// its own emulated_headers names, kept from the connect.
			if sr := cl.Subscribe(&protocol.SubscribeRequest{Channel: "chat:x"}); sr.Error != nil {
				t.Fatalf("subscribe: %v", sr.Error)
			}
			sh := b.waitCalls("subscribe", 1)[0].header
			if got := sh.Get("X-Tenant"); got != "acme" {
				t.Errorf("subscribe: X-Tenant = %q, want acme", got)
			}
			if got := sh.Get("Authorization"); got != "" {
				t.Errorf("subscribe: Authorization = %q, though only the connect proxy names it", got)
			}
		})
	}
}
