package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestApplyEnv(t *testing.T) {
	env := []string{
		"GYRE_HTTP_SERVER_PORT=9100",
		"GYRE_CLIENT_TOKEN_HMAC_SECRET_KEY=from-env",
		"GYRE_CLIENT_ALLOWED_ORIGINS=https://a.example, https://b.example",
		"GYRE_CLIENT_PING_INTERVAL=30s",
		"GYRE_ADMIN_ENABLED=1",
		"GYRE_ENGINE_REDIS_ADDRESS=[\"redis:6379\",\"redis2:6379\"]",
		"GYRE_CHANNEL_WITHOUT_NAMESPACE_HISTORY_TTL=1m",
		"OTHER_HTTP_SERVER_PORT=1",
	}
	c := Default()
	warnings, err := c.ApplyEnv("GYRE", env)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("ApplyEnv = %q, %v", warnings, err)
	}
	want := Default()
	want.HTTPServer.Port = 9100
	want.Client.Token.HMACSecretKey = "from-env"
	want.Client.AllowedOrigins = []string{"https://a.example", "https://b.example"}
	want.Client.PingInterval = 30 * time.Second
	want.Admin.Enabled = true
	want.Engine.Redis.Address = []string{"redis:6379", "redis2:6379"}
	want.Channel.WithoutNamespace.HistoryTTL = time.Minute
	if !reflect.DeepEqual(c, want) {
		t.Errorf("ApplyEnv result differs:\n%s", diffConfigs(t, c, want))
	}
}

func TestApplyEnvNamespaces(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  []string
		want []Namespace
	}{
		{
			name: "JSON list",
			env:  []string{`GYRE_CHANNEL_NAMESPACES=[{"name":"chat","presence":true,"history_size":10,"history_ttl":"60s"}]`},
			want: []Namespace{{Name: "chat", ChannelOptions: ChannelOptions{Presence: true, HistorySize: 10, HistoryTTL: time.Minute}}},
		},
		{
			name: "names and per-namespace options",
			env: []string{
				"GYRE_CHANNEL_NAMESPACES=chat news-feed.v2",
				"GYRE_CHANNEL_NAMESPACES_CHAT_PRESENCE=true",
				"GYRE_CHANNEL_NAMESPACES_NEWS_FEED_V2_HISTORY_SIZE=5",
				"GYRE_CHANNEL_NAMESPACES_NEWS_FEED_V2_HISTORY_TTL=10s",
				"GYRE_CHANNEL_NAMESPACES_NEWS_FEED_V2_ALLOWED_DELTA_TYPES=fossil",
			},
			want: []Namespace{
				{Name: "chat", ChannelOptions: ChannelOptions{Presence: true}},
				{Name: "news-feed.v2", ChannelOptions: ChannelOptions{HistorySize: 5, HistoryTTL: 10 * time.Second, AllowedDeltaTypes: []string{"fossil"}}},
			},
		},
		{
			name: "options of namespaces from the file",
			file: `{"channel": {"namespaces": [{"name": "chat", "join_leave": true}]}}`,
			env:  []string{"GYRE_CHANNEL_NAMESPACES_CHAT_PRESENCE=true"},
			want: []Namespace{{Name: "chat", ChannelOptions: ChannelOptions{Presence: true, JoinLeave: true}}},
		},
		{
			name: "names keep the file's options",
			file: `{"channel": {"namespaces": [{"name": "chat", "join_leave": true}, {"name": "gone"}]}}`,
			env:  []string{"GYRE_CHANNEL_NAMESPACES=chat,news"},
			want: []Namespace{{Name: "chat", ChannelOptions: ChannelOptions{JoinLeave: true}}, {Name: "news"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			if tt.file != "" {
				var err error
				if c, _, err = LoadBytes([]byte(tt.file), "json"); err != nil {
					t.Fatal(err)
				}
			}
			warnings, err := c.ApplyEnv("GYRE", tt.env)
			if err != nil || len(warnings) > 0 {
				t.Fatalf("ApplyEnv = %q, %v", warnings, err)
			}
			want := withNamespaceDefaults(tt.want)
			if !reflect.DeepEqual(c.Channel.Namespaces, want) {
				t.Errorf("namespaces:\n got %+v\nwant %+v", c.Channel.Namespaces, want)
			}
		})
	}
}

func TestApplyEnvWarningsAndErrors(t *testing.T) {
	c := Default()
	warnings, err := c.ApplyEnv("gyre_", []string{
		"GYRE_HTTP_SERVER_PROT=1",
		"GYRE_PORT=tcp://10.0.0.1:8000",
		"GYRE_SERVICE_HOST=10.0.0.1",
		"GYRE_GRAPHITE={\"enabled\":true}",
		"GYRE_CLIENT_CHANNEL_LIMIT=lots",
		"GYRE_CHANNEL_NAMESPACES_MISSING_PRESENCE=true",
	})
	wantWarnings := []string{
		`config: key "graphite" is not implemented by Gyre and is ignored (set by GYRE_GRAPHITE): Gyre exports Prometheus metrics only (prometheus.enabled); scrape them, or forward them to Graphite with a Prometheus exporter.`,
		"config: unknown environment variable GYRE_CHANNEL_NAMESPACES_MISSING_PRESENCE ignored",
		"config: unknown environment variable GYRE_HTTP_SERVER_PROT ignored (did you mean GYRE_HTTP_SERVER_PORT?)",
	}
	slices.Sort(warnings)
	slices.Sort(wantWarnings)
	if !slices.Equal(warnings, wantWarnings) {
		t.Errorf("warnings:\n got %q\nwant %q", warnings, wantWarnings)
	}
	want := `config: client.channel_limit: invalid integer "lots" (from GYRE_CLIENT_CHANNEL_LIMIT)`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Path != "client.channel_limit" {
		t.Errorf("error %v is not a KeyError for client.channel_limit", err)
	}
}

// kubernetesVars are the variables Kubernetes sets in a pod for a Service
// named service with one port, 8000, named http.
func kubernetesVars(service string) []string {
	p := strings.ToUpper(strings.ReplaceAll(service, "-", "_"))
	return []string{
		p + "_SERVICE_HOST=10.0.0.1", p + "_SERVICE_PORT=8000", p + "_SERVICE_PORT_HTTP=8000",
		p + "_PORT=tcp://10.0.0.1:8000", p + "_PORT_8000_TCP=tcp://10.0.0.1:8000",
		p + "_PORT_8000_TCP_PROTO=tcp", p + "_PORT_8000_TCP_PORT=8000", p + "_PORT_8000_TCP_ADDR=10.0.0.1",
	}
}

func TestKubernetesVariablesSilent(t *testing.T) {
	// gyre-http gives GYRE_HTTP_SERVICE_PORT, two edits from
	// GYRE_HTTP_SERVER_PORT; gyre-service gives GYRE_SERVICE_SERVICE_HOST
	// and GYRE_SERVICE_PORT.
	for _, service := range []string{"gyre", "gyre-api", "gyre-admin", "gyre-http", "gyre-grpc", "gyre-service", "centrifugo"} {
		t.Run(service, func(t *testing.T) {
			c := Default()
			prefix := strings.ToUpper(strings.SplitN(service, "-", 2)[0])
			warnings, err := c.ApplyEnv(prefix, kubernetesVars(service))
			if err != nil || len(warnings) > 0 {
				t.Fatalf("ApplyEnv = %q, %v; want no warning", warnings, err)
			}
			if !reflect.DeepEqual(c, Default()) {
				t.Errorf("the Service's variables changed the config:\n%s", diffConfigs(t, c, Default()))
			}
		})
	}
}

func TestKubernetesLookalikesWarn(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"misspelt port", []string{"GYRE_HTTP_SERVR_PORT=9000"},
			"config: unknown environment variable GYRE_HTTP_SERVR_PORT ignored (did you mean GYRE_HTTP_SERVER_PORT?)"},
		{"misspelt port beside a Service", append(kubernetesVars("gyre"), "GYRE_HTTP_SERVR_PORT=9000"),
			"config: unknown environment variable GYRE_HTTP_SERVR_PORT ignored (did you mean GYRE_HTTP_SERVER_PORT?)"},
		{"service port shape without a Service", []string{"GYRE_HTTP_SERVICE_PORT=9000"},
			"config: unknown environment variable GYRE_HTTP_SERVICE_PORT ignored (did you mean GYRE_HTTP_SERVER_PORT?)"},
		{"port without a Service", []string{"GYRE_PORT=9000"},
			"config: unknown environment variable GYRE_PORT ignored"},
		{"service URL without its Service", []string{"GYRE_API_PORT=tcp://10.0.0.1:8000"},
			"config: unknown environment variable GYRE_API_PORT ignored"},
		{"a Service named like a key", kubernetesVars("gyre-grpc-api"),
			`config: GYRE_GRPC_API_PORT=tcp://10.0.0.1:8000 is the variable Kubernetes sets for the Service "gyre-grpc-api", not a value of grpc_api.port: ignored (rename the Service, or set enableServiceLinks: false in the pod spec)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			warnings, err := c.ApplyEnv("GYRE", tt.env)
			if err != nil || !slices.Equal(warnings, []string{tt.want}) {
				t.Fatalf("ApplyEnv = %q, %v; want one warning %q", warnings, err, tt.want)
			}
			if c.HTTPServer.Port != 8000 || c.GRPCAPI.Port != Default().GRPCAPI.Port {
				t.Errorf("ports %d, %d changed", c.HTTPServer.Port, c.GRPCAPI.Port)
			}
		})
	}
	// A port the user sets keeps working beside a Service of that name.
	c := Default()
	warnings, err := c.ApplyEnv("GYRE", append(kubernetesVars("gyre-grpc-api")[:1], "GYRE_GRPC_API_PORT=10001"))
	if err != nil || len(warnings) > 0 || c.GRPCAPI.Port != 10001 {
		t.Fatalf("ApplyEnv = %q, %v, port %d; want port 10001 set silently", warnings, err, c.GRPCAPI.Port)
	}
}

func TestApplyEnvDidYouMean(t *testing.T) {
	c := Default()
	c.Channel.Namespaces = []Namespace{{Name: "chat"}}
	tests := []struct {
		prefix, name, want string
	}{
		{"CENTRIFUGO", "CENTRIFUGO_CLIENT_TOKEN_HMAC_SECRET", "CENTRIFUGO_CLIENT_TOKEN_HMAC_SECRET_KEY"},
		{"CENTRIFUGO", "CENTRIFUGO_HTTP_APIKEY", "CENTRIFUGO_HTTP_API_KEY"},
		{"GYRE", "GYRE_LOG_LEVLE", "GYRE_LOG_LEVEL"},
		{"GYRE", "GYRE_CHANNEL_NAMESPACES_CHAT_PRESENSE", "GYRE_CHANNEL_NAMESPACES_CHAT_PRESENCE"},
		{"GYRE", "GYRE_SOMETHING_ELSE_ENTIRELY", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warnings, err := c.ApplyEnv(tt.prefix, []string{tt.name + "=x"})
			if err != nil || len(warnings) != 1 {
				t.Fatalf("ApplyEnv = %q, %v; want one warning", warnings, err)
			}
			w := warnings[0]
			if !strings.Contains(w, "unknown environment variable "+tt.name+" ignored") {
				t.Errorf("warning %q does not name %s", w, tt.name)
			}
			hint := "did you mean " + tt.want + "?"
			if tt.want == "" && strings.Contains(w, "did you mean") {
				t.Errorf("warning %q suggests a name for an unrelated variable", w)
			}
			if tt.want != "" && !strings.Contains(w, hint) {
				t.Errorf("warning %q, want it to contain %q", w, hint)
			}
		})
	}
}

func TestResolveReadsBothPrefixes(t *testing.T) {
	// With no prefixes given, Resolve reads CENTRIFUGO_ and GYRE_, GYRE_
	// winning for the same key, and warns about a misspelling of either.
	c, warnings, err := Resolve(Sources{Environ: []string{
		"CENTRIFUGO_HTTP_SERVER_PORT=7000",
		"GYRE_HTTP_SERVER_PORT=7001",
		"CENTRIFUGO_CLIENT_TOKEN_HMAC_SECRET_KEY=from-centrifugo",
		"CENTRIFUGO_LOG_LEVL=debug",
		"GYRE_LOG_LEVLE=debug",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPServer.Port != 7001 || c.Client.Token.HMACSecretKey != "from-centrifugo" || c.Log.Level != "info" {
		t.Errorf("port, hmac, log level = %d, %q, %q; want 7001, from-centrifugo, info", c.HTTPServer.Port, c.Client.Token.HMACSecretKey, c.Log.Level)
	}
	want := []string{
		"config: unknown environment variable CENTRIFUGO_LOG_LEVL ignored (did you mean CENTRIFUGO_LOG_LEVEL?)",
		"config: unknown environment variable GYRE_LOG_LEVLE ignored (did you mean GYRE_LOG_LEVEL?)",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings:\n got %q\nwant %q", warnings, want)
	}
	// One prefix only when asked.
	c, _, err = Resolve(Sources{EnvPrefixes: []string{"GYRE"}, Environ: []string{"CENTRIFUGO_HTTP_SERVER_PORT=7000"}})
	if err != nil || c.HTTPServer.Port != 8000 {
		t.Errorf("EnvPrefixes GYRE only: port %d, %v; want 8000", c.HTTPServer.Port, err)
	}
}

func TestResolveReportsUnsupportedOnce(t *testing.T) {
	// client.concurrency is set by the file and both prefixes; the
	// namespace's publication_data_format comes inside a JSON variable; the
	// buffer size is a typed key from the file alone.
	file := filepath.Join(t.TempDir(), "config.json")
	content := `{"client": {"concurrency": 4}, "websocket": {"write_buffer_size": 8192}}`
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	_, warnings, err := Resolve(Sources{File: file, Environ: []string{
		"CENTRIFUGO_CLIENT_CONCURRENCY=2",
		"GYRE_CLIENT_CONCURRENCY=3",
		`GYRE_CHANNEL_NAMESPACES=[{"name": "polls", "publication_data_format": "json"}]`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	for key, setBy := range map[string]string{
		"client.concurrency":                            "GYRE_CLIENT_CONCURRENCY",
		"channel.namespaces[0].publication_data_format": "GYRE_CHANNEL_NAMESPACES",
		"websocket.write_buffer_size":                   "",
	} {
		var lines []string
		for _, w := range warnings {
			if strings.Contains(w, `"`+key+`"`) {
				lines = append(lines, w)
			}
		}
		if len(lines) != 1 {
			t.Errorf("%d warnings about %s, want 1: %q", len(lines), key, lines)
			continue
		}
		if setBy != "" && !strings.Contains(lines[0], "(set by "+setBy+")") {
			t.Errorf("warning %q does not name %s", lines[0], setBy)
		}
	}
	if len(warnings) != 3 {
		t.Errorf("warnings %q, want 3", warnings)
	}
}

func TestResolveBase(t *testing.T) {
	base := func(c *Config) {
		c.Channel.WithoutNamespace.Presence = true
		c.Channel.WithoutNamespace.HistorySize = 100
		c.Channel.WithoutNamespace.HistoryTTL = time.Minute
	}
	// Without a file, environment and flags override the base key by key.
	c, _, err := Resolve(Sources{
		Base:    base,
		Environ: []string{"CENTRIFUGO_CHANNEL_WITHOUT_NAMESPACE_HISTORY_SIZE=5"},
		Flags:   map[string]string{"channel.without_namespace.presence": "false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	o := c.Channel.WithoutNamespace
	if o.Presence || o.HistorySize != 5 || o.HistoryTTL != time.Minute {
		t.Errorf("presence, history size, ttl = %v, %d, %v; want false, 5, 1m", o.Presence, o.HistorySize, o.HistoryTTL)
	}
	// A file replaces the base altogether.
	c, _, err = Resolve(Sources{Base: base, File: filepath.Join("testdata", "centrifugo.json")})
	if err != nil {
		t.Fatal(err)
	}
	if c.Channel.WithoutNamespace.HistorySize == 100 {
		t.Error("the base was applied although a file was given")
	}
}

func TestEnvNamesAreUnique(t *testing.T) {
	seen := map[string]string{}
	walkLeaves(reflect.TypeFor[Config](), "", func(path string, _ field) {
		name := EnvName("GYRE", path)
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s share the variable %s", path, other, name)
		}
		seen[name] = path
	})
	if got := EnvName("", "client.token.hmac_secret_key"); got != "GYRE_CLIENT_TOKEN_HMAC_SECRET_KEY" {
		t.Errorf("EnvName = %s", got)
	}
}

func TestSet(t *testing.T) {
	c := wantCentrifugo()
	tests := []struct {
		path, value string
		check       func(*Config) bool
	}{
		{"http_server.port", "9000", func(c *Config) bool { return c.HTTPServer.Port == 9000 }},
		{"client.insecure", "true", func(c *Config) bool { return c.Client.Insecure }},
		{"client.pong_timeout", "-1s", func(c *Config) bool { return c.Client.PongTimeout == -time.Second }},
		{"engine.redis.address", "a:1 b:2", func(c *Config) bool { return slices.Equal(c.Engine.Redis.Address, []string{"a:1", "b:2"}) }},
		{"channel.namespaces[1].history_size", "42", func(c *Config) bool { return c.Channel.Namespaces[1].HistorySize == 42 }},
		{"CHANNEL.Namespaces[0].Presence", "false", func(c *Config) bool { return !c.Channel.Namespaces[0].Presence }},
		{"client.token", `{"hmac_secret_key": "json"}`, func(c *Config) bool {
			return c.Client.Token.HMACSecretKey == "json" && c.Client.Token.Audience == "gyre-tests"
		}},
		{"channel.namespaces[2]", `{"presence": true}`, func(c *Config) bool { return c.Channel.Namespaces[2].Presence }},
		{"channel.namespaces", `[{"name": "only"}]`, func(c *Config) bool { return len(c.Channel.Namespaces) == 1 && c.Channel.Namespaces[0].Name == "only" }},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if err := c.Set(tt.path, tt.value); err != nil {
				t.Fatalf("Set(%q, %q): %v", tt.path, tt.value, err)
			}
			if !tt.check(c) {
				t.Errorf("Set(%q, %q) did not take effect", tt.path, tt.value)
			}
		})
	}
}

func TestSetErrors(t *testing.T) {
	tests := []struct {
		path, value, want string
		is                error
	}{
		{"http_server.prot", "1", "config: http_server.prot: unknown key", ErrUnknownKey},
		{"http_server.port.x", "1", "config: http_server.port.x: unknown key: http_server.port is not a table", ErrUnknownKey},
		{"http_server.port", "x", `config: http_server.port: invalid integer "x"`, nil},
		{"client.ping_interval", "25", `config: client.ping_interval: invalid duration "25"`, nil},
		{"channel.namespaces[5].presence", "true", "config: channel.namespaces[5].presence: index 5 out of range: channel.namespaces has 1 items", nil},
		{"channel.namespaces[x]", "{}", "malformed index", nil},
		{"client[0]", "{}", "client is not a list of tables", nil},
		{"graphite", "{}", "config: graphite: known Centrifugo key that Gyre does not implement", ErrNotImplemented},
		{"client.token", `{"hmac": "x"}`, "config: client.token.hmac: unknown key", ErrUnknownKey},
		{"client.token", `"x"`, "expected JSON starting with", nil},
		{"channel.namespaces", `[{"name": "a", "history_ttl": 5}]`, `config: channel.namespaces[0].history_ttl: invalid duration 5: give a string with a unit, such as "5s"`, nil},
		{"", "1", "empty key", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			c := Default()
			c.Channel.Namespaces = []Namespace{{Name: "chat"}}
			before := *c
			err := c.Set(tt.path, tt.value)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Set(%q, %q) error = %v, want %q", tt.path, tt.value, err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if !reflect.DeepEqual(*c, before) {
				t.Errorf("a failed Set changed the config")
			}
		})
	}
}

func TestResolveOrder(t *testing.T) {
	file := filepath.Join("testdata", "centrifugo.json") // port 8080, log debug, hmac connection-secret
	tests := []struct {
		name string
		src  Sources
		port int
		hmac string
	}{
		{"file", Sources{File: file}, 8080, "connection-secret"},
		{"env over file", Sources{File: file, Environ: []string{"GYRE_HTTP_SERVER_PORT=8081"}}, 8081, "connection-secret"},
		{"flags over env", Sources{File: file, Environ: []string{"GYRE_HTTP_SERVER_PORT=8081"}, Flags: map[string]string{"http_server.port": "8082"}}, 8082, "connection-secret"},
		{"gyre over centrifugo", Sources{
			File:        file,
			EnvPrefixes: []string{"CENTRIFUGO", "GYRE"},
			Environ:     []string{"CENTRIFUGO_HTTP_SERVER_PORT=7000", "GYRE_HTTP_SERVER_PORT=7001", "CENTRIFUGO_CLIENT_TOKEN_HMAC_SECRET_KEY=c"},
		}, 7001, "c"},
		{"defaults only", Sources{Flags: map[string]string{"client.token.hmac_secret_key": "f"}}, 8000, "f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warnings, err := Resolve(tt.src)
			// Gyre implements every key the file sets: nothing deserves a
			// warning.
			if err != nil || len(warnings) != 0 {
				t.Fatalf("Resolve = %q, %v", warnings, err)
			}
			if c.HTTPServer.Port != tt.port || c.Client.Token.HMACSecretKey != tt.hmac {
				t.Errorf("port, hmac = %d, %q; want %d, %q", c.HTTPServer.Port, c.Client.Token.HMACSecretKey, tt.port, tt.hmac)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name string
		src  Sources
		want string
	}{
		{"bad file", Sources{File: filepath.Join("testdata", "absent.json")}, "read file"},
		{"bad env", Sources{Environ: []string{"GYRE_LOG_LEVEL=loud"}}, `config: log.level: unknown value "loud"`},
		{"bad flag", Sources{Flags: map[string]string{"http_server.port": "70000"}}, "config: http_server.port: 70000 is greater than 65535"},
		{"unknown flag", Sources{Flags: map[string]string{"nope": "1"}}, "config: nope: unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Resolve(tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Resolve error = %v, want %q", err, tt.want)
			}
		})
	}
}

// withNamespaceDefaults gives each namespace the defaults a loaded one
// starts from (the proxy names).
func withNamespaceDefaults(list []Namespace) []Namespace {
	out := make([]Namespace, len(list))
	for i, ns := range list {
		applyDefaults(reflect.ValueOf(&ns).Elem())
		out[i] = ns
	}
	return out
}
