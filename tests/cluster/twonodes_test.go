package cluster_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// TestTwoNodes runs two gyre processes on one Redis, on NATS with history
// in JetStream and presence in Redis, and on redisnats (NATS with history
// and presence in Redis), and checks that what happens on one node
// reaches the connections of the other.
func TestTwoNodes(t *testing.T) {
	t.Parallel()
	for _, setup := range historySetups() {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			cfg := setup.start(t)
			checkTwoNodes(t, gyreproc.Start(t, "A", cfg("A")), gyreproc.Start(t, "B", cfg("B")))
		})
	}
}

// checkTwoNodes checks that what happens on node a reaches the
// connections of node b, and the other way round.
func checkTwoNodes(t *testing.T, a, b *gyreproc.Node) {

	t.Run("publication from the API of the other node", func(t *testing.T) {
		c, _ := connectUser(t, a, "alice")
		c.MustSubscribe("chat:news")
		var want []string
		for i := range 20 {
			data := `{"n":` + strconv.Itoa(i) + `}`
			want = append(want, data)
			var res struct {
				Offset uint64 `json:"offset"`
			}
			b.MustCall(t, "publish", map[string]any{"channel": "chat:news", "data": json.RawMessage(data)}, &res)
			if res.Offset != uint64(i+1) {
				t.Fatalf("publish %d: offset %d, want %d", i, res.Offset, i+1)
			}
		}
		c.WaitFor("20 publications", func() bool { return len(c.Pubs("chat:news")) >= 20 })
		pubs := c.Pubs("chat:news")
		var got []string
		for i, p := range pubs {
			got = append(got, string(p.Data))
			if p.Offset != uint64(i+1) {
				t.Errorf("publication %d has offset %d", i, p.Offset)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("node A delivered %q, want %q", got, want)
		}
	})

	t.Run("presence and join/leave across nodes", func(t *testing.T) {
		const ch = "chat:room"
		alice, aliceConn := connectUser(t, a, "alice")
		alice.MustSubscribe(ch)
		bob, bobConn := connectUser(t, b, "bob")
		bob.MustSubscribe(ch)
		join := alice.WaitPush("join of bob", func(p *protocol.Push) bool {
			return p.Channel == ch && p.Join != nil && p.Join.Info.GetUser() == "bob"
		})
		if join.Join.Info.Client != bobConn.Client {
			t.Errorf("join of client %q, want bob's %q", join.Join.Info.Client, bobConn.Client)
		}
		want := map[string]string{aliceConn.Client: "alice", bobConn.Client: "bob"}
		for _, n := range []*gyreproc.Node{a, b} {
			if got := presenceClients(t, n, ch); !maps.Equal(got, want) {
				t.Errorf("presence on node %s: %v, want %v", n.Name, got, want)
			}
		}
		r := alice.Call(&protocol.Command{Presence: &protocol.PresenceRequest{Channel: ch}})
		if r.Error != nil || len(r.Presence.GetPresence()) != 2 || r.Presence.Presence[bobConn.Client].GetUser() != "bob" {
			t.Errorf("presence asked by a client on A: %+v", r)
		}
		if r := bob.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: ch}}); r.Error != nil {
			t.Fatalf("unsubscribe: %v", r.Error)
		}
		alice.WaitPush("leave of bob", func(p *protocol.Push) bool {
			return p.Channel == ch && p.Leave != nil && p.Leave.Info.GetClient() == bobConn.Client
		})
		want = map[string]string{aliceConn.Client: "alice"}
		if got := presenceClients(t, b, ch); !maps.Equal(got, want) {
			t.Errorf("presence on node B after leave: %v, want %v", got, want)
		}
	})

	t.Run("info lists both nodes", func(t *testing.T) {
		// Nodes announce themselves every 5 s.
		for _, n := range []*gyreproc.Node{a, b} {
			eventually(t, "info of "+n.Name+" to list A and B", 20*time.Second, func() bool {
				return slices.Equal(nodeNames(t, n), []string{"A", "B"})
			})
		}
	})

	t.Run("disconnect through the other node", func(t *testing.T) {
		carol, _ := connectUser(t, a, "carol")
		bystander, _ := connectUser(t, a, "dave")
		b.MustCall(t, "disconnect", map[string]any{
			"user":       "carol",
			"disconnect": map[string]any{"code": 4001, "reason": "moved to B"},
		}, nil)
		ce := carol.WaitClose()
		if ce.Code != 4001 || ce.Reason != "moved to B" {
			t.Errorf("carol closed with %d %q, want 4001 \"moved to B\"", ce.Code, ce.Reason)
		}
		// Another user of node A stays connected.
		bystander.MustSubscribe("chat:bystander")
	})

	t.Run("server-side subscribe through the other node", func(t *testing.T) {
		const ch = "chat:assigned"
		erin, _ := connectUser(t, a, "erin")
		b.MustCall(t, "subscribe", map[string]any{"user": "erin", "channel": ch}, nil)
		sub := erin.WaitPush("subscribe push", func(p *protocol.Push) bool {
			return p.Channel == ch && p.Subscribe != nil
		})
		if !sub.Subscribe.Recoverable || sub.Subscribe.Epoch == "" {
			t.Errorf("subscribe push %+v: want a recoverable stream with an epoch", sub.Subscribe)
		}
		b.MustCall(t, "publish", map[string]any{"channel": ch, "data": json.RawMessage(`{"to":"erin"}`)}, nil)
		p := erin.WaitPush("publication in "+ch, func(p *protocol.Push) bool { return p.Channel == ch && p.Pub != nil })
		if string(p.Pub.Data) != `{"to":"erin"}` {
			t.Errorf("publication data %s", p.Pub.Data)
		}
	})
}

// nodeNames asks n for info and returns the node names, sorted.
func nodeNames(t testing.TB, n *gyreproc.Node) []string {
	var res struct {
		Nodes []struct {
			Name string `json:"name"`
		} `json:"nodes"`
	}
	n.MustCall(t, "info", map[string]any{}, &res)
	var out []string
	for _, ni := range res.Nodes {
		out = append(out, ni.Name)
	}
	slices.Sort(out)
	return out
}

// localNodeID asks n for its own node ID (the first entry of info).
func localNodeID(t testing.TB, n *gyreproc.Node) string {
	t.Helper()
	var res struct {
		Nodes []struct {
			UID string `json:"uid"`
		} `json:"nodes"`
	}
	n.MustCall(t, "info", map[string]any{}, &res)
	if len(res.Nodes) == 0 {
		t.Fatalf("info of node %s lists no node", n.Name)
	}
	return res.Nodes[0].UID
}
