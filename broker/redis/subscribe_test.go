package redis

import (
	"testing"

	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// TestUnsubscribe: after Unsubscribe the channel's publications stop
// arriving, the other channels keep theirs, and our own unsubscribe is not
// taken for a subscription dropped by the server (no reconnect, no loss
// report).
func TestUnsubscribe(t *testing.T) {
	for _, s := range []struct {
		name string
		cfg  func(t testing.TB) Config
	}{
		{"Single", func(t testing.TB) Config { return Config{Addresses: []string{redistest.Start(t).Addr}} }},
		{"Cluster", func(t testing.TB) Config {
			return Config{ClusterAddresses: redistest.StartCluster(t, 3).Addrs(), ClusterShards: 1}
		}},
	} {
		t.Run(s.name, func(t *testing.T) {
			b, ev := runBroker(t, s.cfg(t))
			for _, ch := range []string{"gone", "kept"} {
				if err := b.Subscribe(ch); err != nil {
					t.Fatalf("Subscribe: %v", err)
				}
			}
			if err := b.Unsubscribe("gone"); err != nil {
				t.Fatalf("Unsubscribe: %v", err)
			}
			mustPublish(t, b, "gone", "missed")
			mustPublish(t, b, "kept", "marker")
			expectData(t, ev, "kept", "marker")
			// The same connection again, after the unsubscribe settled.
			if err := b.Subscribe("gone"); err != nil {
				t.Fatalf("Subscribe again: %v", err)
			}
			mustPublish(t, b, "gone", "back")
			expectData(t, ev, "gone", "back")
			select {
			case lost := <-ev.lost:
				t.Errorf("channels reported lost without an outage: %v", lost)
			default:
			}
			if err := b.Healthy(); err != nil {
				t.Errorf("Healthy: %v", err)
			}
		})
	}
}
