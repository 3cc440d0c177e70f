package nats

import (
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/brokertest"
	"github.com/gyrehq/gyre/broker/nats/natstest"
)

// newBroker connects a broker to s with cfg's other settings.
func newBroker(t testing.TB, s *natstest.Server, cfg Config) *Broker {
	t.Helper()
	cfg.URL = s.URL
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestBrokerWithoutStore(t *testing.T) {
	s := natstest.Start(t)
	brokertest.RunBrokerTests(t, func(t *testing.T) broker.Broker {
		return newBroker(t, s, Config{})
	}, brokertest.NoHistory())
}
