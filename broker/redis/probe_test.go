package redis

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// TestProbeComesBack: the backlog probe a shard sends itself arrives
// through its pub/sub connection, on a single Redis and in a cluster
// (where it must go to the slot of the shard's key base).
func TestProbeComesBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) Config
	}{
		{"single", func(t *testing.T) Config {
			return Config{Addresses: []string{redistest.Start(t).Addr}, IOTimeout: time.Second}
		}},
		{"cluster", func(t *testing.T) Config {
			return Config{ClusterAddresses: redistest.StartCluster(t, 3).Addrs(), ClusterShards: 4, IOTimeout: time.Second}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := runBroker(t, tc.cfg(t))
			for _, row := range b.shards {
				for _, s := range row {
					q := s.probes.Load()
					deadline := time.Now().Add(10 * time.Second)
					for q == nil {
						if time.Now().After(deadline) {
							t.Fatal("shard not watched")
						}
						time.Sleep(time.Millisecond)
						q = s.probes.Load()
					}
					// A probe may be refused while a new cluster settles
					// (and is then lost, not late): send until one is back.
					for q.Lag() <= 0 {
						if time.Now().After(deadline) {
							t.Fatalf("no probe of %s came back", s.where)
						}
						sent := time.Now().UnixNano()
						q.Probing(sent)
						s.sendProbe(q, sent)
						for q.Sent() == sent && time.Now().Before(deadline) {
							time.Sleep(time.Millisecond)
						}
					}
				}
			}
		})
	}
}
