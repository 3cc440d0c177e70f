package redis

import (
	"net"
	"os/exec"
	"slices"
	"strings"
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
		host, port, err := net.SplitHostPort(strings.TrimPrefix(addr, "redis://"))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("redis-cli", "-h", host, "-p", port, "client", "kill", "type", "pubsub").CombinedOutput(); err != nil {
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
