package memory_test

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/brokertest"
	"github.com/gyrehq/gyre/broker/memory"
)

func newBroker(t testing.TB) broker.Broker {
	b, err := memory.NewBroker(memory.Config{})
	if err != nil {
		t.Fatalf("NewBroker: %v", err)
	}
	return b
}

func TestBroker(t *testing.T) {
	// One node: every pattern scope is delivered, subscribed or not.
	brokertest.RunBrokerTests(t, func(t *testing.T) broker.Broker { return newBroker(t) }, brokertest.ScopesAlwaysDelivered())
}

// TestBrokerSweeping runs the suite with a sweep so frequent that it races
// every publish and History call.
func TestBrokerSweeping(t *testing.T) {
	brokertest.RunBrokerTests(t, func(t *testing.T) broker.Broker {
		b, err := memory.NewBroker(memory.Config{SweepInterval: time.Millisecond, Shards: 2})
		if err != nil {
			t.Fatalf("NewBroker: %v", err)
		}
		return b
	}, brokertest.ScopesAlwaysDelivered())
}

func TestPresence(t *testing.T) {
	brokertest.RunPresenceTests(t, func(t *testing.T) broker.PresenceManager {
		pm, err := memory.NewPresenceManager(memory.PresenceConfig{})
		if err != nil {
			t.Fatalf("NewPresenceManager: %v", err)
		}
		return pm
	})
}

func TestPresenceExpiry(t *testing.T) {
	brokertest.RunPresenceExpiryTests(t, func(t *testing.T) broker.PresenceManager {
		pm, err := memory.NewPresenceManager(memory.PresenceConfig{TTL: 100 * time.Millisecond, SweepInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatalf("NewPresenceManager: %v", err)
		}
		return pm
	})
}

func BenchmarkBroker(b *testing.B) {
	brokertest.BenchmarkBroker(b, func(b *testing.B) broker.Broker { return newBroker(b) })
}
