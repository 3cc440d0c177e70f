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
	// blocked channels: their History waits for the channel's release,
	// after closing entered (a subscribe then stays pending meanwhile).
	blocked map[string]*historyGate
}

type historyGate struct{ entered, release chan struct{} }

// block makes the next History of channel wait until the returned
// release is closed; entered is closed once it waits.
func (b *handBroker) block(channel string) *historyGate {
	g := &historyGate{entered: make(chan struct{}), release: make(chan struct{})}
	b.mu.Lock()
	if b.blocked == nil {
		b.blocked = map[string]*historyGate{}
	}
	b.blocked[channel] = g
	b.mu.Unlock()
	return g
}

func (b *handBroker) History(channel string, opts broker.HistoryOptions) ([]*broker.Publication, broker.StreamPosition, error) {
	b.mu.Lock()
	g := b.blocked[channel]
	delete(b.blocked, channel)
	b.mu.Unlock()
	if g != nil {
		close(g.entered)
		<-g.release
	}
	return b.Broker.History(channel, opts)
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
// skipped since the last one a positioned subscriber has, or in another
// epoch, is not given to it as if nothing was missed: it is unsubscribed
// with 2500, resubscribes and recovers. A tag-filtered positioned subscriber is told as well (the
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
		hb, n, url := handNode(t, e, cfg)
		cl := dial(t, url, protocol.TypeJSON)
		cl.connect(connToken(t, "42", 0, nil))
		for _, ch := range []string{"pos:a", "plain:a"} {
			cl.MustSubscribe(ch)
		}
		filtered := cl.Subscribe(&protocol.SubscribeRequest{Channel: "pos:b", Tf: &protocol.FilterNode{Key: "kind", Cmp: "eq", Val: "wanted"}})
		if filtered.Error != nil {
			t.Fatalf("subscribe with a filter: %v", filtered.Error)
		}
		cl.MustSubscribe("pos:e")
		var epochs = map[string]string{}
		for _, ch := range []string{"pos:a", "plain:a", "pos:b", "pos:e"} {
			res, err := n.Publish(ch, numbered(1), gyre.WithTags(map[string]string{"kind": "wanted"}))
			if err != nil {
				t.Fatal(err)
			}
			epochs[ch] = res.Epoch
		}
		for _, ch := range []string{"pos:a", "plain:a", "pos:b", "pos:e"} {
			cl.WaitPubs(ch, 1)
		}

		for _, ch := range []string{"pos:a", "plain:a", "pos:b"} {
			hb.handRun(t, ch, 5, epochs[ch], `{"n":5}`)
		}
		// The next offset, but of another epoch: a promoted replica's
		// stream, not the one the subscriber is in.
		hb.handRun(t, "pos:e", 2, epochs["pos:e"]+"x", `{"n":2}`)
		cl.WaitPubs("plain:a", 2)
		for _, ch := range []string{"pos:a", "pos:b", "pos:e"} {
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

// handNode runs a node on engine e whose broker the test reaches.
func handNode(t *testing.T, e enginetest.Engine, cfg gyre.Config) (*handBroker, *gyre.Node, string) {
	t.Helper()
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
	return hb, n, url
}

// TestHeldGapTold: publications that reach a subscription while it is
// still subscribing are held and given after its subscribe result; held
// ones that skip offsets past the position the result gives (a tag
// filter's too), or come from another epoch, end it with unsubscribe 2500
// right after the result, while held ones that follow on arrive.
func TestHeldGapTold(t *testing.T) {
	positioned := gyre.ChannelOptions{
		HistorySize: 100, HistoryTTL: time.Minute, ForcePositioning: true, AllowSubscribeForClient: true, AllowTagsFilter: true,
	}
	cfg := gyre.Config{Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{{Name: "pos", ChannelOptions: positioned}}}}
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		hb, n, url := handNode(t, e, cfg)
		cl := dial(t, url, protocol.TypeJSON)
		cl.connect(connToken(t, "42", 0, nil))
		cases := []struct {
			channel string
			filter  *protocol.FilterNode
			held    uint64 // offset of the publication handed while pending
			epoch   string // appended to the stream's epoch for it
			gap     bool
		}{
			{"pos:gap", nil, 5, "", true},
			{"pos:filtered", &protocol.FilterNode{Key: "kind", Cmp: "eq", Val: "wanted"}, 5, "", true},
			{"pos:epoch", nil, 2, "x", true},
			{"pos:next", nil, 2, "", false},
		}
		for i, c := range cases {
			res, err := n.Publish(c.channel, numbered(1))
			if err != nil {
				t.Fatal(err)
			}
			g := hb.block(c.channel)
			id := uint32(1000 + i)
			cl.Send(&protocol.Command{Id: id, Subscribe: &protocol.SubscribeRequest{Channel: c.channel, Tf: c.filter}})
			<-g.entered
			hb.handRun(t, c.channel, c.held, res.Epoch+c.epoch, `{"n":2}`)
			close(g.release)
			if r := cl.WaitReply(id); r.Error != nil {
				t.Fatalf("%s: subscribe: %v", c.channel, r.Error)
			}
			if !c.gap {
				if got := cl.WaitPubs(c.channel, 1); got[0].Offset != c.held {
					t.Fatalf("%s: held publication at %d, want %d", c.channel, got[0].Offset, c.held)
				}
				continue
			}
			unsub := cl.WaitPush("unsubscribe from "+c.channel, func(p *protocol.Push) bool {
				return p.Channel == c.channel && p.Unsubscribe != nil
			})
			if code := unsub.Unsubscribe.Code; code != 2500 {
				t.Fatalf("%s: unsubscribe code %d, want 2500", c.channel, code)
			}
			if got := cl.Pubs(c.channel); len(got) != 0 {
				t.Fatalf("%s: %d publications after a held gap, want none", c.channel, len(got))
			}
		}
	})
}
