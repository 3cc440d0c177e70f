package gyre_test

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// TestNodeSubscribeWith: the options of a server-side subscription made
// through the node reach the subscriber on any engine: data in the
// subscribe push, channel info in presence, override of the channel's
// presence, the publications after recover_since as pushes right after
// the subscribe push, and expire_at ending the subscription.
func TestNodeSubscribeWith(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, br enginetest.Engine) {
		cfg := chatConfig()
		cfg.ExpiredSubCloseDelay = time.Millisecond
		n, url := newTestNode(t, br.Config(t, cfg))
		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, "alice", 0, nil))

		var since gyre.StreamPosition
		for i, d := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
			r, err := n.Publish("chat:rec", []byte(d))
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				since = gyre.StreamPosition{Offset: r.Offset, Epoch: r.Epoch}
			}
		}
		err := n.SubscribeWith("alice", "chat:rec", gyre.ClientFilter{}, gyre.ServerSubscribeOptions{
			SubscribeOptions: gyre.SubscribeOptions{ChanInfo: []byte(`{"seat":1}`), Data: []byte(`{"hi":1}`)},
			RecoverSince:     &since,
		})
		if err != nil {
			t.Fatal(err)
		}
		p := c.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.Subscribe != nil && p.Channel == "chat:rec" })
		if string(p.Subscribe.Data) != `{"hi":1}` || p.Subscribe.Offset != since.Offset || p.Subscribe.Epoch != since.Epoch {
			t.Fatalf("subscribe push %+v, want data {\"hi\":1} at offset %d", p.Subscribe, since.Offset)
		}
		pubs := c.WaitPubs("chat:rec", 2)
		if string(pubs[0].Data) != `{"n":2}` || string(pubs[1].Data) != `{"n":3}` {
			t.Fatalf("recovered %q %q, want n 2 and 3", pubs[0].Data, pubs[1].Data)
		}
		pres, err := n.Presence("chat:rec")
		if err != nil || len(pres) != 1 {
			t.Fatalf("presence %v %v", pres, err)
		}
		for _, ci := range pres {
			if string(ci.ChanInfo) != `{"seat":1}` {
				t.Fatalf("chan info %q", ci.ChanInfo)
			}
		}

		off := false
		err = n.SubscribeWith("alice", "chat:quiet", gyre.ClientFilter{}, gyre.ServerSubscribeOptions{
			SubscribeOptions: gyre.SubscribeOptions{Override: &gyre.SubscribeOverride{Presence: &off}},
		})
		if err != nil {
			t.Fatal(err)
		}
		c.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.Subscribe != nil && p.Channel == "chat:quiet" })
		if pres, err := n.Presence("chat:quiet"); err != nil || len(pres) != 0 {
			t.Fatalf("presence with the override off: %v %v", pres, err)
		}

		// An expire_at already past refuses the subscription; a near one
		// ends it (no sub-refresh handler on this node).
		if err := n.SubscribeWith("alice", "chat:past", gyre.ClientFilter{}, gyre.ServerSubscribeOptions{ExpireAt: time.Now().Add(-time.Minute).Unix()}); err != nil {
			t.Fatal(err)
		}
		if err := n.SubscribeWith("alice", "chat:brief", gyre.ClientFilter{}, gyre.ServerSubscribeOptions{ExpireAt: time.Now().Unix() + 1}); err != nil {
			t.Fatal(err)
		}
		c.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.Subscribe != nil && p.Channel == "chat:brief" })
		c.WaitPush("unsubscribe push at expiry", func(p *protocol.Push) bool { return p.Unsubscribe != nil && p.Channel == "chat:brief" })
		for _, p := range c.Pushes() {
			if p.Channel == "chat:past" {
				t.Fatalf("push for a subscription expired before it began: %+v", p)
			}
		}
	})
}

// TestPublishVersion: Node.Publish with WithVersion drops a stale
// publication on every engine: the result is Suppressed at the top, and
// neither history nor subscribers get it.
func TestPublishVersion(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, br enginetest.Engine) {
		n, url := newTestNode(t, br.Config(t, chatConfig()))
		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, "alice", 0, nil))
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:v"}); r.Error != nil {
			t.Fatal(r.Error)
		}
		first, err := n.Publish("chat:v", []byte(`{"v":1}`), gyre.WithVersion(1, "e"))
		if err != nil || first.Suppressed {
			t.Fatalf("first: %+v %v", first, err)
		}
		stale, err := n.Publish("chat:v", []byte(`{"v":0}`), gyre.WithVersion(1, "e"))
		if err != nil || !stale.Suppressed || stale.StreamPosition != first.StreamPosition {
			t.Fatalf("stale: %+v %v, want suppressed at %+v", stale, err, first.StreamPosition)
		}
		if _, err := n.Publish("chat:v", []byte(`{"v":2}`), gyre.WithVersion(2, "e")); err != nil {
			t.Fatal(err)
		}
		pubs := c.WaitPubs("chat:v", 2)
		if string(pubs[0].Data) != `{"v":1}` || string(pubs[1].Data) != `{"v":2}` {
			t.Fatalf("delivered %q %q", pubs[0].Data, pubs[1].Data)
		}
		hist, _, err := n.History("chat:v", -1, nil, false)
		if err != nil || len(hist) != 2 {
			t.Fatalf("history: %d publications, %v; want 2", len(hist), err)
		}
	})
}

// TestNodeSubscribeWithOtherNode: the options travel in the control
// message to the node holding the user's connection.
func TestNodeSubscribeWithOtherNode(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		a, _ := newTestNode(t, b.Same(t, chatConfig(), "subscribewith"))
		_, urlB := newTestNode(t, b.Same(t, chatConfig(), "subscribewith"))
		c := dial(t, urlB, protocol.TypeProtobuf)
		c.connect(connToken(t, "zoe", 0, nil))

		first, err := a.Publish("chat:far", []byte(`{"n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Publish("chat:far", []byte(`{"n":2}`)); err != nil {
			t.Fatal(err)
		}
		off := false
		err = a.SubscribeWith("zoe", "chat:far", gyre.ClientFilter{}, gyre.ServerSubscribeOptions{
			SubscribeOptions: gyre.SubscribeOptions{
				ChanInfo: []byte(`{"far":1}`), Data: []byte("\x00bin"),
				Override: &gyre.SubscribeOverride{JoinLeave: &off},
			},
			RecoverSince: &first.StreamPosition,
		})
		if err != nil {
			t.Fatal(err)
		}
		p := c.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.Subscribe != nil && p.Channel == "chat:far" })
		if string(p.Subscribe.Data) != "\x00bin" {
			t.Fatalf("subscribe push data %q", p.Subscribe.Data)
		}
		if pubs := c.WaitPubs("chat:far", 1); string(pubs[0].Data) != `{"n":2}` {
			t.Fatalf("recovered %q, want n 2", pubs[0].Data)
		}
		pres, err := a.Presence("chat:far")
		if err != nil || len(pres) != 1 {
			t.Fatalf("presence %v %v", pres, err)
		}
		for _, ci := range pres {
			if string(ci.ChanInfo) != `{"far":1}` {
				t.Fatalf("chan info %q", ci.ChanInfo)
			}
		}
	})
}
