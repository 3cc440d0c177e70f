package gyre_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// TestMapExpiry: a key whose TTL passes reaches subscribers as a removal,
// in both modes whose keys expire.
func TestMapExpiry(t *testing.T) {
	short := func(o *gyre.ChannelOptions) { o.Map.KeyTTL = time.Second }
	cfg := mapConfig(mapNS("shorteph", gyre.MapModeEphemeral, short), mapNS("shortrec", gyre.MapModeRecoverable, short))
	eachMapEngine(t, cfg, nil, func(t *testing.T, n *gyre.Node, c *testClient, _ string) {
		for _, ns := range []string{"shorteph", "shortrec"} {
			t.Run(ns, func(t *testing.T) {
				ch := ns + ":x-" + c.Protocol().String()
				mapPut(t, n, ch, "gone", `{"v":1}`)
				v := mapSync(t, c, ch, flowOptions{})
				if _, ok := v.entries["gone"]; !ok {
					t.Fatalf("the key is not in the state: %v", v.entries)
				}
				p := c.WaitPush("the removal of the expired key", func(p *protocol.Push) bool {
					return p.Channel == ch && p.Pub != nil && p.Pub.Key == "gone"
				})
				if !p.Pub.Removed || len(p.Pub.Data) != 0 {
					t.Fatalf("expiry delivered as %+v, want a removal without data", p.Pub)
				}
				if st, err := n.MapStats(context.Background(), ch); err != nil || st.NumKeys != 0 {
					t.Fatalf("stats after expiry: %+v %v", st, err)
				}
			})
		}
	})
}

// TestMapFilters: a subscriber's tags filter, and a filter its subscribe
// handler enforces, select the state entries, the catch-up and the live
// changes it gets; a removal passes as the key's tags did.
func TestMapFilters(t *testing.T) {
	enforced := &protocol.FilterNode{Key: "team", Cmp: "eq", Val: "red"}
	setup := func(n *gyre.Node) {
		n.OnSubscribe(func(_ context.Context, _ *gyre.Client, e gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
			if e.Channel[len(e.Channel)-1] == '!' {
				return gyre.SubscribeReply{Filter: enforced}, nil
			}
			return gyre.SubscribeReply{}, nil
		})
	}
	eachMapEngine(t, mapConfig(), setup, func(t *testing.T, n *gyre.Node, c *testClient, _ string) {
		for _, tc := range []struct{ name, suffix string }{{"client filter", ""}, {"enforced filter", "!"}} {
			t.Run(tc.name, func(t *testing.T) {
				ch := "per:teams-" + c.Protocol().String() + tc.suffix
				team := func(k int) string { return []string{"red", "blue"}[k%2] }
				for k := range 10 {
					mapPut(t, n, ch, "k"+strconv.Itoa(k), keyData(k, 0), func(o *gyre.MapPublishOptions) { o.Tags = map[string]string{"team": team(k)} })
				}
				fo := flowOptions{}
				if tc.suffix == "" {
					fo.tf = enforced
				}
				v := mapSync(t, c, ch, fo)
				for k := range v.entries {
					if n, _ := strconv.Atoi(k[1:]); team(n) != "red" {
						t.Fatalf("state has %s of another team", k)
					}
				}
				if len(v.entries) != 5 {
					t.Fatalf("state %v, want the 5 red keys", v.entries)
				}
				mapPut(t, n, ch, "k1", keyData(1, 1), func(o *gyre.MapPublishOptions) { o.Tags = map[string]string{"team": "blue"} })
				mapPut(t, n, ch, "k2", keyData(2, 1), func(o *gyre.MapPublishOptions) { o.Tags = map[string]string{"team": "red"} })
				mapDel(t, n, ch, "k3")
				mapDel(t, n, ch, "k4")
				v.settle(t, n, c, func(o *gyre.MapPublishOptions) { o.Tags = map[string]string{"team": "red"} })
				for _, p := range c.Pubs(ch) {
					if p.Key == "k1" || p.Key == "k3" {
						t.Fatalf("a change of a blue key passed the filter: %+v", p)
					}
				}
				if _, ok := v.entries["k4"]; ok || v.entries["k2"] != keyData(2, 1) {
					t.Fatalf("after live changes: %v", v.entries)
				}
			})
		}
	})
}

// TestMapDeltaPerKey: with fossil deltas negotiated, each key's change is
// a delta against that key's previous value, whatever changed between;
// a new key goes in full and a removal ends its key's chain.
func TestMapDeltaPerKey(t *testing.T) {
	eachMapEngine(t, mapConfig(), nil, func(t *testing.T, n *gyre.Node, c *testClient, _ string) {
		for _, m := range mapModes {
			t.Run(m.ns, func(t *testing.T) {
				ch := m.ns + ":delta-" + c.Protocol().String()
				long := func(k, i int) string {
					return `{"k":` + strconv.Itoa(k) + `,"text":"a long value that repeats itself, a long value that repeats itself ` + strconv.Itoa(i) + `"}`
				}
				delta := func(o *gyre.MapPublishOptions) { o.UseDelta = true }
				mapPut(t, n, ch, "a", long(1, 0), delta)
				mapPut(t, n, ch, "b", long(2, 0), delta)
				v := mapSync(t, c, ch, flowOptions{delta: "fossil"})
				if !v.live.Delta {
					t.Fatal("delta not negotiated")
				}
				mapPut(t, n, ch, "a", long(1, 1), delta)
				mapPut(t, n, ch, "b", long(2, 1), delta)
				mapPut(t, n, ch, "a", long(1, 2), delta)
				mapPut(t, n, ch, "c", long(3, 0), delta)
				mapDel(t, n, ch, "b")
				mapPut(t, n, ch, "b", long(2, 2), delta)
				v.settle(t, n, c)
				want, _ := brokerState(t, n, ch)
				sameEntries(t, "after deltas", v.entries, want)
				deltas := map[string]int{}
				for _, p := range c.Pubs(ch) {
					if p.Delta {
						deltas[p.Key]++
					}
				}
				if deltas["a"] != 2 || deltas["b"] != 1 || deltas["c"] != 0 {
					t.Fatalf("deltas by key %v: want a 2, b 1 (before its removal), c 0", deltas)
				}
			})
		}
	})
}

// TestMapClientPublish: clients write and remove keys where the
// namespace allows it (any client, subscribers), under their own id with
// client_key, or as the map publish handler decides.
func TestMapClientPublish(t *testing.T) {
	forClient := mapNS("forclient", gyre.MapModePersistent, func(o *gyre.ChannelOptions) {
		o.Map.AllowPublishForClient, o.Map.AllowRemoveForClient = true, true
	})
	forSub := mapNS("forsub", gyre.MapModePersistent, func(o *gyre.ChannelOptions) {
		o.Map.AllowPublishForSubscriber = true
	})
	ownKey := mapNS("cursors", gyre.MapModeEphemeral, func(o *gyre.ChannelOptions) {
		o.Map.AllowPublishForClient, o.Map.AllowRemoveForClient, o.Map.ClientKey = true, true, gyre.MapClientKeyClientID
		o.Map.RemoveClientOnUnsubscribe = true
	})
	byUser := mapNS("byuser", gyre.MapModePersistent, func(o *gyre.ChannelOptions) {
		o.Map.AllowPublishForClient, o.Map.AllowPublishForAnonymous, o.Map.ClientKey = true, true, gyre.MapClientKeyUserID
	})
	handled := mapNS("handled", gyre.MapModePersistent)
	setup := func(n *gyre.Node) {
		n.OnMapPublish(func(_ context.Context, c *gyre.Client, e gyre.MapPublishEvent) (gyre.MapPublishReply, error) {
			if e.Channel[:8] != "handled:" {
				return gyre.MapPublishReply{}, gyre.ErrNotHandled
			}
			if e.Key == "forbidden" {
				return gyre.MapPublishReply{}, gyre.ErrorPermissionDenied
			}
			return gyre.MapPublishReply{Key: "h-" + e.Key, Options: gyre.MapPublishOptions{Data: []byte(`{"by":"handler"}`)}}, nil
		})
	}
	cfg := mapConfig(forClient, forSub, ownKey, byUser, handled)
	cfg.AllowAnonymousConnectWithoutToken = true
	eachMapEngine(t, cfg, setup, func(t *testing.T, n *gyre.Node, c *testClient, url string) {
		sfx := "-" + c.Protocol().String()
		call := func(c *testClient, ch, key string, removed bool) uint32 {
			t.Helper()
			r := c.Call(pubCmd(ch+sfx, key, removed))
			if r.Error != nil {
				return r.Error.Code
			}
			return 0
		}
		state := func(ch string) map[string]string {
			t.Helper()
			s, _ := brokerState(t, n, ch+sfx)
			return s
		}
		if code := call(c, "forclient:x", "k", false); code != 0 || state("forclient:x")["k"] != `{"x":1}` {
			t.Fatalf("write for any client: %d %v", code, state("forclient:x"))
		}
		if code := call(c, "forclient:x", "k", true); code != 0 || len(state("forclient:x")) != 0 {
			t.Fatalf("remove for any client: %d %v", code, state("forclient:x"))
		}
		if code := call(c, "forsub:x", "k", false); code != 103 {
			t.Fatalf("write by a non-subscriber: %d, want 103", code)
		}
		mapSync(t, c, "forsub:x"+sfx, flowOptions{})
		if code := call(c, "forsub:x", "k", false); code != 0 {
			t.Fatalf("write by a subscriber: %d", code)
		}
		if code := call(c, "forsub:x", "k", true); code != 103 {
			t.Fatalf("remove where only writes are allowed: %d, want 103", code)
		}
		// client_key: the client's own id, whatever it sent.
		other := dial(t, url, c.Protocol())
		res := other.connect(connToken(t, "u2", 0, nil))
		mapSync(t, other, "cursors:x"+sfx, flowOptions{})
		if code := call(other, "cursors:x", "whatever", false); code != 0 {
			t.Fatalf("write under client_key: %d", code)
		}
		if s := state("cursors:x"); len(s) != 1 || s[res.Client] == "" {
			t.Fatalf("state %v, want one key, the client id %s", s, res.Client)
		}
		// remove_client_on_unsubscribe: the key goes when the client does.
		other.Conn().Close()
		waitFor(t, "the client's key removed", func() bool { return len(state("cursors:x")) == 0 })

		if code := call(c, "byuser:x", "k", false); code != 0 || state("byuser:x")["u1"] == "" {
			t.Fatalf("write under the user id: %d %v", code, state("byuser:x"))
		}
		anon := dial(t, url, c.Protocol())
		anon.connect("")
		if code := call(anon, "byuser:x", "k", false); code != 103 {
			t.Fatalf("anonymous write under the user id: %d, want 103", code)
		}

		if code := call(c, "handled:x", "k", false); code != 0 || state("handled:x")["h-k"] != `{"by":"handler"}` {
			t.Fatalf("write through the handler: %d %v", code, state("handled:x"))
		}
		if code := call(c, "handled:x", "forbidden", false); code != 103 {
			t.Fatalf("write the handler refuses: %d, want 103", code)
		}
	})
}

// TestMapPresence: a stream namespace with map presence prefixes keeps
// its subscribers in map channels: a key per client, written when it
// subscribes and removed when it leaves, and a key per user left to
// expire; subscribers of those map channels see them come and go.
func TestMapPresence(t *testing.T) {
	chat := gyre.Namespace{Name: "chat", ChannelOptions: gyre.ChannelOptions{
		AllowSubscribeForClient:         true,
		MapClientsPresenceChannelPrefix: "clients:",
		MapUsersPresenceChannelPrefix:   "users:",
	}}
	watch := func(name string, typ gyre.SubscriptionType) gyre.Namespace {
		return gyre.Namespace{Name: name, ChannelOptions: gyre.ChannelOptions{SubscriptionType: typ, AllowSubscribeForClient: true}}
	}
	cfg := mapConfig(chat, watch("clients", gyre.SubscriptionTypeMapClients), watch("users", gyre.SubscriptionTypeMapUsers))
	cfg.PresenceUpdateInterval = 200 * time.Millisecond
	eachMapEngine(t, cfg, nil, func(t *testing.T, n *gyre.Node, c *testClient, url string) {
		room := "chat:room-" + c.Protocol().String()
		clients := mapSync(t, c, "clients:"+room, flowOptions{typ: typeMapClients})
		users := mapSync(t, c, "users:"+room, flowOptions{typ: typeMapUsers})

		member := dial(t, url, c.Protocol())
		res := member.connect(connToken(t, "u7", 0, nil))
		if r := member.Subscribe(&protocol.SubscribeRequest{Channel: room}); r.Error != nil {
			t.Fatal(r.Error)
		}
		p := c.WaitPush("the member's client key", func(p *protocol.Push) bool {
			return p.Channel == "clients:"+room && p.Pub != nil && p.Pub.Key == res.Client && !p.Pub.Removed
		})
		if p.Pub.Info == nil || p.Pub.Info.User != "u7" || p.Pub.Info.Client != res.Client {
			t.Fatalf("client key info %+v", p.Pub.Info)
		}
		c.WaitPush("the member's user key", func(p *protocol.Push) bool {
			return p.Channel == "users:"+room && p.Pub != nil && p.Pub.Key == "u7"
		})
		// Refreshed with presence: the keys stay, unchanged, past the
		// presence interval.
		time.Sleep(3 * cfg.PresenceUpdateInterval)
		if s, _ := brokerState(t, n, "clients:"+room); !hasKey(s, res.Client) {
			t.Fatalf("the client key is gone while subscribed: %v", s)
		}
		if r := member.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: room}}); r.Error != nil {
			t.Fatal(r.Error)
		}
		c.WaitPush("the member's client key removed", func(p *protocol.Push) bool {
			return p.Channel == "clients:"+room && p.Pub != nil && p.Pub.Key == res.Client && p.Pub.Removed
		})
		clients.takeLive(t, c)
		users.takeLive(t, c)
		if _, ok := clients.entries[res.Client]; ok {
			t.Fatalf("clients view still has the member: %v", clients.entries)
		}
		if _, ok := users.entries["u7"]; !ok {
			t.Fatalf("users view lost the member's user before its key expired: %v", users.entries)
		}
		// Map presence channels take no writes from clients.
		if r := c.Call(pubCmd("clients:"+room, "fake", false)); r.Error == nil || r.Error.Code != 103 {
			t.Fatalf("client write to a presence map: %+v, want 103", r)
		}
		if _, err := n.MapPublish(context.Background(), room, "k", gyre.MapPublishOptions{}); !errors.Is(err, gyre.ErrMapNotMapChannel) {
			t.Fatalf("map publish to the stream channel: %v", err)
		}
	})
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// TestMapCompaction: a map subscriber that offers channel compaction (as
// centrifuge-js does on every request) gets the channel's number in its
// live result, and its changes carry it instead of the channel name.
func TestMapCompaction(t *testing.T) {
	eachMapEngine(t, mapConfig(), nil, func(t *testing.T, n *gyre.Node, c *testClient, _ string) {
		ch := "per:compact-" + c.Protocol().String()
		r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch, Type: typeMap, Phase: phaseState, Flag: 1})
		if r.Error != nil || r.Subscribe.Phase != phaseLive || r.Subscribe.Id == 0 {
			t.Fatalf("subscribe with compaction: %+v", r)
		}
		mapPut(t, n, ch, "k", `{"v":1}`)
		p := c.WaitPush("a compacted change", func(p *protocol.Push) bool { return p.Id == r.Subscribe.Id && p.Pub != nil })
		if p.Channel != "" || p.Pub.Key != "k" || string(p.Pub.Data) != `{"v":1}` {
			t.Fatalf("compacted push %+v", p)
		}
	})
}
