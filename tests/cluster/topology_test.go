package cluster_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// TestTopologies runs two nodes over a Redis Cluster of three masters and
// over a master watched by a Sentinel: what the API of one node publishes
// reaches a client of the other, in order, and both see the same history
// and presence.
func TestTopologies(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		redis func(t *testing.T) map[string]any
	}{
		{"cluster", func(t *testing.T) map[string]any {
			c := redistest.StartCluster(t, 3)
			return map[string]any{"cluster_address": c.Addrs()}
		}},
		{"sentinel", func(t *testing.T) map[string]any {
			s := redistest.StartSentinel(t)
			return map[string]any{
				"sentinel_address":     []string{s.Sentinel.Addr},
				"sentinel_master_name": redistest.MasterName,
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.redis(t)
			a := startNode(t, "A", nodeConfig("A", r))
			b := startNode(t, "B", nodeConfig("B", r))
			checkAcrossNodes(t, a, b)
		})
	}
}

// checkAcrossNodes publishes through b into channels a client of a
// follows, then reads history and presence on both nodes.
func checkAcrossNodes(t *testing.T, a, b *gyreNode) {
	t.Helper()
	const perChannel = 10
	// Several channels, so that a cluster spreads them over its masters.
	var channels []string
	for i := range 6 {
		channels = append(channels, "chat:topo"+strconv.Itoa(i))
	}
	c, conn := connectUser(t, a, "alice")
	for _, ch := range channels {
		c.MustSubscribe(ch)
	}
	for i := range perChannel {
		for _, ch := range channels {
			data := json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)
			b.mustCall(t, "publish", map[string]any{"channel": ch, "data": data}, nil)
		}
	}
	for _, ch := range channels {
		c.WaitFor(ch+" publications", func() bool { return len(c.Pubs(ch)) >= perChannel })
		for i, p := range c.Pubs(ch) {
			if want := `{"i":` + strconv.Itoa(i) + `}`; p.Offset != uint64(i+1) || string(p.Data) != want {
				t.Errorf("%s: publication %d is %s at offset %d, want %s at %d", ch, i, p.Data, p.Offset, want, i+1)
			}
		}
		for _, n := range []*gyreNode{a, b} {
			var h struct {
				Publications []struct {
					Data   json.RawMessage `json:"data"`
					Offset uint64          `json:"offset"`
				} `json:"publications"`
			}
			n.mustCall(t, "history", map[string]any{"channel": ch, "limit": -1}, &h)
			if len(h.Publications) != perChannel {
				t.Fatalf("history of %s on node %s: %d publications, want %d", ch, n.name, len(h.Publications), perChannel)
			}
			for i, p := range h.Publications {
				if want := `{"i":` + strconv.Itoa(i) + `}`; p.Offset != uint64(i+1) || string(p.Data) != want {
					t.Errorf("history of %s on node %s: %d is %s at %d", ch, n.name, i, p.Data, p.Offset)
				}
			}
		}
		if got := b.presenceClients(t, ch); len(got) != 1 || got[conn.Client] != "alice" {
			t.Errorf("presence of %s on node B: %v, want alice's client %s", ch, got, conn.Client)
		}
	}
}
