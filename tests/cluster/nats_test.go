package cluster_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// liveNamespace is a namespace without history, the kind a nats broker
// without a store serves.
func liveNamespace() map[string]any {
	return map[string]any{
		"name":                          "live",
		"presence":                      true,
		"join_leave":                    true,
		"force_push_join_leave":         true,
		"allow_subscribe_for_client":    true,
		"allow_presence_for_subscriber": true,
	}
}

// TestNATSWithoutHistory runs two nodes on a nats broker without history
// (presence in Redis) with broker.nats.allow_wildcards: publications,
// join/leave, node info and the API's user commands cross nodes, and a
// pattern subscriber on one node gets what the other's API publishes into
// the channels it matches, naming the pattern and the channel.
func TestNATSWithoutHistory(t *testing.T) {
	t.Parallel()
	r, n := redistest.Start(t), natstest.Start(t)
	cfg := func(name string) gyreproc.Config {
		b := natsBroker(n.URL, false)
		b["nats"].(map[string]any)["allow_wildcards"] = true
		return nodeConfig(name, redisAt(r.Addr)).Set("broker", b).Set("channel.namespaces", []any{liveNamespace()})
	}
	a, b := gyreproc.Start(t, "A", cfg("A")), gyreproc.Start(t, "B", cfg("B"))

	t.Run("publications", func(t *testing.T) {
		c, _ := connectUser(t, a, "alice")
		c.MustSubscribe("live:scores")
		var want []string
		for i := range 20 {
			data := `{"n":` + strconv.Itoa(i) + `}`
			want = append(want, data)
			var res struct {
				Offset uint64 `json:"offset"`
			}
			b.MustCall(t, "publish", map[string]any{"channel": "live:scores", "data": json.RawMessage(data)}, &res)
			if res.Offset != 0 {
				t.Errorf("publish %d: offset %d in a channel without history", i, res.Offset)
			}
		}
		c.WaitFor("20 publications", func() bool { return len(c.Pubs("live:scores")) >= 20 })
		var got []string
		for _, p := range c.Pubs("live:scores") {
			got = append(got, string(p.Data))
		}
		if !slices.Equal(got, want) {
			t.Errorf("node A delivered %q, want %q", got, want)
		}
	})

	t.Run("idempotency key refused", func(t *testing.T) {
		// An idempotency key needs a stream to remember the result in.
		_, err := b.Call("publish", map[string]any{"channel": "live:scores", "data": json.RawMessage(`{}`), "idempotency_key": "k1"})
		var ae *gyreproc.APIError
		if !errors.As(err, &ae) || ae.Code != 108 {
			t.Fatalf("publish with an idempotency key: %v, want error 108 (not available)", err)
		}
	})

	t.Run("join and presence", func(t *testing.T) {
		const ch = "live:room"
		alice, aliceConn := connectUser(t, a, "alice")
		alice.MustSubscribe(ch)
		bob, bobConn := connectUser(t, b, "bob")
		bob.MustSubscribe(ch)
		alice.WaitPush("join of bob", func(p *protocol.Push) bool {
			return p.Channel == ch && p.Join != nil && p.Join.Info.GetClient() == bobConn.Client
		})
		got := presenceClients(t, a, ch)
		if got[aliceConn.Client] != "alice" || got[bobConn.Client] != "bob" {
			t.Errorf("presence on A: %v", got)
		}
	})

	t.Run("info lists both nodes", func(t *testing.T) {
		for _, n := range []*gyreproc.Node{a, b} {
			eventually(t, "info of "+n.Name+" to list A and B", 20*time.Second, func() bool {
				return slices.Equal(nodeNames(t, n), []string{"A", "B"})
			})
		}
	})

	t.Run("disconnect through the other node", func(t *testing.T) {
		carol, _ := connectUser(t, a, "carol")
		b.MustCall(t, "disconnect", map[string]any{
			"user":       "carol",
			"disconnect": map[string]any{"code": 4001, "reason": "moved"},
		}, nil)
		if ce := carol.WaitClose(); ce.Code != 4001 {
			t.Errorf("carol closed with %d, want 4001", ce.Code)
		}
	})

	t.Run("wildcards", func(t *testing.T) {
		c, _ := connectUser(t, a, "wally")
		c.MustSubscribe("live:eu.*")
		// The last one marks the end: what B's API publishes reaches A's
		// pattern in the order published.
		for _, ch := range []string{"live:eu.paris", "live:us.nyc", "live:eu.rome", "live:eu.rome.bus", "live:eu.end"} {
			b.MustCall(t, "publish", map[string]any{"channel": ch, "data": json.RawMessage(`{"at":"` + ch + `"}`)}, nil)
		}
		c.WaitFor("the marker through the pattern", func() bool {
			pubs := c.Pubs("live:eu.*")
			return len(pubs) > 0 && pubs[len(pubs)-1].Channel == "live:eu.end"
		})
		var got []string
		for _, p := range c.Pubs("live:eu.*") {
			got = append(got, p.Channel)
		}
		if !slices.Equal(got, []string{"live:eu.paris", "live:eu.rome", "live:eu.end"}) {
			t.Errorf("pattern live:eu.* got publications of %q", got)
		}
	})
}
