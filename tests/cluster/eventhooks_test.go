package cluster_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
	"github.com/gyrehq/gyre/token"
)

// hookDelay is event_hooks.vacated_delay and offline_delay: long enough
// for a client to leave one node and come back on another within it,
// however loaded the machine.
const hookDelay = 1500 * time.Millisecond

// hookSetups are the ways of running the nodes for event hooks: on Redis
// (occupancy tracked in the engine's Redis), and on a nats broker with
// presence, and so occupancy, in Redis (presence_manager). Both have a
// presence TTL of 3s, the lease of a node's holds. start returns the
// configuration of a node named name posting to backend b.
func hookSetups() []setup {
	return []setup{
		{"redis", func(t *testing.T) func(string) gyreproc.Config {
			r := redistest.Start(t)
			return func(name string) gyreproc.Config {
				return nodeConfig(name, redisAt(r.Addr)).Set("engine.redis.presence_ttl", "3s")
			}
		}},
		{"nats", func(t *testing.T) func(string) gyreproc.Config {
			r, n := redistest.Start(t), natstest.Start(t)
			return func(name string) gyreproc.Config {
				c := nodeConfig(name, nil)
				c["engine"] = map[string]any{"type": "memory"}
				c.Set("broker", natsBroker(n.URL, false))
				return c.Set("presence_manager", map[string]any{
					"enabled": true,
					"type":    "redis",
					"redis":   map[string]any{"address": []string{r.Addr}, "presence_ttl": "3s"},
				})
			}
		}},
	}
}

// withHooks adds the event hooks to the configuration of node: channels
// of namespace room go to the default state proxy, those of lobby to a
// named proxy, user status to client.proxy.user_status.
func withHooks(c gyreproc.Config, b *hookBackend, node string) gyreproc.Config {
	ns := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"name": name, "allow_subscribe_for_client": true, "state_proxy_enabled": true}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	c.Set("channel.namespaces", []any{
		ns("room", nil),
		ns("lobby", map[string]any{"state_proxy_name": "lobby-hooks"}),
	})
	c.Set("channel.proxy.state", map[string]any{"endpoint": b.endpoint(node, "room"), "timeout": "2s"})
	c.Set("proxies", []any{map[string]any{"name": "lobby-hooks", "endpoint": b.endpoint(node, "lobby"), "timeout": "2s"}})
	c.Set("client.proxy.user_status", map[string]any{"enabled": true, "endpoint": b.endpoint(node, "users"), "timeout": "2s"})
	c.Set("client.presence_update_interval", "1s")
	return c.Set("event_hooks", map[string]any{
		"vacated_delay":   hookDelay.String(),
		"offline_delay":   hookDelay.String(),
		"hmac_secret_key": hookSecret,
	})
}

// TestEventHooksCluster runs three gyre processes sending channel state
// and user status events to one backend, on Redis and on NATS with
// presence in Redis: each transition of the cluster reaches the backend
// once, from one node, signed; a node killed has its channels vacated
// and users offline once its lease and the delay passed; a backend down
// for a while gets every event later, in order, under the IDs it
// refused; and events a node was delivering when it was killed are
// delivered by another, under the same IDs.
func TestEventHooksCluster(t *testing.T) {
	t.Parallel()
	for _, s := range hookSetups() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			cfg := s.start(t)
			b := startHookBackend(t)
			nodes := map[string]*gyreproc.Node{}
			for _, name := range []string{"A", "B", "C"} {
				nodes[name] = gyreproc.Start(t, name, withHooks(cfg(name), b, name))
			}
			h := &hookCluster{b: b, nodes: nodes}
			t.Run("across nodes", h.acrossNodes)
			t.Run("node killed", h.nodeKilled)
			t.Run("backend down", h.backendDown)
			t.Run("one backend down", h.oneBackendDown)
			t.Run("deliverer killed", h.delivererKilled)
			// Whatever the scenarios left (their clients closing) comes
			// to nothing wrong either.
			b.check(t, nil)
		})
	}
}

// hookCluster is the nodes of one setup and their backend. Each scenario
// uses channels and users of its own.
type hookCluster struct {
	b     *hookBackend
	nodes map[string]*gyreproc.Node // the nodes running
}

// connectInfo dials node n and connects as user, with connection info
// naming the user, which the user's events carry.
func connectInfo(t testing.TB, n *gyreproc.Node, user string) *wstest.Client {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(hmacSecret), map[string]any{
		"sub":  user,
		"exp":  time.Now().Add(time.Hour).Unix(),
		"info": map[string]string{"name": user},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := wstest.Dial(t, n.WSURL(), protocol.TypeJSON, wstest.WaitLimit(waitLimit))
	if r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok, Name: "cluster-test"}}); r.Error != nil {
		t.Fatalf("connect %s to %s: error %d %s", user, n.Name, r.Error.Code, r.Error.Message)
	}
	return c
}

func unsubscribe(t testing.TB, c *wstest.Client, channel string) {
	t.Helper()
	if r := c.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: channel}}); r.Error != nil {
		t.Fatalf("unsubscribe %s: error %d %s", channel, r.Error.Code, r.Error.Message)
	}
}

// checkInfo fails the test unless every event the backend took about
// the users carries the info of the user's token.
func (h *hookCluster) checkInfo(t testing.TB, users ...string) {
	t.Helper()
	for _, u := range users {
		events, _ := h.b.taken(u)
		for _, e := range events {
			var info struct{ Name string }
			if err := json.Unmarshal(e.Info, &info); err != nil || info.Name != u {
				t.Errorf("event %+v: info %s, want the token's", e, e.Info)
			}
		}
	}
}

// acrossNodes: a channel subscribed on A and B is occupied once, stays
// so when A's subscriber leaves and is vacated once B's leaves; a user
// connected to A and B likewise. A subscriber and a user that leave one
// node and come back on another within the delay make no event.
func (h *hookCluster) acrossNodes(t *testing.T) {
	a, b, c := h.nodes["A"], h.nodes["B"], h.nodes["C"]
	const (
		room, lobby, flapRoom = "room:s1", "lobby:s1", "room:s1-flap"
		ann, flo              = "s1-ann", "s1-flo"
	)
	onA, onB := connectInfo(t, a, ann), connectInfo(t, b, ann)
	onA.MustSubscribe(room)
	onA.MustSubscribe(lobby)
	onB.MustSubscribe(room)
	onB.MustSubscribe(lobby)
	flap := connectInfo(t, a, flo)
	flap.MustSubscribe(flapRoom)
	h.b.waitTaken(t, map[string][]string{
		room: {"occupied"}, lobby: {"occupied"}, flapRoom: {"occupied"},
		ann: {"online"}, flo: {"online"},
	})

	// A's subscriber and connection leave; flo leaves A and is back on C
	// at once, for the user and the channel.
	unsubscribe(t, onA, room)
	unsubscribe(t, onA, lobby)
	onA.Close()
	flap.Close()
	flap = connectInfo(t, c, flo)
	flap.MustSubscribe(flapRoom)
	// Nothing is to come of it: wait past the delay, then look.
	time.Sleep(hookDelay + time.Second)
	h.b.expectNow(t, map[string][]string{
		room: {"occupied"}, lobby: {"occupied"}, flapRoom: {"occupied"},
		ann: {"online"}, flo: {"online"},
	})

	onB.Close()
	flap.Close()
	keys := map[string][]string{
		room: {"occupied", "vacated"}, lobby: {"occupied", "vacated"}, flapRoom: {"occupied", "vacated"},
		ann: {"online", "offline"}, flo: {"online", "offline"},
	}
	h.b.waitTaken(t, keys)
	h.b.check(t, slices.Collect(maps.Keys(keys)))
	h.checkInfo(t, ann, flo)
}

// nodeKilled: node C is killed with SIGKILL while it holds a channel and
// a user alone, and a channel and a user with A. Once C's lease (the
// presence TTL) and the delay passed, the first are vacated and offline,
// once; the others stay occupied and online until A lets them go.
func (h *hookCluster) nodeKilled(t *testing.T) {
	a, c := h.nodes["A"], h.nodes["C"]
	const (
		alone, shared = "room:s2-alone", "lobby:s2-shared"
		cid, both     = "s2-cid", "s2-both"
	)
	onC := connectInfo(t, c, cid)
	onC.MustSubscribe(alone)
	onC.MustSubscribe(shared)
	bothOnC := connectInfo(t, c, both)
	bothOnC.MustSubscribe(shared)
	onA := connectInfo(t, a, both)
	onA.MustSubscribe(shared)
	h.b.waitTaken(t, map[string][]string{
		alone: {"occupied"}, shared: {"occupied"}, cid: {"online"}, both: {"online"},
	})

	killedAt := time.Now()
	c.Kill()
	delete(h.nodes, "C")
	h.b.waitTaken(t, map[string][]string{alone: {"occupied", "vacated"}, cid: {"online", "offline"}})
	// C's holds of the shared ones ended with the others: they stay.
	h.b.expectNow(t, map[string][]string{shared: {"occupied"}, both: {"online"}})
	for _, key := range []string{alone, cid} {
		events, _ := h.b.taken(key)
		// A hold that a lease ended left when the lease ran out, after
		// the kill (C renewed its lease until then).
		if left := events[1].TimeMs; left < killedAt.UnixMilli() {
			t.Errorf("%s: %s at %d, before C was killed at %d", key, events[1].Type, left, killedAt.UnixMilli())
		}
	}

	onA.Close()
	keys := map[string][]string{
		alone: {"occupied", "vacated"}, shared: {"occupied", "vacated"},
		cid: {"online", "offline"}, both: {"online", "offline"},
	}
	h.b.waitTaken(t, keys)
	h.b.check(t, slices.Collect(maps.Keys(keys)))
	h.checkInfo(t, cid, both)
}

// backendDown: while the backend answers 503, channels occupied before
// are vacated and their users go offline, and other channels are
// occupied and users come online. Once it is back it has every event,
// each channel's and user's in order, those it refused under the IDs it
// refused. The subscribers of before the outage are seen occupying their
// channels first, and those of during it leave only after it, for a node
// tells the tracker nothing of a subscriber that came and went between
// two of its rounds.
func (h *hookCluster) backendDown(t *testing.T) {
	a, b := h.nodes["A"], h.nodes["B"]
	before, during := map[string][]string{}, map[string][]string{}
	var users []string
	connect := func(phase string, keys map[string][]string) []*wstest.Client {
		var clients []*wstest.Client
		for i, n := range []*gyreproc.Node{a, b} {
			user := fmt.Sprintf("s3-%s-u%d", phase, i)
			users = append(users, user)
			keys[user] = []string{"online"}
			c := connectInfo(t, n, user)
			for j := range 6 {
				ch := fmt.Sprintf("%s:s3-%s-%d-%d", []string{"room", "lobby"}[j%2], phase, i, j)
				c.MustSubscribe(ch)
				keys[ch] = []string{"occupied"}
			}
			clients = append(clients, c)
		}
		return clients
	}
	old := connect("before", before)
	h.b.waitTaken(t, before)

	h.b.setDown(true)
	defer h.b.setDown(false)
	for _, c := range old {
		c.Close()
	}
	leave(before)
	fresh := connect("during", during)
	all := maps.Clone(before)
	maps.Copy(all, during)
	h.b.waitRequests(t, "three refused requests", func(rs []hookRequest) bool {
		n := 0
		for _, r := range rs {
			if r.refused && slices.ContainsFunc(r.events, func(e hookEvent) bool { return all[e.key()] != nil }) {
				n++
			}
		}
		return n >= 3
	})
	// Let the vacates and offlines be made behind the refused events.
	time.Sleep(hookDelay + 500*time.Millisecond)
	h.b.setDown(false)
	h.b.waitTaken(t, all)

	for _, c := range fresh {
		c.Close()
	}
	leave(during)
	maps.Copy(all, during)
	h.b.waitTaken(t, all)
	h.b.check(t, slices.Collect(maps.Keys(all)))
	h.checkInfo(t, users...)
}

// oneBackendDown: the user status backend refuses everything while the
// channel state backends take their events as they come: each proxy's
// events go through a route of their own, which a backend that is down
// does not hold back. Once back, it gets every user event, in order.
func (h *hookCluster) oneBackendDown(t *testing.T) {
	a, b := h.nodes["A"], h.nodes["B"]
	h.b.setProxyDown("users", true)
	defer h.b.setProxyDown("users", false)
	channels, users := map[string][]string{}, map[string][]string{}
	var clients []*wstest.Client
	for i, n := range []*gyreproc.Node{a, b} {
		user := fmt.Sprintf("s5-u%d", i)
		users[user] = []string{"online"}
		c := connectInfo(t, n, user)
		for j := range 2 {
			ch := fmt.Sprintf("%s:s5-%d-%d", []string{"room", "lobby"}[j], i, j)
			c.MustSubscribe(ch)
			channels[ch] = []string{"occupied"}
		}
		clients = append(clients, c)
	}
	h.b.waitTaken(t, channels)
	h.b.waitRequests(t, "a refused user status request", func(rs []hookRequest) bool {
		return slices.ContainsFunc(rs, func(r hookRequest) bool {
			return r.refused && r.proxy == "users" && slices.ContainsFunc(r.events, func(e hookEvent) bool { return users[e.key()] != nil })
		})
	})
	for _, c := range clients {
		c.Close()
	}
	leave(channels)
	h.b.waitTaken(t, channels)
	h.b.expectNow(t, map[string][]string{"s5-u0": nil, "s5-u1": nil})
	h.b.setProxyDown("users", false)
	leave(users)
	h.b.waitTaken(t, users)
	all := maps.Clone(channels)
	maps.Copy(all, users)
	h.b.check(t, slices.Collect(maps.Keys(all)))
	h.checkInfo(t, "s5-u0", "s5-u1")
}

// leave adds to each key's events the one that ends it.
func leave(keys map[string][]string) {
	ends := map[string]string{"occupied": "vacated", "online": "offline"}
	for k, w := range keys {
		keys[k] = append(w, ends[w[len(w)-1]])
	}
}

// delivererKilled: channels and users on every node left while the
// backend is down; the node that was delivering the latest of their
// events is killed. Once the backend is back, a survivor has taken over
// its partitions and delivers what it was refused, under the same IDs.
func (h *hookCluster) delivererKilled(t *testing.T) {
	keys := map[string][]string{}
	names := slices.Sorted(maps.Keys(h.nodes))
	var clients []*wstest.Client
	for i, name := range names {
		user := "s4-" + name
		keys[user] = []string{"online"}
		c := connectInfo(t, h.nodes[name], user)
		for j := range 6 {
			ch := fmt.Sprintf("%s:s4-%d-%d", []string{"room", "lobby"}[j%2], i, j)
			c.MustSubscribe(ch)
			keys[ch] = []string{"occupied"}
		}
		clients = append(clients, c)
	}
	h.b.waitTaken(t, keys)

	h.b.setDown(true)
	defer h.b.setDown(false)
	for _, c := range clients {
		c.Close()
	}
	leave(keys)
	isKey := func(e hookEvent) bool { return keys[e.key()] != nil }
	var deliverer string
	h.b.waitRequests(t, "a refused request", func(rs []hookRequest) bool {
		for _, r := range slices.Backward(rs) {
			if r.refused && slices.ContainsFunc(r.events, isKey) {
				deliverer = r.node
				return true
			}
		}
		return false
	})
	pending := map[string]hookEvent{}
	for _, r := range h.b.snapshot() {
		if r.refused && r.node == deliverer {
			for _, e := range r.events {
				if isKey(e) {
					pending[e.ID] = e
				}
			}
		}
	}
	h.nodes[deliverer].Kill()
	delete(h.nodes, deliverer)
	t.Logf("killed %s, which was refused %d events", deliverer, len(pending))
	h.b.setDown(false)

	h.b.waitTaken(t, keys)
	h.b.check(t, slices.Collect(maps.Keys(keys)))
	for key := range keys {
		events, nodes := h.b.taken(key)
		for i, e := range events {
			if p, ok := pending[e.ID]; ok {
				if nodes[i] == deliverer {
					t.Errorf("event %s taken from the killed node", e.ID)
				}
				if !p.same(e) {
					t.Errorf("event refused as %+v, taken as %+v", p, e)
				}
				delete(pending, e.ID)
			}
		}
	}
	for _, e := range pending {
		t.Errorf("event %+v refused at the killed node, never taken", e)
	}
}
