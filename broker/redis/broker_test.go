package redis

import (
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/brokertest"
)

func TestBroker(t *testing.T) {
	for _, s := range setups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			brokertest.RunBrokerTests(t, func(t *testing.T) broker.Broker {
				return newEngine(t, cfg).Broker()
			}, brokertest.Cluster(), brokertest.PatternScopeInterrupt(func(t *testing.T) { killPubSub(t, cfg) }))
		})
	}
}

// killPubSub drops every pub/sub connection of the Redis servers of cfg
// (CLIENT KILL TYPE pubsub).
func killPubSub(t *testing.T, cfg Config) {
	t.Helper()
	for _, addr := range append(slices.Clone(cfg.Addresses), cfg.ClusterAddresses...) {
		if out, err := cliAt(addr, "client", "kill", "type", "pubsub"); err != nil {
			t.Fatalf("CLIENT KILL TYPE pubsub on %s: %v: %s", addr, err, out)
		}
	}
}

func TestPresence(t *testing.T) {
	for _, s := range setups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			brokertest.RunPresenceTests(t, func(t *testing.T) broker.PresenceManager {
				return newEngine(t, cfg).PresenceManager()
			})
			short := cfg
			short.PresenceTTL = 300 * time.Millisecond
			brokertest.RunPresenceExpiryTests(t, func(t *testing.T) broker.PresenceManager {
				return newEngine(t, short).PresenceManager()
			})
		})
	}
}
