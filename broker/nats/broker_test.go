package nats

import (
	"fmt"
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/brokertest"
	"github.com/gyrehq/gyre/broker/nats/jetstream"
	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
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
	}, brokertest.NoHistory(), brokertest.Cluster())
}

// subtestPrefixes returns a func giving each subtest a prefix of its own,
// the same to every broker (node) made in it.
func subtestPrefixes() func(t *testing.T) string {
	prefixes := map[string]string{}
	return func(t *testing.T) string {
		p, ok := prefixes[t.Name()]
		if !ok {
			p = fmt.Sprintf("t%d", len(prefixes)+1)
			prefixes[t.Name()] = p
		}
		return p
	}
}

// TestBrokerWithJetStream runs the whole contract on the broker with its
// history in JetStream: every subtest on a store of its own prefix.
func TestBrokerWithJetStream(t *testing.T) {
	s := natstest.Start(t)
	prefixOf := subtestPrefixes()
	brokertest.RunBrokerTests(t, func(t *testing.T) broker.Broker {
		prefix := prefixOf(t)
		st, err := jetstream.New(jetstream.Config{URL: s.URL, Prefix: prefix})
		if err != nil {
			t.Fatalf("jetstream store: %v", err)
		}
		return newBroker(t, s, Config{Prefix: prefix, Store: st})
	}, brokertest.Cluster())
}

// TestBrokerWithRedis runs the whole contract on the broker with its
// history in Redis (redisnats), on one redis-server.
func TestBrokerWithRedis(t *testing.T) {
	s, r := natstest.Start(t), redistest.Start(t)
	prefixOf := subtestPrefixes()
	brokertest.RunBrokerTests(t, func(t *testing.T) broker.Broker {
		prefix := prefixOf(t)
		e, err := redis.New(redis.Config{Addresses: []string{r.Addr}, Prefix: prefix})
		if err != nil {
			t.Fatalf("redis engine: %v", err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return newBroker(t, s, Config{Prefix: prefix, Store: e.Store()})
	}, brokertest.Cluster())
}
