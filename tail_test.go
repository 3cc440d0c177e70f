package gyre_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// TestTail: Node.Tail receives what a client subscriber receives, through
// the same fan-out, in order, with tags and the publisher's info; it
// joins no presence, sends no join or leave, shows to no handler, and its
// subscription goes when its context ends.
func TestTail(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		opts := gyre.ChannelOptions{AllowSubscribeForClient: true, Presence: true, JoinLeave: true, ForcePushJoinLeave: true, HistorySize: 10, HistoryTTL: time.Minute}
		var mu sync.Mutex
		var events []string
		n, url := newTestNodeWith(t, b.Config(t, gyre.Config{Channels: gyre.ChannelConfig{WithoutNamespace: opts}}), func(n *gyre.Node) {
			n.OnUnsubscribe(func(c *gyre.Client, e gyre.UnsubscribeEvent) {
				mu.Lock()
				events = append(events, "unsubscribe "+c.ID())
				mu.Unlock()
			})
			n.OnDisconnect(func(c *gyre.Client, e gyre.DisconnectEvent) {
				mu.Lock()
				events = append(events, "disconnect "+c.ID())
				mu.Unlock()
			})
		})
		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, "watcher", time.Hour, nil))
		c.MustSubscribe("room")

		got := make(chan *gyre.Publication, 10)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done, err := n.Tail(ctx, "room", func(ch string, p *gyre.Publication) {
			if ch != "room" {
				t.Errorf("tail of room got channel %q", ch)
			}
			got <- p
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, data := range []string{`{"n":1}`, `{"n":2}`} {
			if _, err := n.Publish("room", []byte(data), gyre.WithTags(map[string]string{"i": data})); err != nil {
				t.Fatal(err)
			}
			p := <-got
			if string(p.Data) != data || p.Tags["i"] != data || p.Offset != uint64(i+1) || p.Time == 0 {
				t.Fatalf("tailed %+v", p)
			}
		}
		// The client subscriber saw the same two, and no join of the tail.
		pubs := c.WaitPubs("room", 2)
		if string(pubs[1].Data) != `{"n":2}` {
			t.Fatalf("client got %+v", pubs)
		}
		for _, p := range c.Pushes() {
			if p.Join != nil && p.Join.Info.User != "watcher" {
				t.Fatalf("a join of the tail reached the client: %+v", p.Join)
			}
		}
		presence, err := n.Presence("room")
		if err != nil {
			t.Fatal(err)
		}
		if len(presence) != 1 {
			t.Fatalf("presence with a tail: %v", presence)
		}
		if i := n.LocalInfo(); i.NumClients != 1 || i.NumSubs != 2 {
			t.Fatalf("info with a tail: %+v", i)
		}
		cancel()
		<-done
		if i := n.LocalInfo(); i.NumSubs != 1 {
			t.Fatalf("subscriptions after the tail ended: %d", i.NumSubs)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(events) != 0 {
			t.Fatalf("handlers saw the tail: %v", events)
		}
		if _, err := n.Tail(context.Background(), "", func(string, *gyre.Publication) {}); err == nil {
			t.Fatal("tail of no channel accepted")
		}
	})
}
