package cluster_test

import (
	"testing"

	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

const (
	hmacSecret = "gyre-cluster-test-secret-0123456789abcdef"
	apiKey     = "gyre-cluster-test-api-key"
)

// chatNamespace is the namespace every test uses: presence, join/leave to
// every subscriber, and a history long enough that recovery never runs
// out of it.
func chatNamespace() map[string]any {
	return map[string]any{
		"name":                          "chat",
		"presence":                      true,
		"join_leave":                    true,
		"force_push_join_leave":         true,
		"history_size":                  20000,
		"history_ttl":                   "600s",
		"force_recovery":                true,
		"allow_subscribe_for_client":    true,
		"allow_presence_for_subscriber": true,
		"allow_history_for_subscriber":  true,
	}
}

// nodeConfig is the configuration of a node named name on the Redis
// engine with the given engine.redis keys.
func nodeConfig(name string, redis map[string]any) gyreproc.Config {
	c := gyreproc.Config{}
	c.Set("log.level", "info")
	c.Set("client.token.hmac_secret_key", hmacSecret)
	c.Set("client.allowed_origins", []string{"*"})
	c.Set("http_api.key", apiKey)
	c.Set("health.enabled", true)
	c.Set("node.name", name)
	c.Set("engine.type", "redis")
	c.Set("engine.redis", redis)
	c.Set("channel.namespaces", []any{chatNamespace()})
	return c
}

// redisAt is the engine.redis section for standalone servers.
func redisAt(addrs ...string) map[string]any {
	return map[string]any{"address": addrs}
}

// presenceClients asks node n for the client IDs present in channel.
func presenceClients(t testing.TB, n *gyreproc.Node, channel string) map[string]string {
	t.Helper()
	var res struct {
		Presence map[string]struct {
			User   string `json:"user"`
			Client string `json:"client"`
		} `json:"presence"`
	}
	n.MustCall(t, "presence", map[string]any{"channel": channel}, &res)
	out := map[string]string{}
	for id, ci := range res.Presence {
		out[id] = ci.User
	}
	return out
}

// streamTop asks node n for the stream position of channel.
func streamTop(t testing.TB, n *gyreproc.Node, channel string) (uint64, string) {
	t.Helper()
	var res struct {
		Offset uint64 `json:"offset"`
		Epoch  string `json:"epoch"`
	}
	n.MustCall(t, "history", map[string]any{"channel": channel, "limit": 0}, &res)
	return res.Offset, res.Epoch
}

// historyNumbers asks node n for the whole history of channel and returns
// the "n" of the publication at each offset, with the stream's epoch.
func historyNumbers(t testing.TB, n *gyreproc.Node, channel string) (map[uint64]int, string) {
	t.Helper()
	var res struct {
		Publications []struct {
			Offset uint64 `json:"offset"`
			Data   struct {
				N int `json:"n"`
			} `json:"data"`
		} `json:"publications"`
		Epoch string `json:"epoch"`
	}
	n.MustCall(t, "history", map[string]any{"channel": channel, "limit": -1}, &res)
	out := make(map[uint64]int, len(res.Publications))
	for _, p := range res.Publications {
		out[p.Offset] = p.Data.N
	}
	return out, res.Epoch
}
