package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	chat := func(o ChannelOptions) []Namespace { return []Namespace{{Name: "chat", ChannelOptions: o}} }
	tests := []struct {
		name   string
		mutate func(c *Config)
		path   string
		want   string
	}{
		{"port range", func(c *Config) { c.HTTPServer.Port = 70000 }, "http_server.port", "greater than 65535"},
		{"negative port", func(c *Config) { c.HTTPServer.InternalPort = -1 }, "http_server.internal_port", "less than 0"},
		{"uni grpc port", func(c *Config) { c.UniGRPC.Port = 65536 }, "uni_grpc.port", "greater than 65535"},
		{"grpc api port", func(c *Config) { c.GRPCAPI.Port = 65536 }, "grpc_api.port", "greater than 65535"},
		{"grpc api error mode", func(c *Config) { c.GRPCAPI.ErrorMode = "status" }, "grpc_api.error_mode", "unknown value"},
		{"grpc api port taken by http", func(c *Config) { c.GRPCAPI.Enabled = true; c.GRPCAPI.Port = 8000 }, "grpc_api.port", "port of the HTTP server"},
		{"grpc api port taken by uni_grpc", func(c *Config) {
			c.GRPCAPI.Enabled, c.UniGRPC.Enabled = true, true
			c.GRPCAPI.Port, c.UniGRPC.Port = 12000, 12000
		}, "grpc_api.port", "port of uni_grpc"},
		{"grpc api tls without key", func(c *Config) {
			c.GRPCAPI.Enabled = true
			c.GRPCAPI.TLS = TLS{Enabled: true, CertPEMFile: "/c.pem"}
		}, "grpc_api.tls.key_pem", "private key"},
		{"log level", func(c *Config) { c.Log.Level = "loud" }, "log.level", `unknown value "loud"`},
		{"engine type", func(c *Config) { c.Engine.Type = "etcd" }, "engine.type", `unknown value "etcd" (allowed: "memory", "redis")`},
		{"broker type", func(c *Config) { c.Broker.Type = "kafka" }, "broker.type", "unknown value"},
		{"error mode", func(c *Config) { c.HTTPAPI.ErrorMode = "http" }, "http_api.error_mode", "unknown value"},
		{"handler prefix", func(c *Config) { c.WebSocket.HandlerPrefix = "ws" }, "websocket.handler_prefix", "must start with '/'"},
		{"compression level", func(c *Config) { c.WebSocket.CompressionLevel = 10 }, "websocket.compression_level", "greater than 9"},
		{"negative limit", func(c *Config) { c.Client.ChannelLimit = -1 }, "client.channel_limit", "less than 0"},
		{"previous hmac secret alone", func(c *Config) { c.Client.Token.HMACPreviousSecretKey = "old" }, "client.token.hmac_previous_secret_key", "without hmac_secret_key"},
		{"previous hmac secret unchanged", func(c *Config) {
			c.Client.SubscriptionToken.HMACSecretKey, c.Client.SubscriptionToken.HMACPreviousSecretKey = "s", "s"
		}, "client.subscription_token.hmac_previous_secret_key", "equals hmac_secret_key"},
		{"negative previous valid until", func(c *Config) { c.Client.Token.HMACPreviousSecretKeyValidUntil = -1 }, "client.token.hmac_previous_secret_key_valid_until", "less than 0"},
		{"zero body size", func(c *Config) { c.SSE.MaxRequestBodySize = 0 }, "sse.max_request_body_size", "less than 1"},
		{"zero shutdown", func(c *Config) { c.Shutdown.Timeout = 0 }, "shutdown.timeout", "must be positive"},
		{"negative delay", func(c *Config) { c.Client.ExpiredCloseDelay = -time.Second }, "client.expired_close_delay", "must not be negative"},
		{"pong not below ping", func(c *Config) { c.Client.PongTimeout = c.Client.PingInterval }, "client.pong_timeout", "must be less than client.ping_interval"},
		{"empty boundary", func(c *Config) { c.Channel.NamespaceBoundary = "" }, "channel.namespace_boundary", "must not be empty"},
		{"max length", func(c *Config) { c.Channel.MaxLength = 0 }, "channel.max_length", "less than 1"},
		{"meta ttl precision", func(c *Config) { c.Channel.HistoryMetaTTL = 1500 * time.Millisecond }, "channel.history_meta_ttl", "finer than the supported precision of 1s"},
		{"empty origin", func(c *Config) { c.Client.AllowedOrigins = []string{"https://a", ""} }, "client.allowed_origins[1]", "must not be empty"},
		{"user id claim", func(c *Config) { c.Client.Token.UserIDClaim = "user-id" }, "client.token.user_id_claim", "invalid claim name"},
		{"audience regex", func(c *Config) { c.Client.Token.AudienceRegex = "(" }, "client.token.audience_regex", "invalid regular expression"},
		{"issuer regex", func(c *Config) { c.Client.SubscriptionToken.IssuerRegex = "[" }, "client.subscription_token.issuer_regex", "invalid regular expression"},
		{"rsa key", func(c *Config) { c.Client.Token.RSAPublicKey = "not a key" }, "client.token.rsa_public_key", "not PEM"},
		{"ecdsa key", func(c *Config) { c.Client.Token.ECDSAPublicKey = rsaPEM(t) }, "client.token.ecdsa_public_key", "not an ECDSA public key"},
		{"jwks", func(c *Config) { c.Client.Token.JWKSPublicEndpoint = "ftp://keys" }, "client.token.jwks_public_endpoint", "http or https URL"},
		{"namespace name", func(c *Config) { c.Channel.Namespaces = []Namespace{{Name: "c"}} }, "channel.namespaces[0].name", "invalid namespace name"},
		{"namespace chars", func(c *Config) { c.Channel.Namespaces = []Namespace{{Name: "chat room"}} }, "channel.namespaces[0].name", "invalid namespace name"},
		{"duplicate namespace", func(c *Config) { c.Channel.Namespaces = []Namespace{{Name: "chat"}, {Name: "news"}, {Name: "chat"}} }, "channel.namespaces[2].name", "already defined at channel.namespaces[0]"},
		{"history size without ttl", func(c *Config) { c.Channel.Namespaces = chat(ChannelOptions{HistorySize: 10}) }, "channel.namespaces[0].history_ttl", "must be set when history_size is set"},
		{"history ttl without size", func(c *Config) { c.Channel.WithoutNamespace.HistoryTTL = time.Minute }, "channel.without_namespace.history_size", "must be set when history_ttl is set"},
		{"history ttl over meta", func(c *Config) {
			c.Channel.Namespaces = chat(ChannelOptions{HistorySize: 1, HistoryTTL: 2 * time.Hour, HistoryMetaTTL: time.Hour})
		}, "channel.namespaces[0].history_ttl", "longer than history_meta_ttl (1h0m0s)"},
		{"history ttl precision", func(c *Config) {
			c.Channel.Namespaces = chat(ChannelOptions{HistorySize: 1, HistoryTTL: 1500 * time.Millisecond})
		}, "channel.namespaces[0].history_ttl", "finer than the supported precision"},
		{"negative history size", func(c *Config) { c.Channel.Namespaces = chat(ChannelOptions{HistorySize: -1}) }, "channel.namespaces[0].history_size", "less than 0"},
		{"recovery without history", func(c *Config) { c.Channel.Namespaces = chat(ChannelOptions{ForceRecovery: true}) }, "channel.namespaces[0].force_recovery", "needs history"},
		{"recovery mode", func(c *Config) { c.Channel.WithoutNamespace.ForceRecoveryMode = "full" }, "channel.without_namespace.force_recovery_mode", `unknown value "full"`},
		{"delta type", func(c *Config) { c.Channel.Namespaces = chat(ChannelOptions{AllowedDeltaTypes: []string{"xdelta"}}) }, "channel.namespaces[0].allowed_delta_types", `unknown value "xdelta"`},
		{"channel regex", func(c *Config) { c.Channel.Namespaces = chat(ChannelOptions{ChannelRegex: "a(b"}) }, "channel.namespaces[0].channel_regex", "invalid regular expression"},
		{"personal namespace", func(c *Config) {
			c.Client.SubscribeToUserPersonalChannel = SubscribeToUserPersonalChannel{Enabled: true, PersonalChannelNamespace: "users"}
		}, "client.subscribe_to_user_personal_channel.personal_channel_namespace", `namespace "users" is not defined`},
		{"single connection presence", func(c *Config) {
			c.Client.SubscribeToUserPersonalChannel = SubscribeToUserPersonalChannel{Enabled: true, SingleConnection: true}
		}, "client.subscribe_to_user_personal_channel.single_connection", "needs presence"},
		{"admin password", func(c *Config) { c.Admin.Enabled = true; c.Admin.Secret = "s" }, "admin.password", "must be set"},
		{"admin secret", func(c *Config) { c.Admin.Enabled = true; c.Admin.Password = "p" }, "admin.secret", "must be set"},
		{"admin web_path", func(c *Config) {
			c.Admin.Enabled, c.Admin.Insecure, c.Admin.WebPath = true, true, "/nonexistent-admin-build"
		}, "admin.web_path", "index.html"},
		{"admin web_proxy_address", func(c *Config) {
			c.Admin.Enabled, c.Admin.Insecure, c.Admin.WebProxyAddress = true, true, "localhost:5173"
		}, "admin.web_proxy_address", "http://"},
		{"admin web_path and proxy", func(c *Config) {
			c.Admin.Enabled, c.Admin.Insecure, c.Admin.WebProxyAddress, c.Admin.WebPath = true, true, "http://localhost:5173", "."
		}, "admin.web_path", "together"},
		{"tls cert", func(c *Config) { c.HTTPServer.TLS = TLS{Enabled: true, KeyPEMFile: "k.pem"} }, "http_server.tls.cert_pem", "certificate"},
		{"tls key", func(c *Config) {
			c.UniGRPC = UniGRPC{Enabled: true, Port: 11000, TLS: TLS{Enabled: true, CertPEM: "c"}}
		}, "uni_grpc.tls.key_pem", "private key"},
		{"redis address", func(c *Config) { c.Engine.Type = "redis"; c.Engine.Redis.Address = []string{"localhost"} }, "engine.redis.address[0]", "want host:port or a redis:// URL"},
		{"redis scheme", func(c *Config) { c.Engine.Type = "redis"; c.Engine.Redis.Address = []string{"http://x:1"} }, "engine.redis.address[0]", `unsupported scheme "http"`},
		{"redis no address", func(c *Config) { c.Engine.Type = "redis"; c.Engine.Redis.Address = nil }, "engine.redis.address", "at least one address"},
		{"sentinel master", func(c *Config) {
			c.Broker = Broker{Enabled: true, Type: "redis", Redis: c.Broker.Redis}
			c.Broker.Redis.SentinelAddress = []string{"s:26379"}
		}, "broker.redis.sentinel_master_name", "must be set"},
		{"cluster and sentinel", func(c *Config) {
			c.PresenceManager.Enabled, c.PresenceManager.Type = true, "redis"
			c.PresenceManager.Redis.ClusterAddress = []string{"c:7000"}
			c.PresenceManager.Redis.SentinelAddress = []string{"s:26379"}
		}, "presence_manager.redis.cluster_address", "cannot be combined"},
		{"nats url", func(c *Config) { c.Broker.Enabled, c.Broker.Type, c.Broker.Nats.URL = true, "nats", "::" }, "broker.nats.url", "invalid NATS URL"},
		{"nats without a store and a namespace with history", func(c *Config) {
			c.Broker.Enabled, c.Broker.Type = true, "nats"
			c.Channel.Namespaces = chat(ChannelOptions{HistorySize: 10, HistoryTTL: time.Minute})
		}, "channel.namespaces[0].history_size", "broker.type nats keeps no history"},
		{"nats without a store and history without a namespace", func(c *Config) {
			c.Broker.Enabled, c.Broker.Type = true, "nats"
			c.Channel.WithoutNamespace.HistorySize, c.Channel.WithoutNamespace.HistoryTTL = 1, time.Minute
		}, "channel.without_namespace.history_size", "keeps no history"},
		{"raw mode with jetstream", func(c *Config) {
			c.Broker.Enabled, c.Broker.Type = true, "nats"
			c.Broker.Nats.RawMode.Enabled, c.Broker.Nats.JetStream.Enabled = true, true
		}, "broker.nats.raw_mode.enabled", "cannot be combined with broker.nats.jetstream"},
		{"raw mode with redisnats", func(c *Config) {
			c.Broker.Enabled, c.Broker.Type = true, "redisnats"
			c.Broker.Nats.RawMode.Enabled = true
		}, "broker.nats.raw_mode.enabled", "cannot be combined with broker.type redisnats"},
		{"redisnats with jetstream", func(c *Config) {
			c.Broker.Enabled, c.Broker.Type = true, "redisnats"
			c.Broker.Nats.JetStream.Enabled = true
		}, "broker.nats.jetstream.enabled", "redisnats keeps history in Redis"},
		{"redisnats redis address", func(c *Config) {
			c.Broker.Enabled, c.Broker.Type = true, "redisnats"
			c.Broker.Redis.Address = []string{"nohostport"}
		}, "broker.redis.address[0]", "invalid address"},
		{"raw mode empty replacement", func(c *Config) {
			c.Broker.Enabled, c.Broker.Type = true, "nats"
			c.Broker.Nats.RawMode.ChannelReplacements = map[string]string{"": "."}
		}, "broker.nats.raw_mode.channel_replacements", "an empty string"},
		{"redis timeout", func(c *Config) { c.Engine.Redis.IOTimeout = 0 }, "engine.redis.io_timeout", "must be positive"},
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

func TestValidateReportsAll(t *testing.T) {
	c := Default()
	c.HTTPServer.Port = -1
	c.Log.Level = "x"
	err := c.Validate()
	if err == nil || len(strings.Split(err.Error(), "\n")) != 2 {
		t.Fatalf("Validate() = %v, want two problems", err)
	}
}

func TestValidateAccepts(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *Config)
	}{
		{"pings off", func(c *Config) { c.Client.PingInterval, c.Client.PongTimeout = -1, -1 }},
		{"pong check off", func(c *Config) { c.Client.PongTimeout = -1 }},
		{"admin insecure", func(c *Config) { c.Admin.Enabled, c.Admin.Insecure = true, true }},
		{"admin web proxy", func(c *Config) {
			c.Admin.Enabled, c.Admin.Insecure, c.Admin.WebProxyAddress = true, true, "http://localhost:5173"
		}},
		{"tls from files", func(c *Config) { c.HTTPServer.TLS = TLS{Enabled: true, CertPEMFile: "c.pem", KeyPEMFile: "k.pem"} }},
		{"redis forms", func(c *Config) {
			c.Engine.Type = "redis"
			c.Engine.Redis.Address = []string{"localhost:6379", "redis://u:p@host:6380/2", "rediss://h:6379", "unix:///tmp/redis.sock"}
		}},
		{"redis sentinel", func(c *Config) {
			c.Engine.Type = "redis"
			c.Engine.Redis.SentinelAddress = []string{"s1:26379", "s2:26379"}
			c.Engine.Redis.SentinelMasterName = "mymaster"
		}},
		{"rsa key", func(c *Config) { c.Client.Token.RSAPublicKey = rsaPEM(t) }},
		{"rsa key base64", func(c *Config) { c.Client.Token.RSAPublicKey = base64.StdEncoding.EncodeToString([]byte(rsaPEM(t))) }},
		{"rsa key file", func(c *Config) { c.Client.Token.RSAPublicKey = writeTemp(t, rsaPEM(t)) }},
		{"rsa pkcs1", func(c *Config) { c.Client.Token.RSAPublicKey = rsaPKCS1PEM(t) }},
		{"ecdsa key", func(c *Config) { c.Client.Token.ECDSAPublicKey = ecdsaPEM(t) }},
		{"jwks", func(c *Config) { c.Client.Token.JWKSPublicEndpoint = "https://auth.example.com/{{tenant}}/jwks" }},
		{"personal channel", func(c *Config) {
			c.Channel.Namespaces = []Namespace{{Name: "personal", ChannelOptions: ChannelOptions{Presence: true}}}
			c.Client.SubscribeToUserPersonalChannel = SubscribeToUserPersonalChannel{Enabled: true, PersonalChannelNamespace: "personal", SingleConnection: true}
		}},
		{"history inherits meta ttl", func(c *Config) {
			c.Channel.WithoutNamespace.HistorySize = 10
			c.Channel.WithoutNamespace.HistoryTTL = 720 * time.Hour
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(c)
			if err := c.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}

func rsaPEM(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func rsaPKCS1PEM(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.PublicKey)}))
}

func ecdsaPEM(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
