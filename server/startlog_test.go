package server

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/server/config"
)

// listening returns the listening line of the listener whose port the
// config key portKey sets; it fails unless there is exactly one.
func listening(t *testing.T, logs *logtest.Recorder, portKey string) logtest.Record {
	t.Helper()
	lines := logs.Find(slog.LevelInfo, "listening", map[string]string{"listener": portKey})
	if len(lines) != 1 {
		t.Fatalf("%d listening lines for %s, want 1", len(lines), portKey)
	}
	return lines[0]
}

func serves(r logtest.Record) []string {
	v, _ := r.Attrs["serves"].Any().([]string)
	return v
}

// TestStartLogListeners: each listener says, in one line, where it
// listens and what it serves, so that the log tells which endpoint went
// to the internal port.
func TestStartLogListeners(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.HTTPServer.Address, c.HTTPServer.Port = "127.0.0.1", 0
	c.HTTPServer.InternalPort = freePort(t)
	c.SSE.Enabled = true
	c.UniWebSocket.Enabled = true
	c.Health.Enabled = true
	c.Prometheus.Enabled = true
	c.Admin = config.Admin{Enabled: true, Password: "admin-password", Secret: "admin-secret", HandlerPrefix: "/admin"}
	c.GRPCAPI.Enabled, c.GRPCAPI.Address, c.GRPCAPI.Port, c.GRPCAPI.Key = true, "127.0.0.1", freePort(t), "grpc-key"
	c.UniGRPC.Enabled, c.UniGRPC.Address, c.UniGRPC.Port = true, "127.0.0.1", 0
	s, logs := startLogged(t, c)

	tests := []struct {
		portKey string
		address string
		want    []string
	}{
		{"http_server.port", s.Addr().String(), []string{
			"websocket /connection/websocket", "sse /connection/sse", "emulation /emulation",
			"uni_websocket /connection/uni_websocket",
		}},
		{"http_server.internal_port", "127.0.0.1:" + strconv.Itoa(c.HTTPServer.InternalPort), []string{
			"api /api (X-API-Key required)", "health /health", "metrics /metrics", "admin /admin/",
		}},
		{"grpc_api.port", s.GRPCAPIAddr().String(), []string{"grpc_api (api key required)"}},
		{"uni_grpc.port", s.UniGRPCAddr().String(), []string{"uni_grpc"}},
	}
	for _, tt := range tests {
		t.Run(tt.portKey, func(t *testing.T) {
			line := listening(t, logs, tt.portKey)
			if got := line.Attr("address"); got != tt.address {
				t.Errorf("address %s, want %s", got, tt.address)
			}
			if got := serves(line); !slices.Equal(got, tt.want) {
				t.Errorf("serves %q, want %q", got, tt.want)
			}
			if line.Attr("tls") != "false" {
				t.Errorf("tls %s, want false", line.Attr("tls"))
			}
		})
	}
}

// TestStartLogOnePort: without an internal port everything is on the
// client port, and the line says when the API refuses every call for want
// of a key.
func TestStartLogOnePort(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.HTTPServer.Address, c.HTTPServer.Port = "127.0.0.1", 0
	c.HTTPAPI.Key = ""
	c.Health.Enabled = true
	_, logs := startLogged(t, c)
	want := []string{"websocket /connection/websocket", "api /api (no http_api.key set: refuses every call)", "health /health"}
	if got := serves(listening(t, logs, "http_server.port")); !slices.Equal(got, want) {
		t.Errorf("serves %q, want %q", got, want)
	}
	if n := len(logs.Find(slog.LevelInfo, "listening", nil)); n != 1 {
		t.Errorf("%d listening lines, want 1", n)
	}
}

func TestAPIAccess(t *testing.T) {
	tests := []struct {
		api  config.HTTPAPI
		want string
	}{
		{config.HTTPAPI{Key: "k"}, "X-API-Key required"},
		{config.HTTPAPI{Insecure: true}, "no key checked: http_api.insecure"},
		{config.HTTPAPI{}, "no http_api.key set: refuses every call"},
	}
	for _, tt := range tests {
		if got := apiAccess(tt.api); got != tt.want {
			t.Errorf("apiAccess(%+v) = %q, want %q", tt.api, got, tt.want)
		}
	}
}

// TestStartLogEngine: the log names the engine, how Redis is reached and
// where, and a broker that replaces the engine's, without the password of
// a redis:// address.
func TestStartLogEngine(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		_, logs := startLogged(t, testConfig())
		if n := len(logs.Find(slog.LevelInfo, "engine", map[string]string{"type": "memory"})); n != 1 {
			t.Errorf("%d memory engine lines, want 1", n)
		}
		if n := len(logs.Find(slog.LevelInfo, "broker", nil)); n != 0 {
			t.Errorf("%d broker lines without a broker section, want 0", n)
		}
	})
	t.Run("redis sharded", func(t *testing.T) {
		// The default user of a Redis without requirepass takes any
		// password: the address carries one as a production one would.
		const password = "redis-pass-in-url"
		a, b := redistest.Start(t), redistest.Start(t)
		c := testConfig()
		c.Engine.Type = "redis"
		c.Engine.Redis.Address = []string{"redis://:" + password + "@" + a.Addr, b.Addr}
		c.Engine.Redis.Prefix = "startlog"
		c.Broker.Enabled, c.Broker.Type = true, "memory"
		_, logs := startLogged(t, c)
		lines := logs.Find(slog.LevelInfo, "engine", map[string]string{"type": "redis", "redis_mode": "sharded"})
		if len(lines) != 1 {
			t.Fatalf("%d sharded redis engine lines, want 1", len(lines))
		}
		want := []string{"redis://" + a.Addr, b.Addr}
		if got, _ := lines[0].Attrs["redis_addresses"].Any().([]string); !slices.Equal(got, want) {
			t.Errorf("redis_addresses %q, want %q", got, want)
		}
		if n := len(logs.Find(slog.LevelInfo, "broker", map[string]string{"type": "memory"})); n != 1 {
			t.Errorf("%d memory broker lines, want 1", n)
		}
		for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			for _, r := range logs.Find(level, "", nil) {
				for k, v := range r.Attrs {
					if strings.Contains(r.Message+v.String(), password) {
						t.Errorf("%q logs the password (%s)", r.Message, k)
					}
				}
			}
		}
	})
	t.Run("nats", func(t *testing.T) {
		n := natstest.Start(t)
		c := testConfig()
		c.Broker.Enabled, c.Broker.Type = true, "nats"
		c.Broker.Nats.URL = "nats://user:nats-secret@" + n.Addr
		c.Channel.Namespaces = nil // no history without a store
		c.Channel.WithoutNamespace.HistorySize, c.Channel.WithoutNamespace.HistoryTTL = 0, 0
		_, logs := startLogged(t, c)
		lines := logs.Find(slog.LevelInfo, "broker", map[string]string{"type": "nats", "history": "none"})
		if len(lines) != 1 {
			t.Fatalf("%d nats broker lines, want 1", len(lines))
		}
		if got := lines[0].Attrs["nats_url"].String(); got != "nats://"+n.Addr {
			t.Errorf("nats_url %q, want it without credentials", got)
		}
		if len(logs.Find(slog.LevelWarn, "presence is kept by each node for its own clients: presence, and presence_stats differ between nodes; set engine.type redis or presence_manager for presence across nodes", nil)) != 1 {
			t.Error("no warning that presence stays per node on the memory engine")
		}
	})
}

func TestRedisShape(t *testing.T) {
	tests := []struct {
		name      string
		r         config.Redis
		mode      string
		addresses []string
	}{
		{"single", config.Redis{Address: []string{"redis://u:p@h:6379/1"}}, "single", []string{"redis://h:6379/1"}},
		{"sharded", config.Redis{Address: []string{"a:1", "b:2"}}, "sharded", []string{"a:1", "b:2"}},
		{"cluster over addresses", config.Redis{Address: []string{"a:1"}, ClusterAddress: []string{"rediss://:p#@q@c:1"}}, "cluster", []string{"rediss://c:1"}},
		{"sentinel over cluster", config.Redis{ClusterAddress: []string{"c:1"}, SentinelAddress: []string{"s:26379"}}, "sentinel", []string{"s:26379"}},
		{"host:port with credentials", config.Redis{Address: []string{"u:p@h:1"}}, "single", []string{"h:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mode, addrs := redisShape(tt.r)
			if mode != tt.mode || !slices.Equal(addrs, tt.addresses) {
				t.Errorf("redisShape = %s %q, want %s %q", mode, addrs, tt.mode, tt.addresses)
			}
		})
	}
}
