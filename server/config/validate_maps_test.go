package config

import (
	"strings"
	"testing"
)

// validateJSON loads a configuration and validates it.
func validateJSON(t *testing.T, text string) error {
	t.Helper()
	c, _, err := LoadBytes([]byte(text), FormatJSON)
	if err != nil {
		t.Fatalf("load %s: %v", text, err)
	}
	return c.Validate()
}

// TestMapConfigRefused: each map rule names its key.
func TestMapConfigRefused(t *testing.T) {
	ns := func(opts string) string {
		return `{"channel": {"namespaces": [{"name": "m", ` + opts + `}]}}`
	}
	const p = "channel.namespaces[0]"
	tests := []struct {
		name, json, path, want string
	}{
		{"mode required", ns(`"subscription_type": "map"`), p + ".map.mode", "is required"},
		{"unknown mode", ns(`"subscription_type": "map", "map": {"mode": "durable"}`), p + ".map.mode", `unknown value "durable"`},
		{"key_ttl required", ns(`"subscription_type": "map", "map": {"mode": "recoverable"}`), p + ".map.key_ttl", "is required when map.mode is recoverable"},
		{"key_ttl in persistent", ns(`"subscription_type": "map", "map": {"mode": "persistent", "key_ttl": "1m"}`), p + ".map.key_ttl", "must be 0"},
		{"negative key_ttl", ns(`"subscription_type": "map", "map": {"mode": "ephemeral", "key_ttl": "-1s"}`), p + ".map.key_ttl", "must not be negative"},
		{"stream in ephemeral", ns(`"subscription_type": "map", "map": {"mode": "ephemeral", "key_ttl": "1m", "stream_size": 10}`), p + ".map.stream_size", "ephemeral"},
		{"meta_ttl below stream_ttl", ns(`"subscription_type": "map", "map": {"mode": "recoverable", "key_ttl": "10s", "stream_ttl": "2m", "meta_ttl": "1m"}`), p + ".map.meta_ttl", "shorter than map.stream_ttl"},
		{"meta_ttl below key_ttl", ns(`"subscription_type": "map", "map": {"mode": "recoverable", "key_ttl": "1h", "meta_ttl": "2m"}`), p + ".map.meta_ttl", "shorter than map.key_ttl"},
		{"meta_ttl in persistent", ns(`"subscription_type": "map", "map": {"mode": "persistent", "meta_ttl": "1h"}`), p + ".map.meta_ttl", "must be 0"},
		{"persistent presence", ns(`"subscription_type": "map_clients", "map": {"mode": "persistent"}`), p + ".map.mode", "must expire"},
		{"client_key", ns(`"subscription_type": "map", "map": {"mode": "persistent", "client_key": "session"}`), p + ".map.client_key", "unknown value"},
		{"client_key with publish proxy", `{"channel": {"proxy": {"map_publish": {"endpoint": "http://backend/map"}}, "namespaces": [{"name": "m", "subscription_type": "map", "map": {"mode": "persistent", "client_key": "user_id", "publish_proxy_enabled": true}}]}}`,
			p + ".map.client_key", "publish_proxy_enabled"},
		{"client_key with remove proxy", `{"channel": {"proxy": {"map_remove": {"endpoint": "http://backend/map"}}, "namespaces": [{"name": "m", "subscription_type": "map", "map": {"mode": "persistent", "client_key": "client_id", "remove_proxy_enabled": true}}]}}`,
			p + ".map.client_key", "remove_proxy_enabled"},
		{"default publish proxy without endpoint", ns(`"subscription_type": "map", "map": {"mode": "persistent", "publish_proxy_enabled": true}`), p + ".map.publish_proxy_name", "no endpoint"},
		{"unknown remove proxy", ns(`"subscription_type": "map", "map": {"mode": "persistent", "remove_proxy_enabled": true, "remove_proxy_name": "nope"}`), p + ".map.remove_proxy_name", `proxy "nope" is not defined`},
		{"bad map proxy endpoint", `{"channel": {"proxy": {"map_publish": {"endpoint": "ftp://backend"}}}}`, "channel.proxy.map_publish.endpoint", "scheme"},
		{"page sizes", ns(`"subscription_type": "map", "map": {"mode": "persistent", "min_page_size": 500, "max_page_size": 200}`), p + ".map.min_page_size", "greater than map.max_page_size"},
		{"default page size", ns(`"subscription_type": "map", "map": {"mode": "persistent", "default_page_size": 5000}`), p + ".map.default_page_size", "not within"},
		{"remove_client_on_unsubscribe on a stream namespace", ns(`"map": {"remove_client_on_unsubscribe": true}`), p + ".map.remove_client_on_unsubscribe", "needs subscription_type map"},
		{"wildcards", ns(`"subscription_type": "map", "allow_wildcard_subscriptions": true, "map": {"mode": "persistent"}`), p + ".allow_wildcard_subscriptions", "no wildcard"},
		{"subscription stream", `{"channel": {"proxy": {"subscribe_stream": {"endpoint": "grpc://backend:1"}}, "namespaces": [{"name": "m", "subscription_type": "map", "subscribe_stream_proxy_enabled": true, "map": {"mode": "persistent"}}]}}`,
			p + ".subscribe_stream_proxy_enabled", "cannot be streamed"},
		{"unknown type", ns(`"subscription_type": "table"`), p + ".subscription_type", "unknown value"},
		{"presence prefix to no namespace", ns(`"map_clients_presence_channel_prefix": "nope:"`), p + ".map_clients_presence_channel_prefix", "names no namespace"},
		{"presence prefix to a stream namespace", `{"channel": {"namespaces": [{"name": "chat", "map_users_presence_channel_prefix": "chat:"}]}}`,
			"channel.namespaces[0].map_users_presence_channel_prefix", `subscription_type ""`},
		{"presence prefix to the other map type", `{"channel": {"namespaces": [{"name": "chat", "map_users_presence_channel_prefix": "mc:"}, {"name": "mc", "subscription_type": "map_clients"}]}}`,
			"channel.namespaces[0].map_users_presence_channel_prefix", "want map_users"},
		{"postgres map broker", `{"map_broker": {"type": "postgres"}}`, "map_broker.type", "postgres is not supported by Gyre"},
		{"unknown map broker", `{"map_broker": {"type": "etcd"}}`, "map_broker.type", "unknown value"},
		{"redis map broker of its own", `{"map_broker": {"type": "redis", "redis": {"address": ["not an address"]}}}`, "map_broker.redis.address[0]", "invalid address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateJSON(t, tt.json)
			if err == nil {
				t.Fatalf("%s is accepted", tt.json)
			}
			prefix := "config: " + tt.path + ": "
			for line := range strings.SplitSeq(err.Error(), "\n") {
				if strings.HasPrefix(line, prefix) && strings.Contains(line, tt.want) {
					return
				}
			}
			t.Errorf("Validate() = %q, want a line %q...%q", err, prefix, tt.want)
		})
	}
}

// TestMapConfigAccepted: map namespaces as Centrifugo's documentation
// writes them, and the defaults map_clients and map_users may rely on.
func TestMapConfigAccepted(t *testing.T) {
	for _, text := range []string{
		`{"channel": {"namespaces": [{"name": "board", "subscription_type": "map", "map": {"mode": "persistent", "allow_publish_for_subscriber": true, "allow_remove_for_subscriber": true}}]}}`,
		`{"channel": {"namespaces": [{"name": "cursors", "subscription_type": "map", "map": {"mode": "ephemeral", "key_ttl": "30s", "client_key": "client_id", "remove_client_on_unsubscribe": true, "allow_publish_for_subscriber": true}}]}}`,
		`{"channel": {"namespaces": [{"name": "scores", "subscription_type": "map", "map": {"mode": "recoverable", "key_ttl": "1h", "stream_size": 1000, "stream_ttl": "10m", "meta_ttl": "2h", "min_page_size": 10, "max_page_size": 50, "default_page_size": 20}}]}}`,
		`{"channel": {"namespaces": [{"name": "chat", "map_clients_presence_channel_prefix": "online:", "map_users_presence_channel_prefix": "users:"}, {"name": "online", "subscription_type": "map_clients"}, {"name": "users", "subscription_type": "map_users", "map": {"mode": "recoverable", "key_ttl": "1m"}}]}}`,
		`{"channel": {"proxy": {"map_publish": {"endpoint": "http://backend/map_publish"}, "map_remove": {"endpoint": "grpc://backend:10001"}}, "namespaces": [{"name": "board", "subscription_type": "map", "map": {"mode": "persistent", "publish_proxy_enabled": true, "remove_proxy_enabled": true}}]}}`,
		`{"proxies": [{"name": "maps", "endpoint": "http://backend/maps"}], "channel": {"namespaces": [{"name": "board", "subscription_type": "map", "map": {"mode": "persistent", "publish_proxy_enabled": true, "publish_proxy_name": "maps"}}]}}`,
		`{"map_broker": {"type": "redis"}}`,
		// Map options on a stream namespace mean nothing and pass, as
		// in Centrifugo.
		`{"channel": {"namespaces": [{"name": "chat", "map": {"mode": "persistent", "key_ttl": "1m", "allow_publish_for_client": true}}]}}`,
		`{"engine": {"type": "redis"}, "map_broker": {"type": "redis"}}`,
	} {
		if err := validateJSON(t, text); err != nil {
			t.Errorf("%s: %v", text, err)
		}
	}
}

// TestMapBrokerSharesEngineRedis: a redis map broker without a Redis of
// its own uses the redis engine's.
func TestMapBrokerSharesEngineRedis(t *testing.T) {
	for _, tt := range []struct {
		json  string
		share bool
	}{
		{`{"engine": {"type": "redis"}, "map_broker": {"type": "redis"}}`, true},
		{`{"engine": {"type": "redis"}, "map_broker": {"type": "redis", "redis": {"prefix": "maps"}}}`, true},
		{`{"engine": {"type": "redis"}, "map_broker": {"type": "redis", "redis": {"address": "redis://maps:6379"}}}`, false},
		{`{"engine": {"type": "redis"}, "map_broker": {"type": "redis", "redis": {"cluster_address": ["c:7000"]}}}`, false},
		{`{"map_broker": {"type": "redis"}}`, false},
		{`{"engine": {"type": "redis"}}`, true}, // map_broker.type empty follows the engine
		{`{"engine": {"type": "redis"}, "map_broker": {"type": "memory"}}`, false},
		{`{}`, false},
	} {
		c, _, err := LoadBytes([]byte(tt.json), FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.MapBrokerSharesEngineRedis(); got != tt.share {
			t.Errorf("%s: shares the engine's Redis: %v, want %v", tt.json, got, tt.share)
		}
	}
}
