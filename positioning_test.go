package gyre_test

import (
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// TestPositioning: the position check unsubscribes with 2500 a positioned
// subscriber whose stream was lost (here its meta expired while the
// channel was quiet, so the stream has a new epoch), and leaves alone one
// that received everything. The client then resubscribes and goes on in
// the new stream.
func TestPositioning(t *testing.T) {
	opts := gyre.ChannelOptions{
		HistorySize: 10, HistoryTTL: time.Minute, ForcePositioning: true, AllowSubscribeForClient: true,
	}
	fleeting := opts
	fleeting.HistoryMetaTTL = 100 * time.Millisecond
	cfg := gyre.Config{
		PositionCheckInterval: 500 * time.Millisecond,
		Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{
			{Name: "fleeting", ChannelOptions: fleeting},
			{Name: "kept", ChannelOptions: opts},
		}},
	}
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		skipShortMeta(t, b)
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, cfg))
			c := dial(t, url, proto)
			c.connect(connToken(t, "42", 0, nil))
			lost := c.MustSubscribe("fleeting:a")
			kept := c.MustSubscribe("kept:a")
			if !lost.Positioned || !kept.Positioned || lost.Epoch == "" {
				t.Fatalf("subscribe results %+v and %+v, want positioned", lost, kept)
			}
			if _, err := n.Publish("kept:a", numbered(1)); err != nil {
				t.Fatal(err)
			}
			c.WaitPubs("kept:a", 1)

			unsub := c.WaitPush("unsubscribe 2500 from fleeting:a", func(p *protocol.Push) bool {
				return p.Channel == "fleeting:a" && p.Unsubscribe != nil
			})
			if code := unsub.Unsubscribe.Code; code != 2500 {
				t.Fatalf("unsubscribe code %d, want 2500 (insufficient state)", code)
			}
			// The check that found fleeting:a lost also checked kept:a: were
			// it unsubscribed, this publication would not arrive.
			if _, err := n.Publish("kept:a", numbered(2)); err != nil {
				t.Fatal(err)
			}
			c.WaitPubs("kept:a", 2)

			again := c.MustSubscribe("fleeting:a")
			if again.Epoch == lost.Epoch {
				t.Fatalf("resubscribed in epoch %q, the lost stream's", again.Epoch)
			}
			res, err := n.Publish("fleeting:a", numbered(3))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.WaitPubs("fleeting:a", 1); got[0].Offset != res.Offset || res.Epoch != again.Epoch {
				t.Fatalf("publication at %d in epoch %q, want %d in %q", got[0].Offset, res.Epoch, res.Offset, again.Epoch)
			}
		})
	})
}

// skipShortMeta skips the tests that expire a stream's meta while its
// publications live (HistoryMetaTTL shorter than HistoryTTL, which the
// server's config refuses and only the library can set) on JetStream,
// whose streams keep a channel's position at least as long as its
// publications (docs/engines.md, JetStream).
func skipShortMeta(t *testing.T, b enginetest.Engine) {
	t.Helper()
	if b.Name() == "nats-jetstream" {
		t.Skip("JetStream keeps a position as long as its publications: a meta TTL shorter than the history TTL does not apply")
	}
}

// TestStreamRestartReachesPlainSubscribers: when a stream starts again in a
// new epoch (its meta expired in a quiet spell), offsets start again at 1;
// a subscriber without a position keeps receiving, whatever offsets it got
// before.
func TestStreamRestartReachesPlainSubscribers(t *testing.T) {
	cfg := gyre.Config{Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{{
		Name: "fleeting", ChannelOptions: gyre.ChannelOptions{
			HistorySize: 10, HistoryTTL: time.Minute, HistoryMetaTTL: 100 * time.Millisecond, AllowSubscribeForClient: true,
		},
	}}}}
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		skipShortMeta(t, b)
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, cfg))
			c := dial(t, url, proto)
			c.connect(connToken(t, "42", 0, nil))
			if res := c.MustSubscribe("fleeting:a"); res.Positioned {
				t.Fatalf("subscribe result %+v, want no position", res)
			}
			var first gyre.PublishResult
			for i := range 3 {
				var err error
				if first, err = n.Publish("fleeting:a", numbered(i)); err != nil {
					t.Fatal(err)
				}
			}
			c.WaitPubs("fleeting:a", 3)
			// Quiet for longer than the meta lives: the stream is gone.
			time.Sleep(400 * time.Millisecond)
			again, err := n.Publish("fleeting:a", numbered(3))
			if err != nil {
				t.Fatal(err)
			}
			if again.Epoch == first.Epoch || again.Offset >= first.Offset {
				t.Fatalf("publication after the stream expired at %d in %q, want a new epoch (before: %d in %q)", again.Offset, again.Epoch, first.Offset, first.Epoch)
			}
			if got := c.WaitPubs("fleeting:a", 4); got[3].Offset != again.Offset {
				t.Fatalf("fourth publication at %d, want %d", got[3].Offset, again.Offset)
			}
		})
	})
}
