package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidateProxies(t *testing.T) {
	web := Proxy{Endpoint: "http://backend/x", Timeout: time.Second}
	tests := []struct {
		name   string
		mutate func(c *Config)
		path   string
		want   string
	}{
		{"connect without endpoint", func(c *Config) { c.Client.Proxy.Connect.Enabled = true }, "client.proxy.connect.endpoint", "must be set"},
		{"bad scheme", func(c *Config) { c.Channel.Proxy.Publish.Endpoint = "ftp://x" }, "channel.proxy.publish.endpoint", "scheme must be http, https or grpc"},
		{"no host", func(c *Config) { c.RPC.Proxy.Endpoint = "grpc://" }, "rpc.proxy.endpoint", "has no host"},
		{"zero timeout", func(c *Config) { c.RPC.Proxy = Proxy{Endpoint: "grpc://b:1"} }, "rpc.proxy.timeout", "must be positive"},
		{"unknown named proxy", func(c *Config) {
			c.Channel.Namespaces = []Namespace{{Name: "chat", ChannelOptions: ChannelOptions{SubscribeProxyEnabled: true, SubscribeProxyName: "nope"}}}
		}, "channel.namespaces[0].subscribe_proxy_name", `proxy "nope" is not defined`},
		{"default proxy without endpoint", func(c *Config) {
			c.Channel.WithoutNamespace.PublishProxyEnabled = true
			c.Channel.WithoutNamespace.PublishProxyName = "default"
		}, "channel.without_namespace.publish_proxy_name", "the default proxy has no endpoint"},
		{"rpc namespace proxy", func(c *Config) {
			c.RPC.Namespaces = []RPCNamespace{{Name: "ns", RPCOptions: RPCOptions{ProxyEnabled: true, ProxyName: "x"}}}
		}, "rpc.namespaces[0].proxy_name", `proxy "x" is not defined`},
		{"proxy name", func(c *Config) { c.Proxies = []NamedProxy{{Name: "a", Proxy: web}} }, "proxies[0].name", "invalid proxy name"},
		{"duplicate proxy", func(c *Config) { c.Proxies = []NamedProxy{{Name: "ab", Proxy: web}, {Name: "ab", Proxy: web}} }, "proxies[1].name", "defined twice"},
		{"connect proxy name", func(c *Config) { c.Client.ConnectProxyName = "gone" }, "client.connect_proxy_name", "not defined in proxies"},
		{"state proxy without endpoint", func(c *Config) {
			c.Channel.Namespaces = []Namespace{{Name: "room", ChannelOptions: ChannelOptions{StateProxyEnabled: true, StateProxyName: "default"}}}
		}, "channel.namespaces[0].state_proxy_name", "the default proxy has no endpoint"},
		{"unknown state proxy", func(c *Config) {
			c.Channel.WithoutNamespace.StateProxyEnabled = true
			c.Channel.WithoutNamespace.StateProxyName = "gone"
		}, "channel.without_namespace.state_proxy_name", `proxy "gone" is not defined`},
		{"cache empty without history", func(c *Config) {
			c.Channel.Proxy.CacheEmpty = web
			c.Channel.Namespaces = []Namespace{{Name: "prices", ChannelOptions: ChannelOptions{CacheEmptyProxyEnabled: true, CacheEmptyProxyName: "default"}}}
		}, "channel.namespaces[0].cache_empty_proxy_enabled", "needs history"},
		{"user status without endpoint", func(c *Config) { c.Client.Proxy.UserStatus.Enabled = true }, "client.proxy.user_status.endpoint", "must be set"},
		{"user status proxy name", func(c *Config) { c.Client.UserStatusProxyName = "gone" }, "client.user_status_proxy_name", "not defined in proxies"},
		{"events with presence per node", func(c *Config) {
			c.Client.Proxy.UserStatus = EnabledProxy{Enabled: true, Proxy: web}
			c.Broker.Enabled, c.Broker.Type = true, "nats"
		}, "presence_manager.type", "each node would send its own"},
		{"transform without code", func(c *Config) {
			c.Proxies = []NamedProxy{{Name: "ab", Proxy: web}}
			c.Proxies[0].HTTP.StatusToCodeTransforms = []StatusToCodeTransform{{StatusCode: 404}}
		}, "proxies[0].http.status_to_code_transforms[0]", "needs to_error.code or to_disconnect.code"},
		{"transform with both", func(c *Config) {
			c.Proxies = []NamedProxy{{Name: "ab", Proxy: web}}
			c.Proxies[0].HTTP.StatusToCodeTransforms = []StatusToCodeTransform{{StatusCode: 404,
				ToError: TransformError{Code: 404}, ToDisconnect: TransformDisconnect{Code: 4404}}}
		}, "proxies[0].http.status_to_code_transforms[0]", "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			prefix := "config: " + tt.path + ": "
			var found bool
			for line := range strings.SplitSeq(err.Error(), "\n") {
				if strings.HasPrefix(line, prefix) && strings.Contains(line, tt.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("Validate() = %q, want a line %q...%q", err, prefix, tt.want)
			}
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Errorf("error %v holds no KeyError", err)
			}
		})
	}
}

// TestLoadCentrifugoProxies reads a Centrifugo v6 configuration with
// proxies and checks that it is valid and lands in the right fields.
func TestLoadCentrifugoProxies(t *testing.T) {
	file := `{
	  "client": {"proxy": {"connect": {"enabled": true, "endpoint": "http://app/connect", "timeout": "3s",
	    "http_headers": ["Cookie"], "http": {"status_to_code_transforms": [
	      {"status_code": 403, "to_error": {"code": 403, "message": "forbidden"}}]}}}},
	  "channel": {
	    "proxy": {"subscribe": {"endpoint": "grpc://app:9000", "include_connection_meta": true,
	      "grpc": {"credentials_key": "token", "credentials_value": "s3cret", "compression": true}}},
	    "namespaces": [{"name": "chat", "subscribe_proxy_enabled": true},
	      {"name": "feed", "publish_proxy_enabled": true, "publish_proxy_name": "pub"}]
	  },
	  "proxies": [{"name": "pub", "endpoint": "http://app/publish", "binary_encoding": true}],
	  "rpc": {"proxy": {"endpoint": "http://app/rpc"}, "without_namespace": {"proxy_enabled": true}}
	}`
	c, warnings, err := LoadBytes([]byte(file), FormatJSON)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("LoadBytes = %q, %v", warnings, err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	cp := c.Client.Proxy.Connect
	if !cp.Enabled || cp.Timeout != 3*time.Second || cp.HTTPHeaders[0] != "Cookie" || cp.HTTP.StatusToCodeTransforms[0].ToError.Code != 403 {
		t.Errorf("client.proxy.connect = %+v", cp)
	}
	sp := c.Channel.Proxy.Subscribe
	if sp.Timeout != time.Second || !sp.IncludeConnectionMeta || sp.GRPC.CredentialsValue != "s3cret" || !sp.GRPC.Compression {
		t.Errorf("channel.proxy.subscribe = %+v", sp)
	}
	ns := c.Channel.Namespaces
	if !ns[0].SubscribeProxyEnabled || ns[0].SubscribeProxyName != "default" || ns[1].PublishProxyName != "pub" {
		t.Errorf("namespaces = %+v", ns)
	}
	if p := c.Proxies[0]; p.Name != "pub" || !p.BinaryEncoding || p.Timeout != time.Second {
		t.Errorf("proxies[0] = %+v", p)
	}
	if !c.RPC.WithoutNamespace.ProxyEnabled || c.RPC.WithoutNamespace.ProxyName != "default" || c.RPC.NamespaceBoundary != ":" {
		t.Errorf("rpc = %+v", c.RPC)
	}
}

// TestSubscribeStreamValidation: subscription streams need a gRPC proxy
// and exclude the other channel proxies of their namespace.
func TestSubscribeStreamValidation(t *testing.T) {
	tests := []struct {
		name, json, wantErr string
	}{
		{"default grpc", `{"channel": {"proxy": {"subscribe_stream": {"endpoint": "grpc://app:9000"}},
		  "namespaces": [{"name": "s1", "subscribe_stream_proxy_enabled": true, "subscribe_stream_proxy_bidirectional": true}]}}`, ""},
		{"named grpc", `{"proxies": [{"name": "st", "endpoint": "grpc://app:9000"}],
		  "channel": {"without_namespace": {"subscribe_stream_proxy_enabled": true, "subscribe_stream_proxy_name": "st"}}}`, ""},
		{"default http", `{"channel": {"proxy": {"subscribe_stream": {"endpoint": "http://app:9000"}},
		  "namespaces": [{"name": "s1", "subscribe_stream_proxy_enabled": true}]}}`, "need a grpc:// endpoint"},
		{"named http", `{"proxies": [{"name": "st", "endpoint": "http://app:9000"}],
		  "channel": {"without_namespace": {"subscribe_stream_proxy_enabled": true, "subscribe_stream_proxy_name": "st"}}}`, "need a grpc:// endpoint"},
		{"no default endpoint", `{"channel": {"namespaces": [{"name": "s1", "subscribe_stream_proxy_enabled": true}]}}`, "no endpoint"},
		{"undefined name", `{"channel": {"namespaces": [{"name": "s1", "subscribe_stream_proxy_enabled": true, "subscribe_stream_proxy_name": "nope"}]}}`, "not defined"},
		{"with subscribe proxy", `{"channel": {"proxy": {"subscribe_stream": {"endpoint": "grpc://app:9000"}, "subscribe": {"endpoint": "grpc://app:9000"}},
		  "namespaces": [{"name": "s1", "subscribe_stream_proxy_enabled": true, "subscribe_proxy_enabled": true}]}}`, "cannot be used with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tt.json), 0o600); err != nil {
				t.Fatal(err)
			}
			_, warnings, err := Resolve(Sources{File: path})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Resolve: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Resolve error = %v, want one containing %q", err, tt.wantErr)
			}
			for _, w := range warnings {
				if strings.Contains(w, "subscribe_stream") {
					t.Errorf("warning about a working key: %s", w)
				}
			}
		})
	}
}

// TestUniGRPCTLSNotice: a Centrifugo config that encrypts uni_grpc through
// grpc_api.tls is told that Gyre takes uni_grpc.tls.
func TestUniGRPCTLSNotice(t *testing.T) {
	c := Default()
	c.UniGRPC.Enabled = true
	c.GRPCAPI.TLS.Enabled = true
	if n := c.Notices(); len(n) != 1 || !strings.Contains(n[0], "uni_grpc.tls") {
		t.Errorf("Notices() = %q, want one about uni_grpc.tls", n)
	}
	c.UniGRPC.TLS.Enabled = true
	if n := c.Notices(); len(n) != 0 {
		t.Errorf("with uni_grpc.tls: Notices() = %q, want none", n)
	}
}

func TestHookProxyNotices(t *testing.T) {
	c := Default()
	c.Channel.Proxy.State = Proxy{Endpoint: "http://app/state", Timeout: time.Second, HTTPHeaders: []string{"Authorization"}, IncludeConnectionMeta: true}
	got := strings.Join(c.Notices(), "\n")
	for _, want := range []string{"channel.proxy.state.http_headers is not used", "channel.proxy.state.include_connection_meta is not used"} {
		if !strings.Contains(got, want) {
			t.Errorf("notices %q lack %q", got, want)
		}
	}
}
