package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/faillog"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/metrics"
	"github.com/gyrehq/gyre/server/proxy"
	"github.com/gyrehq/gyre/sharedpoll"
)

// sharedPollConfig has shared_poll namespaces "prices" (the default
// proxy, at def), "stock" (the named proxy "inventory", at named) and
// "votes" (the default proxy again), and a stream namespace "chat".
func sharedPollConfig(def, named string) *config.Config {
	c := config.Default()
	c.SharedPoll = config.SharedPoll{HMACSecretKey: "current", HMACPreviousSecretKey: "old", HMACPreviousSecretKeyValidUntil: 2000}
	c.Channel.Proxy.SharedPollRefresh = config.Proxy{Endpoint: def, Timeout: time.Second}
	c.Proxies = []config.NamedProxy{{Name: "inventory", Proxy: config.Proxy{Endpoint: named, Timeout: time.Second}}}
	sp := func(name string, o config.SharedPollOptions) config.Namespace {
		return config.Namespace{Name: name, ChannelOptions: config.ChannelOptions{SubscriptionType: "shared_poll", SharedPoll: o}}
	}
	c.Channel.Namespaces = []config.Namespace{
		sp("prices", config.SharedPollOptions{}),
		sp("stock", config.SharedPollOptions{ProxyName: "inventory", Mode: "versioned", PublishEnabled: true}),
		sp("votes", config.SharedPollOptions{ProxyName: "default"}),
		{Name: "chat"},
	}
	return c
}

func TestSharedPollChannelOptions(t *testing.T) {
	o := config.ChannelOptions{SubscriptionType: "shared_poll", SharedPoll: config.SharedPollOptions{
		ProxyName: "inventory", RefreshInterval: 3 * time.Second, RefreshBatchSize: 50, MaxKeysPerConnection: 10,
		Mode: "versioned", ChannelShutdownDelay: -time.Second, TrackExpiredExtraDelay: time.Minute, PublishEnabled: true,
	}}
	want := gyre.SharedPollOptions{
		RefreshInterval: 3 * time.Second, RefreshBatchSize: 50, MaxKeysPerConnection: 10, Versioned: true,
		ShutdownDelay: -time.Second, TrackExpiredExtraDelay: time.Minute, PublishEnabled: true, Route: "inventory",
	}
	got := channelOptions(o, time.Hour)
	if got.SubscriptionType != gyre.SubscriptionTypeSharedPoll || got.SharedPoll != want {
		t.Errorf("options = %q %+v\nwant %+v", got.SubscriptionType, got.SharedPoll, want)
	}
	for _, name := range []string{"", "default"} {
		o.SharedPoll = config.SharedPollOptions{ProxyName: name, Mode: "versionless"}
		if got := channelOptions(o, time.Hour).SharedPoll; got.Route != "" || got.Versioned {
			t.Errorf("proxy_name %q: %+v, want route \"\", versionless", name, got)
		}
	}
	// A stream namespace carrying shared_poll keys gets none of them.
	o.SubscriptionType = ""
	o.SharedPoll = config.SharedPollOptions{RefreshInterval: time.Second}
	if got := channelOptions(o, time.Hour).SharedPoll; got != (gyre.SharedPollOptions{}) {
		t.Errorf("stream namespace: %+v, want none", got)
	}
}

// TestSharedPollNoNATSPatterns: broker.nats.allow_wildcards opens
// patterns in stream namespaces only; shared-poll channels have none.
func TestSharedPollNoNATSPatterns(t *testing.T) {
	c := sharedPollConfig("http://def", "http://named")
	c.Broker.Enabled, c.Broker.Type, c.Broker.Nats.AllowWildcards = true, "nats", true
	for _, ns := range nodeConfig(c).Channels.Namespaces {
		if want := ns.Name == "chat"; ns.AllowWildcardSubscriptions != want {
			t.Errorf("%s: wildcards %v, want %v", ns.Name, ns.AllowWildcardSubscriptions, want)
		}
	}
}

func TestSharedPollConcurrency(t *testing.T) {
	c := config.Default()
	if got := sharedPollConcurrency(c); got != 64 {
		t.Errorf("default = %d, want 64", got)
	}
	c.SharedPoll.ConcurrencyLimit = 5
	if got := sharedPollConcurrency(c); got != 5 {
		t.Errorf("set = %d, want 5", got)
	}
}

// pollBackend answers refreshes with one item named after its own name,
// and records the channels it is asked about.
type pollBackend struct {
	mu       sync.Mutex
	channels []string
	srv      *httptest.Server
}

func newPollBackend(t *testing.T, name string) *pollBackend {
	b := &pollBackend{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.channels = append(b.channels, string(body))
		b.mu.Unlock()
		_, _ = io.WriteString(w, `{"result":{"items":[{"key":"`+name+`","data":1}]}}`)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func testProxies(t *testing.T, c *config.Config) *proxies {
	t.Helper()
	pool := proxy.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	s := &Server{cfg: c, log: slog.New(slog.DiscardHandler), metrics: metrics.New(metrics.Options{})}
	return &proxies{cfg: c, s: s, pool: pool, tlsConfigs: map[config.TLS]*tls.Config{}, built: map[string]*proxy.Proxy{}}
}

// TestSharedPollRoutes: each route reaches its own backend; the default
// proxy serves both namespaces that name it, once built.
func TestSharedPollRoutes(t *testing.T) {
	def, named := newPollBackend(t, "def"), newPollBackend(t, "named")
	p := testProxies(t, sharedPollConfig(def.srv.URL, named.srv.URL))
	routes, err := p.sharedPollRoutes()
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 2 || routes[""] == nil || routes["inventory"] == nil {
		t.Fatalf("routes %v, want \"\" and inventory", routes)
	}
	for _, tt := range []struct{ route, channel, key string }{
		{"", "prices:eu", "def"}, {"inventory", "stock:w1", "named"}, {"", "votes:1", "def"},
	} {
		rep, err := routes.refresh(context.Background(), gyre.SharedPollRefreshEvent{
			Channel: tt.channel, Route: tt.route, Items: []gyre.SharedPollKey{{Key: "k"}},
		})
		if err != nil || len(rep.Items) != 1 || rep.Items[0].Key != tt.key {
			t.Errorf("route %q: %+v, %v; want the item of %s", tt.route, rep, err, tt.key)
		}
	}
	if len(def.channels) != 2 || !strings.Contains(def.channels[1], `"votes:1"`) || len(named.channels) != 1 {
		t.Errorf("default backend got %q, named %q", def.channels, named.channels)
	}
	if _, err := routes.refresh(context.Background(), gyre.SharedPollRefreshEvent{Channel: "x:1", Route: "gone"}); err == nil || !strings.Contains(err.Error(), `no proxy "gone"`) {
		t.Errorf("unknown route: %v", err)
	}
}

func TestSharedPollRoutesNone(t *testing.T) {
	routes, err := testProxies(t, config.Default()).sharedPollRoutes()
	if err != nil || len(routes) != 0 {
		t.Errorf("routes = %v, %v; want none", routes, err)
	}
}

func TestTrack(t *testing.T) {
	c := sharedPollConfig("http://def", "http://named")
	rec := &logtest.Recorder{}
	tr := &tracker{
		isSharedPoll: newSharedPollChannels(c).has,
		verifier:     sharedpoll.NewVerifier("current", "old", 2000),
		fails:        faillog.New(slog.New(rec)),
		now:          func() time.Time { return time.Unix(5000, 0) },
	}
	keys := []string{"eur", "usd"}
	sign := func(secret string, iat, exp int64, user, channel string) string {
		return sharedpoll.Sign(secret, iat, exp, user, channel, keys)
	}
	batch := func(sig string) gyre.TrackBatch { return gyre.TrackBatch{Signature: sig, Keys: keys} }
	tests := []struct {
		name    string
		user    string
		channel string
		batches []gyre.TrackBatch
		want    []int64
		err     error
	}{
		{"one batch", "42", "prices:eu", []gyre.TrackBatch{batch(sign("current", 4000, 6000, "42", "prices:eu"))}, []int64{6000}, nil},
		{"batches, one never expiring", "42", "prices:eu", []gyre.TrackBatch{
			batch(sign("current", 4000, 6000, "42", "prices:eu")), batch(sign("current", 4000, 0, "42", "prices:eu")),
		}, []int64{6000, 0}, nil},
		{"anonymous", "", "votes:1", []gyre.TrackBatch{batch(sign("current", 4000, 0, "", "votes:1"))}, []int64{0}, nil},
		{"previous secret before its end", "42", "prices:eu", []gyre.TrackBatch{batch(sign("old", 1500, 0, "42", "prices:eu"))}, []int64{0}, nil},
		{"previous secret after its end", "42", "prices:eu", []gyre.TrackBatch{batch(sign("old", 2500, 0, "42", "prices:eu"))}, nil, gyre.ErrorPermissionDenied},
		{"another user's", "43", "prices:eu", []gyre.TrackBatch{batch(sign("current", 4000, 0, "42", "prices:eu"))}, nil, gyre.ErrorPermissionDenied},
		{"another channel's", "42", "prices:us", []gyre.TrackBatch{batch(sign("current", 4000, 0, "42", "prices:eu"))}, nil, gyre.ErrorPermissionDenied},
		{"one bad of two", "42", "prices:eu", []gyre.TrackBatch{
			batch(sign("current", 4000, 0, "42", "prices:eu")), batch("garbage"),
		}, nil, gyre.ErrorPermissionDenied},
		{"expired", "42", "prices:eu", []gyre.TrackBatch{batch(sign("current", 1000, 4000, "42", "prices:eu"))}, nil, gyre.ErrorTokenExpired},
		{"stream namespace", "42", "chat:1", []gyre.TrackBatch{batch(sign("current", 4000, 0, "42", "chat:1"))}, nil, gyre.ErrorPermissionDenied},
		{"unknown namespace", "42", "nope:1", []gyre.TrackBatch{batch(sign("current", 4000, 0, "42", "nope:1"))}, nil, gyre.ErrorPermissionDenied},
		{"no namespace", "42", "plain", []gyre.TrackBatch{batch(sign("current", 4000, 0, "42", "plain"))}, nil, gyre.ErrorPermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := tr.decide("client-1", tt.user, gyre.TrackEvent{Channel: tt.channel, Batches: tt.batches})
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err == nil && !slices.Equal(rep.ExpireAt, tt.want) {
				t.Errorf("ExpireAt = %v, want %v", rep.ExpireAt, tt.want)
			}
		})
	}
	lines := rec.Find(slog.LevelInfo, "track refused: bad signature", map[string]string{"channel": "prices:us", "client": "client-1", "user": "42"})
	if len(lines) != 1 {
		t.Errorf("%d log lines of the bad signature in prices:us, want 1", len(lines))
	}
	tr.fails.FlushAll()
	if n := len(rec.Find(slog.LevelInfo, "track refused: signature expired", map[string]string{"channel": "prices:eu", "user": "42"})); n != 1 {
		t.Errorf("%d log lines of the expired signature, want 1", n)
	}
}

// TestServerWithSharedPoll: a server with shared_poll namespaces starts,
// its refresh and track handlers registered before the node runs; its
// API refuses publications into them, including into those a reload
// adds, and a reload that changes their proxy says it needs a restart.
func TestServerWithSharedPoll(t *testing.T) {
	def, named := newPollBackend(t, "def"), newPollBackend(t, "named")
	c := sharedPollConfig(def.srv.URL, named.srv.URL)
	c.HTTPAPI.Key = testKey
	s, base := newServer(t, c)
	for ch, want := range map[string]string{"prices:1": `"code":107`, "stock:1": `"code":107`, "chat:1": `"result"`} {
		if _, body := post(t, base+"/api/publish", `{"channel":"`+ch+`","data":{}}`); !strings.Contains(body, want) {
			t.Errorf("publish into %s: %s, want %s", ch, body, want)
		}
	}
	next := sharedPollConfig(def.srv.URL, named.srv.URL)
	next.HTTPAPI.Key = testKey
	next.Channel.Namespaces[3].SubscriptionType = "shared_poll" // chat
	next.Channel.Namespaces[1].SharedPoll.ProxyName = ""        // stock
	if got := restartOnly(c, next); !slices.ContainsFunc(got, func(k string) bool { return strings.Contains(k, "shared_poll.proxy_name") }) {
		t.Errorf("restartOnly = %q, want the proxy options named", got)
	}
	if err := s.Reload(next); err != nil {
		t.Fatal(err)
	}
	if _, body := post(t, base+"/api/publish", `{"channel":"chat:1","data":{}}`); !strings.Contains(body, `"code":107`) {
		t.Errorf("publish into chat:1 after the reload made it shared_poll: %s", body)
	}
}
