package gyre_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// wildcardConfig has "geo", a namespace with wildcard subscriptions (and
// history, presence, join/leave, deltas and tag filters, which pattern
// subscriptions must leave alone), "$geo" private channels of it, and
// "plain", where "*" and ">" are ordinary characters.
func wildcardConfig() gyre.Config {
	opts := gyre.ChannelOptions{
		AllowSubscribeForClient: true, AllowPublishForClient: true, AllowTagsFilter: true,
		HistorySize: 10, HistoryTTL: time.Minute, AllowRecovery: true, AllowPositioning: true,
		Presence: true, JoinLeave: true, ForcePushJoinLeave: true, AllowedDeltaTypes: []string{"fossil"},
		AllowPresenceForClient: true, AllowHistoryForClient: true,
	}
	wild := opts
	wild.AllowWildcardSubscriptions = true
	closed := wild
	closed.AllowSubscribeForClient = false
	return gyre.Config{Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{
		{Name: "geo", ChannelOptions: wild},
		{Name: "closed", ChannelOptions: closed},
		{Name: "plain", ChannelOptions: opts},
	}}}
}

// patternPubs returns the publications received through the subscription
// to pattern, with the channel each one names.
func patternPubs(c *testClient, pattern string) []*protocol.Publication {
	var out []*protocol.Publication
	for _, p := range c.Pushes() {
		if p.Channel == pattern && p.Pub != nil {
			out = append(out, p.Pub)
		}
	}
	return out
}

// waitPatternPubs waits until the subscription to pattern received n
// publications.
func waitPatternPubs(c *testClient, pattern string, n int) []*protocol.Publication {
	c.t.Helper()
	var out []*protocol.Publication
	c.WaitFor(fmt.Sprintf("%d publications through %s", n, pattern), func() bool {
		out = patternPubs(c, pattern)
		return len(out) >= n
	})
	return out
}

// channelsOf lists the publications' channels, sorted.
func channelsOf(pubs []*protocol.Publication) []string {
	out := make([]string, 0, len(pubs))
	for _, p := range pubs {
		out = append(out, p.Channel)
	}
	slices.Sort(out)
	return out
}

func mustPublish(t *testing.T, n *gyre.Node, channel string, data []byte, opts ...gyre.PublishOption) {
	t.Helper()
	if _, err := n.Publish(channel, data, opts...); err != nil {
		t.Fatalf("publish to %s: %v", channel, err)
	}
}

// TestWildcardDelivery: a pattern subscriber receives what is published
// into every matching channel, and only that, with the pattern as the
// push's channel and the concrete channel in the publication; "*" stands
// for one token, ">" for one or more. A subscriber of the channel itself,
// the same client included, receives it once more through its own
// subscription.
func TestWildcardDelivery(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, wildcardConfig()))
			c := dial(t, url, proto)
			c.connect(connToken(t, "alice", 0, nil))
			star := c.MustSubscribe("geo:eu.*.bus")
			if star.Recoverable || star.Positioned || star.Epoch != "" || star.Offset != 0 || star.Id != 0 {
				t.Fatalf("pattern subscribe result %+v: want no stream (not recoverable, no position, no id)", star)
			}
			c.MustSubscribe("geo:eu.>")
			c.MustSubscribe("geo:eu.paris.bus")

			published := []string{"geo:eu.paris.bus", "geo:eu.rome.bus", "geo:eu.paris.tram", "geo:us.nyc.bus", "geo:eu.paris.bus.42", "geo:eu", "plain:eu.paris.bus"}
			for i, ch := range published {
				mustPublish(t, n, ch, numbered(i), gyre.WithTags(map[string]string{"i": fmt.Sprint(i)}))
			}
			// The last publication every pattern gets is number 4 (">"),
			// and the exact channel's is 0: wait for the ">" subscription,
			// which gets the most.
			gt := waitPatternPubs(c, "geo:eu.>", 4)
			stars := waitPatternPubs(c, "geo:eu.*.bus", 2)
			exact := c.WaitPubs("geo:eu.paris.bus", 1)

			want := map[string][]string{
				"geo:eu.*.bus": {"geo:eu.paris.bus", "geo:eu.rome.bus"},
				"geo:eu.>":     {"geo:eu.paris.bus", "geo:eu.rome.bus", "geo:eu.paris.tram", "geo:eu.paris.bus.42"},
			}
			for pattern, pubs := range map[string][]*protocol.Publication{"geo:eu.*.bus": stars, "geo:eu.>": gt} {
				var got []string
				for _, p := range pubs {
					got = append(got, p.Channel)
					if p.Offset != 0 || p.Delta {
						t.Errorf("%s: publication %+v carries an offset or delta", pattern, p)
					}
					if p.Tags["i"] == "" {
						t.Errorf("%s: publication %+v lost its tags", pattern, p)
					}
				}
				// Channels have no order between them: on a sharded engine
				// or a Redis Cluster each may come on its own connection.
				slices.Sort(got)
				if !slices.Equal(got, slices.Sorted(slices.Values(want[pattern]))) {
					t.Errorf("through %s got channels %v, want %v", pattern, got, want[pattern])
				}
			}
			if len(exact) != 1 || exact[0].Channel != "" || exact[0].Offset != 1 {
				t.Errorf("the exact subscription got %+v, want one publication with its offset and no channel field", exact)
			}
			// Nothing else arrives for any of them: publish a marker into a
			// channel all three take and check the counts after it.
			mustPublish(t, n, "geo:eu.paris.bus", numbered(99))
			waitPatternPubs(c, "geo:eu.*.bus", 3)
			waitPatternPubs(c, "geo:eu.>", 5)
			c.WaitPubs("geo:eu.paris.bus", 2)
			if got := len(patternPubs(c, "geo:eu.*.bus")); got != 3 {
				t.Errorf("geo:eu.*.bus got %d publications, want 3", got)
			}
			if got := len(patternPubs(c, "geo:eu.>")); got != 5 {
				t.Errorf("geo:eu.> got %d publications, want 5", got)
			}
			for _, p := range c.Pushes() {
				if p.Join != nil || p.Leave != nil {
					if strings.ContainsAny(p.Channel, "*>") {
						t.Errorf("join/leave push to a pattern subscription: %+v", p)
					}
				}
			}
		})
	})
}

// TestWildcardOrder: per concrete channel a pattern subscriber receives
// publications in the order they were published, with publishers
// publishing into several matching channels at once, one by one and in
// API batches.
func TestWildcardOrder(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		n, url := newTestNode(t, b.Config(t, wildcardConfig()))
		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, "alice", 0, nil))
		c.MustSubscribe("geo:*.pos")
		const channels, each = 4, 60
		done := make(chan error, channels)
		for i := range channels {
			go func() {
				ch := fmt.Sprintf("geo:v%d.pos", i)
				for j := 0; j < each; j += 3 {
					if j%2 == 0 {
						items := []gyre.PublishItem{{Data: numbered(j)}, {Data: numbered(j + 1)}, {Data: numbered(j + 2)}}
						publishMany(n, ch, items)
						if err := errors.Join(items[0].Err, items[1].Err, items[2].Err); err != nil {
							done <- err
							return
						}
						continue
					}
					for k := range 3 {
						if _, err := n.Publish(ch, numbered(j+k)); err != nil {
							done <- err
							return
						}
					}
				}
				done <- nil
			}()
		}
		for range channels {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		pubs := waitPatternPubs(c, "geo:*.pos", channels*each)
		next := map[string]int{}
		for _, p := range pubs {
			if want := string(numbered(next[p.Channel])); string(p.Data) != want {
				t.Fatalf("%s: got %s, want %s", p.Channel, p.Data, want)
			}
			next[p.Channel]++
		}
		if len(next) != channels {
			t.Fatalf("publications of %d channels, want %d", len(next), channels)
		}
	})
}

// TestWildcardRules: what a pattern may and may not be, and who may
// subscribe to one.
func TestWildcardRules(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		cfg := b.Config(t, wildcardConfig())
		cfg.ChannelLimit = 3
		n, url := newTestNode(t, cfg)
		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, "alice", 0, nil))

		refused := []struct {
			req  *protocol.SubscribeRequest
			code uint32
		}{
			{&protocol.SubscribeRequest{Channel: "geo:eu.*", Delta: "fossil"}, 107},
			{&protocol.SubscribeRequest{Channel: "geo:eu*"}, 107},
			{&protocol.SubscribeRequest{Channel: "geo:>.eu"}, 107},
			{&protocol.SubscribeRequest{Channel: "geo:eu..*"}, 107},
			{&protocol.SubscribeRequest{Channel: "geo:*."}, 107},
			{&protocol.SubscribeRequest{Channel: "closed:*"}, 103},
			{&protocol.SubscribeRequest{Channel: "nons:*"}, 102},
		}
		for _, r := range refused {
			rep := c.Subscribe(r.req)
			if rep.Error == nil || rep.Error.Code != r.code {
				t.Errorf("subscribe %+v: %+v, want error %d", r.req, rep, r.code)
			}
		}
		// Recovery asked for is not given: the result says so.
		rep := c.Subscribe(&protocol.SubscribeRequest{Channel: "geo:*", Recoverable: true, Recover: true, Positioned: true, JoinLeave: true, Flag: 1})
		if rep.Error != nil || rep.Subscribe.Recoverable || rep.Subscribe.Positioned || rep.Subscribe.Recovered || rep.Subscribe.Id != 0 {
			t.Fatalf("pattern subscribe asking for recovery, positioning and compaction: %+v", rep)
		}
		// Presence does not list pattern subscribers; join/leave are
		// not published for them.
		if pr, err := n.Presence("geo:x"); err != nil || len(pr) != 0 {
			t.Fatalf("presence of geo:x with a pattern subscriber: %v %v", pr, err)
		}

		// A name with a wildcard is no channel in a wildcard namespace.
		for _, ch := range []string{"geo:eu.*", "geo:>", "geo:a*"} {
			if _, err := n.Publish(ch, numbered(1)); !errors.Is(err, gyre.ErrorBadRequest) {
				t.Errorf("Node.Publish to %s: %v, want ErrorBadRequest", ch, err)
			}
			if _, _, err := n.History(ch, 0, nil, false); !errors.Is(err, gyre.ErrorBadRequest) {
				t.Errorf("Node.History of %s: %v, want ErrorBadRequest", ch, err)
			}
			if _, err := n.Presence(ch); !errors.Is(err, gyre.ErrorBadRequest) {
				t.Errorf("Node.Presence of %s: %v, want ErrorBadRequest", ch, err)
			}
			r := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: ch, Data: numbered(1)}})
			if r.Error == nil || r.Error.Code != 107 {
				t.Errorf("client publish to %s: %+v, want 107", ch, r)
			}
		}

		// Elsewhere "*" and ">" are characters of a name.
		c.MustSubscribe("plain:*")
		mustPublish(t, n, "plain:*", numbered(1))
		mustPublish(t, n, "plain:x", numbered(2))
		if pubs := c.WaitPubs("plain:*", 1); len(pubs) != 1 || string(pubs[0].Data) != string(numbered(1)) || pubs[0].Channel != "" {
			t.Fatalf("plain:* got %+v, want only what was published into it by that name", pubs)
		}

		// The channels API and the node's counts list a pattern with its
		// subscribers, as a channel.
		chs, err := n.Channels("geo:*")
		if err != nil || chs["geo:*"].NumClients != 1 {
			t.Fatalf("Channels: %v %v, want geo:* with one subscriber", chs, err)
		}
		if _, channels, subs := nodeStats(n); channels != 2 || subs != 2 {
			t.Fatalf("node counts %d channels and %d subscriptions, want 2 and 2 (geo:* and plain:*)", channels, subs)
		}

		// A pattern counts against the channel limit (3: geo:*, plain:*
		// and one more).
		c.MustSubscribe("geo:a.>")
		if rep := c.Subscribe(&protocol.SubscribeRequest{Channel: "geo:b.>"}); rep.Error == nil || rep.Error.Code != 106 {
			t.Fatalf("fourth subscription: %+v, want 106", rep)
		}
		if rep := c.Subscribe(&protocol.SubscribeRequest{Channel: "geo:*"}); rep.Error == nil || rep.Error.Code != 105 {
			t.Fatalf("the same pattern again: %+v, want 105", rep)
		}
	})
}

// TestWildcardUnsubscribe: after a pattern subscriber leaves, publications
// stop reaching it; the other subscribers of the pattern, and of other
// patterns of the scope, go on receiving; a scope left by its last
// pattern and taken again delivers again.
func TestWildcardUnsubscribe(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		n, url := newTestNode(t, b.Config(t, wildcardConfig()))
		a := dial(t, url, protocol.TypeJSON)
		a.connect(connToken(t, "alice", 0, nil))
		bob := dial(t, url, protocol.TypeProtobuf)
		bob.connect(connToken(t, "bob", 0, nil))
		a.MustSubscribe("geo:*")
		bob.MustSubscribe("geo:*")
		bob.MustSubscribe("geo:>")

		mustPublish(t, n, "geo:x", numbered(1))
		waitPatternPubs(a, "geo:*", 1)
		waitPatternPubs(bob, "geo:>", 1)
		a.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: "geo:*"}})
		mustPublish(t, n, "geo:x", numbered(2))
		waitPatternPubs(bob, "geo:*", 2)
		bob.Close()
		// The scope has no pattern left on the node; subscribing again
		// takes it anew.
		waitFor(t, "bob's subscriptions to end", func() bool { _, _, subs := nodeStats(n); return subs == 0 })
		a.MustSubscribe("geo:*")
		mustPublish(t, n, "geo:x", numbered(3))
		pubs := waitPatternPubs(a, "geo:*", 2)
		if string(pubs[1].Data) != string(numbered(3)) {
			t.Fatalf("after resubscribing got %s, want %s", pubs[1].Data, numbered(3))
		}
		if len(pubs) != 2 || string(pubs[0].Data) != string(numbered(1)) {
			t.Fatalf("alice got %v: the publication made while she was not subscribed reached her", pubs)
		}
	})
}

// TestWildcardFilter: a tag filter works on a pattern subscription.
func TestWildcardFilter(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		n, url := newTestNode(t, b.Config(t, wildcardConfig()))
		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, "alice", 0, nil))
		tf := &protocol.FilterNode{Key: "kind", Cmp: "eq", Val: "bus"}
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "geo:*.pos", Tf: tf}); r.Error != nil {
			t.Fatalf("subscribe with a filter: %+v", r.Error)
		}
		mustPublish(t, n, "geo:a.pos", numbered(1), gyre.WithTags(map[string]string{"kind": "tram"}))
		mustPublish(t, n, "geo:b.pos", numbered(2), gyre.WithTags(map[string]string{"kind": "bus"}))
		mustPublish(t, n, "geo:c.pos", numbered(3), gyre.WithTags(map[string]string{"kind": "bus"}))
		pubs := waitPatternPubs(c, "geo:*.pos", 2)
		// No order between channels (see TestWildcardTwoNodes).
		got := []string{pubs[0].Channel, pubs[1].Channel}
		slices.Sort(got)
		if len(pubs) != 2 || !slices.Equal(got, []string{"geo:b.pos", "geo:c.pos"}) {
			t.Fatalf("filtered pattern subscription got %+v", pubs)
		}
	})
}

// TestWildcardServerSide: a pattern in a subscription token's channel
// claim grants exactly that pattern; the connection token's channels and
// the server API's subscribe accept patterns.
func TestWildcardServerSide(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		n, url := newTestNode(t, b.Config(t, wildcardConfig()))
		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, "alice", 0, map[string]any{"channels": []string{"geo:tok.*"}}))
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "$geo:a.*", Token: subToken(t, "alice", "$geo:a.*")}); r.Error != nil {
			t.Fatalf("private pattern with its token: %+v", r.Error)
		}
		if err := n.Subscribe("alice", "geo:api.>", gyre.ClientFilter{}); err != nil {
			t.Fatalf("Node.Subscribe to a pattern: %v", err)
		}
		c.WaitPush("the API's subscribe push", func(p *protocol.Push) bool { return p.Subscribe != nil && p.Channel == "geo:api.>" })

		mustPublish(t, n, "geo:tok.1", numbered(1))
		mustPublish(t, n, "$geo:a.1", numbered(2))
		mustPublish(t, n, "geo:api.x.y", numbered(3))
		for pattern, ch := range map[string]string{"geo:tok.*": "geo:tok.1", "$geo:a.*": "$geo:a.1", "geo:api.>": "geo:api.x.y"} {
			if pubs := waitPatternPubs(c, pattern, 1); pubs[0].Channel != ch {
				t.Errorf("%s got %+v, want a publication of %s", pattern, pubs[0], ch)
			}
		}

		// A token for one channel does not open a pattern over it, nor
		// a token for a pattern another pattern.
		other := dial(t, url, protocol.TypeJSON)
		other.connect(connToken(t, "alice", 0, nil))
		if _, ce := other.TryCall(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "$geo:a.*", Token: subToken(t, "alice", "$geo:a.1")}}); ce == nil || ce.Code != 3500 {
			t.Fatalf("a channel's token for a pattern: %v, want close 3500", ce)
		}
		third := dial(t, url, protocol.TypeJSON)
		third.connect(connToken(t, "alice", 0, nil))
		if r := third.Subscribe(&protocol.SubscribeRequest{Channel: "$geo:*"}); r.Error == nil || r.Error.Code != 103 {
			t.Fatalf("a private pattern without a token: %+v, want 103", r)
		}
	})
}

// TestWildcardTwoNodes: a pattern subscriber on one node receives what is
// published on another node sharing its engine.
func TestWildcardTwoNodes(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		_, url := newTestNode(t, b.Same(t, wildcardConfig(), "wild2"))
		pub, _ := newTestNode(t, b.Same(t, wildcardConfig(), "wild2"))
		c := dial(t, url, protocol.TypeProtobuf)
		c.connect(connToken(t, "alice", 0, nil))
		c.MustSubscribe("geo:*.pos")
		c.MustSubscribe("geo:a.pos")
		for i := range 20 {
			mustPublish(t, pub, fmt.Sprintf("geo:%c.pos", 'a'+i%3), numbered(i))
		}
		// Each channel's publications come in order; between channels
		// there is none (docs/wildcards.md), and a sharded engine or a
		// Redis Cluster carries the three on different connections.
		next := map[string]int{"geo:a.pos": 0, "geo:b.pos": 1, "geo:c.pos": 2}
		for _, p := range waitPatternPubs(c, "geo:*.pos", 20) {
			i, ok := next[p.Channel]
			if !ok || string(p.Data) != string(numbered(i)) {
				t.Fatalf("%s %s, want %s next on it", p.Channel, p.Data, numbered(i))
			}
			next[p.Channel] = i + 3
		}
		if exact := c.WaitPubs("geo:a.pos", 7); len(exact) != 7 {
			t.Fatalf("the exact subscription got %d publications, want 7", len(exact))
		}
	})
}

// subToken is a subscription token of user for channel.
func subToken(t *testing.T, user, channel string) string {
	t.Helper()
	return connToken(t, user, time.Hour, map[string]any{"channel": channel})
}

// nodeStats is the node's users, channels and subscriptions.
func nodeStats(n *gyre.Node) (users, channels, subs int) {
	i := n.LocalInfo()
	return i.NumUsers, i.NumChannels, i.NumSubs
}

// TestWildcardWithoutNamespace: channels without a namespace may allow
// patterns too; private channels and public ones stay apart.
func TestWildcardWithoutNamespace(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		cfg := wildcardConfig()
		cfg.Channels.WithoutNamespace = gyre.ChannelOptions{AllowSubscribeForClient: true, AllowWildcardSubscriptions: true}
		n, url := newTestNode(t, b.Config(t, cfg))
		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, "alice", 0, nil))
		c.MustSubscribe("a.*")
		c.MustSubscribe(">")
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "$a.*", Token: subToken(t, "alice", "$a.*")}); r.Error != nil {
			t.Fatalf("private pattern: %+v", r.Error)
		}
		for i, ch := range []string{"$a.b", "a.b", "geo:a.b", "b"} {
			mustPublish(t, n, ch, numbered(i))
		}
		// Two channels: their publications keep no order between them (on
		// Redis Cluster they travel through different shards).
		if got := channelsOf(waitPatternPubs(c, ">", 2)); !slices.Equal(got, []string{"a.b", "b"}) {
			t.Fatalf("> got %v, want a.b and b", got)
		}
		if pubs := waitPatternPubs(c, "a.*", 1); len(pubs) != 1 || pubs[0].Channel != "a.b" {
			t.Fatalf("a.* got %+v, want a.b", pubs)
		}
		if pubs := waitPatternPubs(c, "$a.*", 1); len(pubs) != 1 || pubs[0].Channel != "$a.b" {
			t.Fatalf("$a.* got %+v, want $a.b", pubs)
		}
	})
}
