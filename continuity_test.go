package gyre_test

import (
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/memory"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// handBroker is an engine's broker whose event handler the test reaches,
// to hand the node what a broker reading a stale server would (after a
// Redis failover, a node may read the old master's pub/sub while a
// recovery read the new master, which lacks its last writes).
type handBroker struct {
	broker.Broker
	mu sync.Mutex
	h  broker.EventHandler
}

func (b *handBroker) Run(h broker.EventHandler) error {
	b.mu.Lock()
	b.h = h
	b.mu.Unlock()
	return b.Broker.Run(h)
}

func (b *handBroker) handRun(t *testing.T, channel string, offset uint64, epoch string, data string) {
	t.Helper()
	b.mu.Lock()
	h := b.h
	b.mu.Unlock()
	pub := &broker.Publication{Offset: offset, Data: []byte(data), Time: time.Now().UnixMilli()}
	run := broker.Run{Channel: channel, Pubs: []broker.RunPublication{{Pub: pub, Position: broker.StreamPosition{Offset: offset, Epoch: epoch}}}}
	if err := h.HandleRuns([]broker.Run{run}); err != nil {
		t.Fatal(err)
	}
}

// TestLiveGapTold: a publication that reaches the node with offsets
// skipped since the last one a positioned subscriber has is not given to
// it as if nothing was missed: it is unsubscribed with 2500, resubscribes
// and recovers. A tag-filtered positioned subscriber is told as well (the
// skipped offsets might have matched its filter); a subscriber without a
// position just receives it.
func TestLiveGapTold(t *testing.T) {
	positioned := gyre.ChannelOptions{
		HistorySize: 100, HistoryTTL: time.Minute, ForcePositioning: true, AllowSubscribeForClient: true, AllowTagsFilter: true,
	}
	plain := gyre.ChannelOptions{HistorySize: 100, HistoryTTL: time.Minute, AllowSubscribeForClient: true}
	cfg := gyre.Config{Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{
		{Name: "pos", ChannelOptions: positioned},
		{Name: "plain", ChannelOptions: plain},
	}}}
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		c := e.Config(t, cfg)
		if c.Broker == nil {
			mb, err := memory.NewBroker(memory.Config{})
			if err != nil {
				t.Fatal(err)
			}
			c.Broker = mb
		}
		hb := &handBroker{Broker: c.Broker}
		c.Broker = hb
		n, url := newTestNode(t, c)
		cl := dial(t, url, protocol.TypeJSON)
		cl.connect(connToken(t, "42", 0, nil))
		for _, ch := range []string{"pos:a", "plain:a"} {
			cl.MustSubscribe(ch)
		}
		filtered := cl.Subscribe(&protocol.SubscribeRequest{Channel: "pos:b", Tf: &protocol.FilterNode{Key: "kind", Cmp: "eq", Val: "wanted"}})
		if filtered.Error != nil {
			t.Fatalf("subscribe with a filter: %v", filtered.Error)
		}
		var epochs = map[string]string{}
		for _, ch := range []string{"pos:a", "plain:a", "pos:b"} {
			res, err := n.Publish(ch, numbered(1), gyre.WithTags(map[string]string{"kind": "wanted"}))
			if err != nil {
				t.Fatal(err)
			}
			epochs[ch] = res.Epoch
		}
		for _, ch := range []string{"pos:a", "plain:a", "pos:b"} {
			cl.WaitPubs(ch, 1)
		}

		for _, ch := range []string{"pos:a", "plain:a", "pos:b"} {
			hb.handRun(t, ch, 5, epochs[ch], `{"n":5}`)
		}
		cl.WaitPubs("plain:a", 2)
		for _, ch := range []string{"pos:a", "pos:b"} {
			unsub := cl.WaitPush("unsubscribe from "+ch, func(p *protocol.Push) bool {
				return p.Channel == ch && p.Unsubscribe != nil
			})
			if code := unsub.Unsubscribe.Code; code != 2500 {
				t.Fatalf("%s: unsubscribe code %d, want 2500 (insufficient state)", ch, code)
			}
			if got := cl.Pubs(ch); len(got) != 1 {
				t.Fatalf("%s: %d publications, want only the first: the one after the gap must not arrive", ch, len(got))
			}
		}
	})
}
