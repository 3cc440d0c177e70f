package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// wantCentrifugo is what testdata/centrifugo.{json,yaml,toml} describe.
func wantCentrifugo() *Config {
	c := Default()
	c.Log.Level = "debug"
	c.HTTPServer.Address = "0.0.0.0"
	c.HTTPServer.Port = 8080
	c.HTTPServer.InternalPort = 9000
	c.Client.Token.HMACSecretKey = "connection-secret"
	c.Client.Token.Audience = "gyre-tests"
	c.Client.Token.IssuerRegex = `^https://auth\.example\.com/.*$`
	c.Client.SubscriptionToken.Enabled = true
	c.Client.SubscriptionToken.HMACSecretKey = "subscription-secret"
	c.Client.AllowedOrigins = []string{"https://example.com", "https://*.example.org"}
	c.Client.PingInterval = 20 * time.Second
	c.Client.PongTimeout = 5 * time.Second
	c.Client.ExpiredCloseDelay = 90 * time.Second
	c.Client.ChannelLimit = 256
	c.Client.QueueMaxSize = 2 << 20
	c.Client.UserConnectionLimit = 10
	c.Client.RecoveryMaxPublicationLimit = 500
	c.Client.SubscribeToUserPersonalChannel = SubscribeToUserPersonalChannel{Enabled: true, PersonalChannelNamespace: "personal", SingleConnection: true}
	c.Channel.WithoutNamespace.Presence = true
	c.Channel.WithoutNamespace.AllowSubscribeForClient = true
	c.Channel.Namespaces = []Namespace{
		{Name: "chat", ChannelOptions: ChannelOptions{
			Presence: true, JoinLeave: true, ForcePushJoinLeave: true,
			HistorySize: 100, HistoryTTL: 300 * time.Second, ForceRecovery: true,
			AllowedDeltaTypes: []string{"fossil"}, AllowTagsFilter: true,
			AllowSubscribeForClient: true, AllowPublishForSubscriber: true,
		}},
		{Name: "personal", ChannelOptions: ChannelOptions{
			Presence: true, HistorySize: 10, HistoryTTL: time.Hour, HistoryMetaTTL: 168 * time.Hour,
			ForceRecovery: true, ForceRecoveryMode: "cache", AllowUserLimitedChannels: true,
		}},
		{Name: "news.v1", ChannelOptions: ChannelOptions{
			HistorySize: 1, HistoryTTL: 30 * time.Second, ForcePositioning: true,
			AllowHistoryForAnonymous: true, ChannelRegex: "^[a-z0-9_]+$",
		}},
	}
	c.Channel.Namespaces = withNamespaceDefaults(c.Channel.Namespaces)
	c.HTTPAPI.Key = "api-key"
	c.HTTPAPI.ErrorMode = "transport"
	c.Admin = Admin{Enabled: true, Password: "admin-password", Secret: "admin-secret"}
	c.WebSocket.Compression = true
	c.WebSocket.MessageSizeLimit = 128 << 10
	c.SSE.Enabled = true
	c.HTTPStream.Enabled = true
	c.UniWebSocket.Enabled = true
	c.Prometheus.Enabled = true
	c.Health.Enabled = true
	c.Engine.Type = "redis"
	c.Engine.Redis.Address = []string{"redis://127.0.0.1:6379/1"}
	c.Engine.Redis.Prefix = "app"
	c.Engine.Redis.PresenceTTL = 30 * time.Second
	c.Shutdown.Timeout = 10 * time.Second
	return c
}

func TestLoadCentrifugoConfig(t *testing.T) {
	for _, name := range []string{"centrifugo.json", "centrifugo.yaml", "centrifugo.toml"} {
		t.Run(name, func(t *testing.T) {
			got, warnings, err := Load(filepath.Join("testdata", name))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(warnings) > 0 {
				t.Errorf("unexpected warnings: %q", warnings)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			want := wantCentrifugo()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("loaded config differs from the expected one:\n%s", diffConfigs(t, got, want))
			}
		})
	}
}

// diffConfigs shows the JSON lines that differ, to make a failure readable.
func diffConfigs(t *testing.T, got, want *Config) string {
	t.Helper()
	g, err := got.Marshal(FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	w, err := want.Marshal(FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	gl, wl := strings.Split(string(g), "\n"), strings.Split(string(w), "\n")
	var out []string
	for i := range max(len(gl), len(wl)) {
		var a, b string
		if i < len(gl) {
			a = gl[i]
		}
		if i < len(wl) {
			b = wl[i]
		}
		if a != b {
			out = append(out, "got:  "+a, "want: "+b)
		}
	}
	return strings.Join(out, "\n")
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, file, content, want string
	}{
		{"missing file", "", "", "read file"},
		{"bad extension", "c.ini", "a=1", `unsupported file extension ".ini"`},
		{"bad JSON", "c.json", `{"log": `, "parse JSON"},
		{"trailing JSON", "c.json", `{} {}`, "data after"},
		{"bad YAML", "c.yaml", "log: [", "parse YAML"},
		{"bad TOML", "c.toml", "[log\nlevel = 1", "c.toml:1:5: parse TOML"},
		{"top level list", "c.json", `[1]`, "top level must be a table"},
		{"wrong type", "c.json", `{"client": {"channel_limit": "many"}}`, `config: client.channel_limit: invalid integer "many"`},
		{"table expected", "c.yaml", "client: 5", "config: client: expected a table, got 5"},
		{"list of tables expected", "c.json", `{"channel": {"namespaces": {"name": "x"}}}`, "config: channel.namespaces: expected a list of tables"},
		{"namespace value", "c.json", `{"channel": {"namespaces": [{"name": "a1"}, {"name": "b1"}, {"name": "c1", "history_ttl": "5x"}]}}`, `config: channel.namespaces[2].history_ttl: invalid duration "5x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, "absent.json")
			if tt.file != "" {
				p = write(tt.file, tt.content)
			}
			_, _, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadReportsEveryBadValue(t *testing.T) {
	_, _, err := LoadBytes([]byte(`{"client": {"channel_limit": "x", "ping_interval": "y"}}`), "json")
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"client.channel_limit", "client.ping_interval"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestLoadEmpty(t *testing.T) {
	for _, format := range []string{"json", "yaml", "toml"} {
		t.Run(format, func(t *testing.T) {
			c, warnings, err := LoadBytes(nil, format)
			if err != nil || len(warnings) > 0 {
				t.Fatalf("LoadBytes(empty) = %v, %v", warnings, err)
			}
			if !reflect.DeepEqual(c, Default()) {
				t.Error("an empty file should give the defaults")
			}
		})
	}
}

func TestUnknownKeysWarn(t *testing.T) {
	data := `{
		"client": {"tokn": {"hmac_secret_key": "x"}, "channel_limit": 5},
		"channel": {"namespaces": [{"name": "chat", "presense": true}]},
		"foo": 1,
		"usage_stats": {"disabled": true},
		"grpc_api": {"enabled": false},
		"channel_options": null
	}`
	c, warnings, err := LoadBytes([]byte(data), "json")
	if err != nil {
		t.Fatal(err)
	}
	if c.Client.ChannelLimit != 5 {
		t.Errorf("known keys next to unknown ones must still load; channel_limit = %d", c.Client.ChannelLimit)
	}
	want := []string{
		`config: unknown key "channel.namespaces[0].presense" ignored (did you mean "presence"?)`,
		`config: unknown key "channel_options" ignored`,
		`config: unknown key "client.tokn" ignored (did you mean "token"?)`,
		`config: unknown key "foo" ignored`,
		`config: key "usage_stats" is not implemented by Gyre and is ignored: Gyre sends no usage statistics; remove the key.`,
	}
	slices.Sort(warnings)
	slices.Sort(want)
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings:\n got %q\nwant %q", warnings, want)
	}
}

func TestKeysIgnoreCase(t *testing.T) {
	c, warnings, err := LoadBytes([]byte("HTTP_Server:\n  Port: 9001\n"), "yaml")
	if err != nil || len(warnings) > 0 {
		t.Fatalf("LoadBytes = %v, %v", warnings, err)
	}
	if c.HTTPServer.Port != 9001 {
		t.Errorf("port = %d, want 9001", c.HTTPServer.Port)
	}
}

func TestFormatOf(t *testing.T) {
	tests := []struct{ path, want string }{
		{"a.json", FormatJSON}, {"a.YAML", FormatYAML}, {"dir.x/a.yml", FormatYAML}, {"a.toml", FormatTOML},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got, err := FormatOf(tt.path); err != nil || got != tt.want {
				t.Errorf("FormatOf(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}

func BenchmarkLoadBytes(b *testing.B) {
	for _, name := range []string{"centrifugo.json", "centrifugo.yaml", "centrifugo.toml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			b.Fatal(err)
		}
		format, _ := FormatOf(name)
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := LoadBytes(data, format); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A dump of Centrifugo's defaults (as its defaultconfig command writes) must
// load silently and give Gyre's defaults, apart from the key prefixes.
func TestLoadCentrifugoDefaults(t *testing.T) {
	got, warnings, err := Load(filepath.Join("testdata", "centrifugo_defaults.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Errorf("unexpected warnings: %q", warnings)
	}
	want := Default()
	want.Engine.Redis.Prefix = "centrifugo"
	want.Broker.Nats.Prefix = "centrifugo"
	want.MapBroker.Redis.Prefix = "centrifugo"
	// Centrifugo writes its default, memory; Gyre's empty default follows
	// the engine, which is memory here too.
	want.MapBroker.Type = "memory"
	got.zeroUnimplemented()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("differs from the defaults:\n%s", diffConfigs(t, got, want))
	}
}

func TestUnimplementedInEffect(t *testing.T) {
	tests := []struct {
		name, json string
		warn       bool
	}{
		{"feature on", `{"webtransport": {"enabled": true}}`, true},
		{"feature off with settings", `{"webtransport": {"enabled": false, "handler_prefix": "/wt"}}`, false},
		{"list with a setting", `{"consumers": [{"name": "pp", "type": "aws_sqs", "aws_sqs": {"queues": ["q"]}}]}`, true},
		{"list without settings", `{"consumers": [{"name": "pp", "type": "aws_sqs", "aws_sqs": {}}]}`, false},
		{"scalar at default", `{"channel": {"without_namespace": {"publication_data_format": ""}}}`, false},
		{"scalar changed", `{"channel": {"namespaces": [{"name": "ns", "publication_data_format": "json"}]}}`, true},
		{"scalar switch", `{"enable_unreleased_features": true}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, warnings, err := LoadBytes([]byte(tt.json), "json")
			if err != nil {
				t.Fatal(err)
			}
			if got := len(warnings) > 0; got != tt.warn {
				t.Errorf("warnings = %q, want a warning: %v", warnings, tt.warn)
			}
			if tt.warn && !strings.Contains(warnings[0], "not implemented by Gyre") {
				t.Errorf("warning %q does not say the key is unimplemented", warnings[0])
			}
		})
	}
}
