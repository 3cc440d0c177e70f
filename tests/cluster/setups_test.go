package cluster_test

import (
	"testing"

	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// setup is a way to run nodes that share channels with history: start
// starts its servers and returns the configuration of a node named name.
type setup struct {
	name  string
	start func(t *testing.T) func(name string) gyreproc.Config
}

// historySetups are the engines that keep history across nodes: Redis;
// NATS with history in JetStream (presence in Redis); redisnats, NATS with
// history and presence in Redis.
func historySetups() []setup {
	return []setup{
		{"redis", func(t *testing.T) func(string) gyreproc.Config {
			r := redistest.Start(t)
			return func(name string) gyreproc.Config { return nodeConfig(name, redisAt(r.Addr)) }
		}},
		{"nats-jetstream", func(t *testing.T) func(string) gyreproc.Config {
			r, n := redistest.Start(t), natstest.Start(t)
			return func(name string) gyreproc.Config {
				return nodeConfig(name, redisAt(r.Addr)).Set("broker", natsBroker(n.URL, true))
			}
		}},
		{"redisnats", func(t *testing.T) func(string) gyreproc.Config {
			r, n := redistest.Start(t), natstest.Start(t)
			return func(name string) gyreproc.Config {
				b := natsBroker(n.URL, false)
				b["type"] = "redisnats"
				b["redis"] = redisAt(r.Addr)
				return nodeConfig(name, redisAt(r.Addr)).Set("broker", b)
			}
		}},
	}
}

// natsBroker is the broker section of a nats broker at url, with history
// in JetStream when jetstream is set.
func natsBroker(url string, jetstream bool) map[string]any {
	return map[string]any{
		"enabled": true,
		"type":    "nats",
		"nats": map[string]any{
			"url":       url,
			"jetstream": map[string]any{"enabled": jetstream},
		},
	}
}
