package config

import (
	"slices"
	"strings"
	"testing"
)

// sharedPollJSON is a configuration with a shared_poll namespace "prices"
// whose shared_poll options are opts, the secret and the default proxy
// set unless top overrides them (top is the rest of the top-level
// table).
func sharedPollJSON(opts, top string) string {
	if top == "" {
		top = `"shared_poll": {"hmac_secret_key": "s"}, "channel": {"proxy": {"shared_poll_refresh": {"endpoint": "http://backend/poll"}}, `
	}
	return `{` + top + `"namespaces": [{"name": "prices", "subscription_type": "shared_poll", "shared_poll": {` + opts + `}}]}}`
}

// TestSharedPollConfigRefused: each shared_poll rule names its key.
func TestSharedPollConfigRefused(t *testing.T) {
	const p = "channel.namespaces[0].shared_poll"
	tests := []struct {
		name, json, path, want string
	}{
		{"secret required", sharedPollJSON(``, `"channel": {"proxy": {"shared_poll_refresh": {"endpoint": "http://backend/poll"}}, `),
			"shared_poll.hmac_secret_key", "is required: channel.namespaces[0] has subscription_type shared_poll"},
		{"secret required without namespace", `{"channel": {"proxy": {"shared_poll_refresh": {"endpoint": "http://b/p"}}, "without_namespace": {"subscription_type": "shared_poll"}}}`,
			"shared_poll.hmac_secret_key", "channel.without_namespace has subscription_type shared_poll"},
		{"default proxy without endpoint", sharedPollJSON(``, `"shared_poll": {"hmac_secret_key": "s"}, "channel": {`), p + ".proxy_name", "the default proxy has no endpoint"},
		{"default proxy by name without endpoint", sharedPollJSON(`"proxy_name": "default"`, `"shared_poll": {"hmac_secret_key": "s"}, "channel": {`), p + ".proxy_name", "channel.proxy.shared_poll_refresh.endpoint"},
		{"unknown named proxy", sharedPollJSON(`"proxy_name": "poller"`, ""), p + ".proxy_name", `proxy "poller" is not defined in proxies`},
		{"unknown mode", sharedPollJSON(`"mode": "sometimes"`, ""), p + ".mode", `unknown value "sometimes"`},
		{"publish in versionless mode", sharedPollJSON(`"publish_enabled": true, "mode": "versionless"`, ""), p + ".publish_enabled", "needs mode versioned"},
		{"publish in the default mode", sharedPollJSON(`"publish_enabled": true`, ""), p + ".publish_enabled", "needs mode versioned"},
		{"negative interval", sharedPollJSON(`"refresh_interval": "-1s"`, ""), p + ".refresh_interval", "must not be negative"},
		{"negative batch", sharedPollJSON(`"refresh_batch_size": -1`, ""), p + ".refresh_batch_size", "less than 0"},
		{"history", `{"shared_poll": {"hmac_secret_key": "s"}, "channel": {"proxy": {"shared_poll_refresh": {"endpoint": "http://b"}}, "namespaces": [{"name": "prices", "subscription_type": "shared_poll", "history_size": 10, "history_ttl": "1m"}]}}`,
			"channel.namespaces[0].history_size", "keep no history"},
		{"recovery", `{"shared_poll": {"hmac_secret_key": "s"}, "channel": {"proxy": {"shared_poll_refresh": {"endpoint": "http://b"}}, "namespaces": [{"name": "prices", "subscription_type": "shared_poll", "force_positioning": true}]}}`,
			"channel.namespaces[0].force_positioning", "keep no history"},
		{"wildcards", `{"shared_poll": {"hmac_secret_key": "s"}, "channel": {"proxy": {"shared_poll_refresh": {"endpoint": "http://b"}}, "without_namespace": {"subscription_type": "shared_poll", "allow_wildcard_subscriptions": true}}}`,
			"channel.without_namespace.allow_wildcard_subscriptions", "no wildcard"},
		{"bad default proxy endpoint", `{"channel": {"proxy": {"shared_poll_refresh": {"endpoint": "ftp://backend"}}}}`, "channel.proxy.shared_poll_refresh.endpoint", "scheme"},
		{"zero default proxy timeout", `{"channel": {"proxy": {"shared_poll_refresh": {"endpoint": "http://b", "timeout": "0s"}}}}`, "channel.proxy.shared_poll_refresh.timeout", "must be positive"},
		{"previous secret alone", `{"shared_poll": {"hmac_previous_secret_key": "old"}}`, "shared_poll.hmac_previous_secret_key", "without hmac_secret_key"},
		{"previous secret unchanged", `{"shared_poll": {"hmac_secret_key": "k", "hmac_previous_secret_key": "k"}}`, "shared_poll.hmac_previous_secret_key", "equals hmac_secret_key"},
		{"negative cutoff", `{"shared_poll": {"hmac_previous_secret_key_valid_until": -1}}`, "shared_poll.hmac_previous_secret_key_valid_until", "less than 0"},
		{"negative concurrency", `{"shared_poll": {"concurrency_limit": -1}}`, "shared_poll.concurrency_limit", "less than 0"},
		{"static header name", `{"channel": {"proxy": {"shared_poll_refresh": {"endpoint": "http://b", "http": {"static_headers": {"X Key": "v"}}}}}}`,
			"channel.proxy.shared_poll_refresh.http.static_headers", `invalid header name "X Key"`},
		{"static header value", `{"proxies": [{"name": "poll", "endpoint": "http://b", "http": {"static_headers": {"X-Key": "a\r\nX-Other: b"}}}]}`,
			"proxies[0].http.static_headers", "line break"},
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

// TestSharedPollConfigAccepted: shared_poll namespaces as Centrifugo's
// documentation writes them.
func TestSharedPollConfigAccepted(t *testing.T) {
	for _, text := range []string{
		sharedPollJSON(``, ""),
		sharedPollJSON(`"proxy_name": "default", "mode": "versionless", "refresh_interval": "5s", "refresh_batch_size": 100, "max_keys_per_connection": 50`, ""),
		sharedPollJSON(`"mode": "versioned", "publish_enabled": true, "channel_shutdown_delay": "-1s", "track_expired_extra_delay": "1m"`, ""),
		sharedPollJSON(`"proxy_name": "poller"`, `"shared_poll": {"hmac_secret_key": "s", "hmac_previous_secret_key": "old", "hmac_previous_secret_key_valid_until": 1700000000, "concurrency_limit": 8}, "proxies": [{"name": "poller", "endpoint": "grpc://backend:10001"}], "channel": {`),
		`{"shared_poll": {"hmac_secret_key": "s"}, "channel": {"proxy": {"shared_poll_refresh": {"endpoint": "https://b/poll", "timeout": "3s", "http": {"static_headers": {"Authorization": "Bearer t"}}}}, "without_namespace": {"subscription_type": "shared_poll"}}}`,
		// No shared_poll namespace: neither the secret nor a proxy is
		// needed, and shared_poll options elsewhere pass, as in
		// Centrifugo (Notices names them).
		`{"channel": {"namespaces": [{"name": "chat", "shared_poll": {"refresh_interval": "1s"}}]}}`,
	} {
		if err := validateJSON(t, text); err != nil {
			t.Errorf("%s: %v", text, err)
		}
	}
}

func TestSharedPollNotices(t *testing.T) {
	c, _, err := LoadBytes([]byte(`{"channel": {
		"proxy": {"shared_poll_refresh": {"endpoint": "http://backend/refresh", "http_headers": ["Cookie"]}},
		"without_namespace": {"shared_poll": {"mode": "versioned"}},
		"namespaces": [
			{"name": "chat"},
			{"name": "board", "subscription_type": "map", "shared_poll": {"refresh_interval": "1s"}},
			{"name": "prices", "subscription_type": "shared_poll", "shared_poll": {"refresh_interval": "1s"}},
			{"name": "votes", "subscription_type": "shared_poll", "presence": true}
		]}}`), FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range c.Notices() {
		if strings.Contains(n, "shared_poll") {
			got = append(got, n)
		}
	}
	want := []string{
		"config: channel.proxy.shared_poll_refresh.http_headers is not used: these calls come from no client request (docs/shared-poll.md)",
		"config: channel.without_namespace.shared_poll is set but has no effect: the namespace's subscription_type is stream, not shared_poll",
		"config: channel.namespaces[1].shared_poll is set but has no effect: the namespace's subscription_type is map, not shared_poll",
		"config: channel.namespaces[3].presence has no effect: shared_poll channels keep no presence nor join/leave in Gyre",
	}
	if !slices.Equal(got, want) {
		t.Errorf("notices:\n got %q\nwant %q", got, want)
	}
}
