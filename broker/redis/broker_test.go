package redis

import (
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
			})
		})
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
