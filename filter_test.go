package gyre_test

import (
	"context"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/filter"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

func filterConfig() gyre.Config {
	cfg := chatConfig()
	cfg.Channels.Namespaces = append(cfg.Channels.Namespaces, gyre.Namespace{Name: "scores", ChannelOptions: gyre.ChannelOptions{
		AllowSubscribeForClient: true, AllowTagsFilter: true, AllowedDeltaTypes: []string{"fossil"},
		HistorySize: 10, HistoryTTL: time.Minute, ForcePositioning: true,
	}})
	return cfg
}

func mustParse(t *testing.T, expr string) *protocol.FilterNode {
	t.Helper()
	n, err := filter.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// publishTagged publishes one publication per tag set.
func publishTagged(t *testing.T, n *gyre.Node, channel string, tags []map[string]string) {
	t.Helper()
	for _, tg := range tags {
		if _, err := n.Publish(channel, []byte(`{"t":"`+tg["event"]+`"}`), gyre.WithTags(tg)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTagsFilter(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, filterConfig()))
			c := dial(t, url, proto)
			c.connect(connToken(t, "42", 0, nil))
			tf := mustParse(t, `event == "goal" || (event == "shot" && xg >= 0.8)`)
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "scores:m1", Tf: tf}); r.Error != nil {
				t.Fatalf("subscribe with a filter: %+v", r.Error)
			}
			publishTagged(t, n, "scores:m1", []map[string]string{
				{"event": "shot", "xg": "0.3"},
				{"event": "goal"},
				{"event": "shot", "xg": "0.80"},
				{"event": "corner"},
				{"event": "shot", "xg": "8e-1"},
				{"event": "goal", "last": "1"},
			})
			c.WaitPubs("scores:m1", 4)
			time.Sleep(50 * time.Millisecond) // let anything unexpected arrive too
			pubs := c.Pubs("scores:m1")
			want := []uint64{2, 3, 5, 6}
			if len(pubs) != len(want) {
				t.Fatalf("got %d publications, want %d", len(pubs), len(want))
			}
			for i, p := range pubs {
				if p.Offset != want[i] {
					t.Fatalf("publication %d has offset %d, want %d", i, p.Offset, want[i])
				}
			}
		})
	})
}

func TestTagsFilterRefused(t *testing.T) {
	tests := []struct {
		name string
		req  *protocol.SubscribeRequest
	}{
		{"namespace without allow_tags_filter", &protocol.SubscribeRequest{Channel: "chat:x", Tf: &protocol.FilterNode{Key: "a", Cmp: "eq", Val: "1"}}},
		{"unknown cmp", &protocol.SubscribeRequest{Channel: "scores:x", Tf: &protocol.FilterNode{Key: "a", Cmp: "like", Val: "1"}}},
		{"not with two children", &protocol.SubscribeRequest{Channel: "scores:x", Tf: &protocol.FilterNode{Op: "not", Nodes: []*protocol.FilterNode{{Key: "a", Cmp: "ex"}, {Key: "b", Cmp: "ex"}}}}},
		{"filter with delta", &protocol.SubscribeRequest{Channel: "scores:x", Delta: "fossil", Tf: &protocol.FilterNode{Key: "a", Cmp: "ex"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newTestNode(t, filterConfig())
			c := dial(t, url, protocol.TypeJSON)
			c.connect(connToken(t, "42", 0, nil))
			if r := c.Subscribe(tt.req); r.Error == nil || r.Error.Code != 107 {
				t.Fatalf("reply %+v, want 107", r)
			}
		})
	}
}

// TestServerEnforcedFilter: a filter in the subscription token applies even
// when the client asks for none, and is ANDed with the client's.
func TestServerEnforcedFilter(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		for _, claim := range []map[string]any{
			{"filter": `region == "eu"`},
			{"tf": map[string]any{"key": "region", "cmp": "eq", "val": "eu"}},
		} {
			n, url := newTestNode(t, b.Config(t, filterConfig()))
			c := dial(t, url, protocol.TypeJSON)
			c.connect(connToken(t, "42", 0, nil))
			extra := map[string]any{"channel": "scores:m2"}
			for k, v := range claim {
				extra[k] = v
			}
			tok := connToken(t, "42", time.Hour, extra)
			if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "scores:m2", Token: tok}); r.Error != nil {
				t.Fatalf("subscribe: %+v", r.Error)
			}
			for _, region := range []string{"us", "eu", "asia", "eu"} {
				if _, err := n.Publish("scores:m2", []byte(`{}`), gyre.WithTags(map[string]string{"region": region})); err != nil {
					t.Fatal(err)
				}
			}
			c.WaitPubs("scores:m2", 2)
			time.Sleep(50 * time.Millisecond)
			pubs := c.Pubs("scores:m2")
			if len(pubs) != 2 || pubs[0].Offset != 2 || pubs[1].Offset != 4 {
				t.Fatalf("claim %v: got %d publications (%v)", claim, len(pubs), pubs)
			}
		}
	})
}

// TestServerFilterFromHandler: the subscribe handler's filter is ANDed
// with the client's.
func TestServerFilterFromHandler(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		n, url := newTestNodeWith(t, b.Config(t, filterConfig()), func(n *gyre.Node) {
			n.OnSubscribe(func(_ context.Context, _ *gyre.Client, e gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
				tree, err := filter.Parse(`tier != "premium"`)
				return gyre.SubscribeReply{Filter: tree}, err
			})
		})
		c := dial(t, url, protocol.TypeProtobuf)
		c.connect(connToken(t, "42", 0, nil))
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "scores:m3", Tf: mustParse(t, `exists(score)`)}); r.Error != nil {
			t.Fatal(r.Error)
		}
		for _, tags := range []map[string]string{
			{"tier": "premium", "score": "1"}, {"tier": "free"}, {"tier": "free", "score": "2"},
		} {
			if _, err := n.Publish("scores:m3", []byte(`{}`), gyre.WithTags(tags)); err != nil {
				t.Fatal(err)
			}
		}
		c.WaitPubs("scores:m3", 1)
		time.Sleep(50 * time.Millisecond)
		if pubs := c.Pubs("scores:m3"); len(pubs) != 1 || pubs[0].Offset != 3 {
			t.Fatalf("got %v", pubs)
		}
	})
}
