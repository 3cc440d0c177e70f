package redis

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gyrehq/gyre/broker"
)

// TestTwoNodes: two engines on the same Redis setup act as two Gyre
// nodes. Both publish concurrently into one channel; each node receives
// every publication in offset order, and history and presence are shared.
func TestTwoNodes(t *testing.T) {
	for _, s := range setups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			a, evA := runBroker(t, cfg)
			b, evB := runBroker(t, cfg)
			const ch, each = "shared", 200
			for _, br := range []*Broker{a, b} {
				if err := br.Subscribe(ch); err != nil {
					t.Fatalf("Subscribe: %v", err)
				}
			}
			var wg sync.WaitGroup
			for i, br := range []*Broker{a, b} {
				wg.Go(func() {
					for j := range each {
						if _, _, err := br.Publish(ch, fmt.Appendf(nil, "%d-%d", i, j), history); err != nil {
							t.Errorf("Publish: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			for name, ev := range map[string]*events{"a": evA, "b": evB} {
				for want := uint64(1); want <= 2*each; want++ {
					if d := ev.next(t); d.sp.Offset != want {
						t.Fatalf("node %s: delivery %d has offset %d", name, want, d.sp.Offset)
					}
				}
			}
			_, topA, errA := a.History(ch, broker.HistoryOptions{})
			_, topB, errB := b.History(ch, broker.HistoryOptions{})
			if errA != nil || errB != nil || topA != topB || topA.Offset != 2*each {
				t.Errorf("tops differ between nodes: %+v %v, %+v %v", topA, errA, topB, errB)
			}
			if err := a.e.PresenceManager().AddPresence(ch, "c1", &broker.ClientInfo{ClientID: "c1", UserID: "u1"}); err != nil {
				t.Fatalf("AddPresence: %v", err)
			}
			if st, err := b.e.PresenceManager().PresenceStats(ch); err != nil || st.NumClients != 1 {
				t.Errorf("presence seen from the other node: %+v, %v", st, err)
			}
		})
	}
}
