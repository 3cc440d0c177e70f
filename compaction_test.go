package gyre_test

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// compactionConfig has a namespace "compact" that allows channel
// compaction, with join/leave, history and fossil deltas, and "plain",
// the same without it.
func compactionConfig() gyre.Config {
	opts := gyre.ChannelOptions{
		JoinLeave: true, ForcePushJoinLeave: true, HistorySize: 10, HistoryTTL: time.Minute,
		AllowSubscribeForClient: true, AllowedDeltaTypes: []string{"fossil"},
	}
	compact := opts
	compact.AllowChannelCompaction = true
	return gyre.Config{Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{
		{Name: "compact", ChannelOptions: compact},
		{Name: "plain", ChannelOptions: opts},
	}}}
}

// pushesWithID returns the pushes received so far that carry id in place
// of a channel name.
func pushesWithID(c *testClient, id int64) []*protocol.Push {
	var out []*protocol.Push
	for _, p := range c.Pushes() {
		if p.Id == id {
			out = append(out, p)
		}
	}
	return out
}

// TestChannelCompaction: a subscriber that offers channel compaction
// (subscribe flag 1) in a namespace that allows it is given a number in
// its subscribe result, and its publications, joins and leaves then carry
// that number and no channel name; everyone else keeps the name. Numbers
// differ between channels and are never given again, also to a channel
// subscribed anew.
func TestChannelCompaction(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, compactionConfig()))
			compact := dial(t, url, proto)
			compact.connect(connToken(t, "alice", 0, nil))
			named := dial(t, url, proto)
			named.connect(connToken(t, "bob", 0, nil))

			r := compact.Subscribe(&protocol.SubscribeRequest{Channel: "compact:a", Flag: 1})
			if r.Error != nil || r.Subscribe.Id <= 0 {
				t.Fatalf("subscribe with flag 1: %+v, want an id", r)
			}
			id := r.Subscribe.Id
			other := compact.Subscribe(&protocol.SubscribeRequest{Channel: "compact:b", Flag: 3}) // with "reject unrecovered" too
			if other.Error != nil || other.Subscribe.Id <= 0 || other.Subscribe.Id == id {
				t.Fatalf("second channel: %+v, want an id other than %d", other, id)
			}
			notAllowed := compact.Subscribe(&protocol.SubscribeRequest{Channel: "plain:a", Flag: 1})
			if notAllowed.Error != nil || notAllowed.Subscribe.Id != 0 {
				t.Fatalf("namespace without compaction: %+v, want no id", notAllowed)
			}
			if r := named.Subscribe(&protocol.SubscribeRequest{Channel: "compact:a"}); r.Error != nil || r.Subscribe.Id != 0 {
				t.Fatalf("subscribe without the flag: %+v, want no id", r)
			}

			// Alice's own join and bob's, publications one by one and as a
			// run, bob's leave.
			compact.WaitFor("two joins", func() bool { return len(pushesWithID(compact, id)) == 2 })
			if _, err := n.Publish("compact:a", numbered(1)); err != nil {
				t.Fatal(err)
			}
			items := []gyre.PublishItem{{Data: numbered(2)}, {Data: numbered(3)}}
			publishMany(n, "compact:a", items)
			if items[1].Err != nil {
				t.Fatal(items[1].Err)
			}
			if _, err := n.Publish("plain:a", numbered(9)); err != nil {
				t.Fatal(err)
			}
			// On Redis publications arrive through pub/sub: bob leaves once
			// he has them.
			if pubs := named.WaitPubs("compact:a", 3); len(pubs) != 3 {
				t.Fatalf("bob, without compaction, got %d publications by name", len(pubs))
			}
			named.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: "compact:a"}})
			compact.WaitFor("three publications and bob's leave", func() bool { return len(pushesWithID(compact, id)) == 6 })

			got := pushesWithID(compact, id)
			if got[1].Join == nil || got[1].Join.Info.GetUser() != "bob" || got[5].Leave == nil || got[5].Leave.Info.GetUser() != "bob" {
				t.Fatalf("compacted pushes %v, want bob's join and at the end his leave", got)
			}
			for i, p := range got[2:5] {
				if p.Channel != "" || p.Pub == nil || string(p.Pub.Data) != string(numbered(i+1)) {
					t.Fatalf("compacted push %d: %+v, want publication %d with no channel name", i, p, i+1)
				}
			}
			if pubs := compact.WaitPubs("plain:a", 1); len(pubs) != 1 {
				t.Fatalf("publications by name in plain:a: %v", pubs)
			}

			// Subscribed anew (as the channel's only subscriber here, so the
			// channel is new to the node), the channel gets a new number.
			compact.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: "compact:a"}})
			again := compact.Subscribe(&protocol.SubscribeRequest{Channel: "compact:a", Flag: 1})
			if again.Error != nil || again.Subscribe.Id <= 0 || again.Subscribe.Id == id || again.Subscribe.Id == other.Subscribe.Id {
				t.Fatalf("subscribed again: %+v, want a number not given before (%d, %d)", again, id, other.Subscribe.Id)
			}
		})
	})
}

// TestChannelCompactionDelta: a delta subscriber with channel compaction
// receives compacted deltas that decode against what it was given.
func TestChannelCompactionDelta(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, compactionConfig()))
			c := dial(t, url, proto)
			c.connect(connToken(t, "alice", 0, nil))
			r := c.Subscribe(&protocol.SubscribeRequest{Channel: "compact:d", Flag: 1, Delta: "fossil"})
			if r.Error != nil || r.Subscribe.Id <= 0 || !r.Subscribe.Delta {
				t.Fatalf("subscribe: %+v", r)
			}
			for i := range 4 {
				if _, err := n.Publish("compact:d", bigDoc(i), gyre.WithDelta()); err != nil {
					t.Fatal(err)
				}
			}
			// The client's own join comes first, compacted too.
			c.WaitFor("its join and four publications", func() bool { return len(pushesWithID(c, r.Subscribe.Id)) == 5 })
			var pubs []*protocol.Publication
			for _, p := range pushesWithID(c, r.Subscribe.Id)[1:] {
				pubs = append(pubs, p.Pub)
			}
			got, deltas := decodeDeltaStream(t, proto, pubs)
			for i, data := range got {
				if string(data) != string(bigDoc(i)) {
					t.Fatalf("publication %d decodes wrong: %.60q…", i, data)
				}
			}
			if deltas == 0 {
				t.Fatal("no publication came as a delta")
			}
		})
	})
}

// TestChannelCompactionDeclinedForJSProtobuf: the protobuf build of
// centrifuge-js offers channel compaction but drops the pushes it gets
// numbered (it compares decoded 64-bit numbers by identity), so a
// protobuf client named "js" keeps channel names; over JSON it is given
// a number.
func TestChannelCompactionDeclinedForJSProtobuf(t *testing.T) {
	protocols(t, func(t *testing.T, proto protocol.Type) {
		_, url := newTestNode(t, compactionConfig())
		c := dial(t, url, proto)
		r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: connToken(t, "alice", 0, nil), Name: "js"}})
		if r.Error != nil {
			t.Fatalf("connect: %+v", r.Error)
		}
		r = c.Subscribe(&protocol.SubscribeRequest{Channel: "compact:js", Flag: 1})
		if r.Error != nil {
			t.Fatalf("subscribe: %+v", r.Error)
		}
		if got, want := r.Subscribe.Id != 0, proto == protocol.TypeJSON; got != want {
			t.Fatalf("centrifuge-js over %s given a channel number: %v, want %v", proto, got, want)
		}
	})
}
