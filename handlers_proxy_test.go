package gyre_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// handlersConfig has "ruled" channels decided by their namespace's rules
// and "backend" ones decided by the handlers.
func handlersConfig() gyre.Config {
	return gyre.Config{Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{
		{Name: "ruled", ChannelOptions: gyre.ChannelOptions{AllowSubscribeForClient: true}},
		{Name: "closed"},
		{Name: "backend", ChannelOptions: gyre.ChannelOptions{HistorySize: 10, HistoryTTL: time.Minute, Presence: true}},
	}}}
}

// TestHandlerFallsBackToRules: a subscribe or publish handler that returns
// ErrNotHandled leaves the command to the namespace's rules; the
// connection's meta (from its token) is there for the handler.
func TestHandlerFallsBackToRules(t *testing.T) {
	var mu sync.Mutex
	var metas []string
	_, url := newTestNodeWith(t, handlersConfig(), func(n *gyre.Node) {
		n.OnSubscribe(func(_ context.Context, c *gyre.Client, e gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
			mu.Lock()
			metas = append(metas, string(c.Meta()))
			mu.Unlock()
			if e.Channel == "backend:x" {
				return gyre.SubscribeReply{Data: []byte(`{"by":"handler"}`)}, nil
			}
			return gyre.SubscribeReply{}, gyre.ErrNotHandled
		})
		n.OnPublish(func(context.Context, *gyre.Client, gyre.PublishEvent) (gyre.PublishReply, error) {
			return gyre.PublishReply{}, gyre.ErrNotHandled
		})
		n.OnRPC(func(context.Context, *gyre.Client, gyre.RPCEvent) (gyre.RPCReply, error) {
			return gyre.RPCReply{}, gyre.ErrNotHandled
		})
	})
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "u1", 0, map[string]any{"meta": map[string]any{"plan": "pro"}}))

	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "backend:x"}); r.Error != nil || string(r.Subscribe.Data) != `{"by":"handler"}` {
		t.Errorf("backend:x = %+v", r)
	}
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "ruled:x"}); r.Error != nil {
		t.Errorf("ruled:x: %v", r.Error)
	}
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "closed:x"}); r.Error == nil || r.Error.Code != 103 {
		t.Errorf("closed:x = %v, want 103", r.Error)
	}
	// Publishing: no rule allows it.
	if r := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "ruled:x", Data: []byte(`{}`)}}); r.Error == nil || r.Error.Code != 103 {
		t.Errorf("publish = %v, want 103", r.Error)
	}
	if r := c.Call(&protocol.Command{Rpc: &protocol.RPCRequest{Method: "m"}}); r.Error == nil || r.Error.Code != 108 {
		t.Errorf("rpc = %v, want 108", r.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range metas {
		if m != `{"plan":"pro"}` {
			t.Errorf("meta seen by the handler = %q", m)
		}
	}
}

// TestHandlerReplies: what a connecting handler gives (server-side
// subscriptions with options, meta) and what a publish handler adds (tags,
// skip_history) take effect, on each broker.
func TestHandlerReplies(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		off, on := false, true
		var mu sync.Mutex
		var seenMeta string
		n, url := newTestNodeWith(t, b.Config(t, handlersConfig()), func(n *gyre.Node) {
			n.OnConnecting(func(context.Context, gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
				return gyre.ConnectingReply{
					Credentials: &gyre.Credentials{UserID: "u2"},
					Subscriptions: map[string]gyre.SubscribeOptions{
						"backend:srv": {Data: []byte(`{"s":1}`), ChanInfo: []byte(`{"seat":3}`),
							Override: &gyre.SubscribeOverride{Presence: &off, ForceRecovery: &on}},
					},
					Meta: []byte(`{"m":2}`),
				}, nil
			})
			n.OnPublish(func(_ context.Context, c *gyre.Client, e gyre.PublishEvent) (gyre.PublishReply, error) {
				mu.Lock()
				seenMeta = string(c.Meta())
				mu.Unlock()
				return gyre.PublishReply{Tags: map[string]string{"t": "1"}, SkipHistory: true}, nil
			})
		})
		c := dial(t, url, protocol.TypeJSON)
		res := c.connect("")
		sr := res.Subs["backend:srv"]
		if sr == nil || string(sr.Data) != `{"s":1}` || !sr.Recoverable {
			t.Fatalf("server-side subscription = %+v, want data and recovery (override)", sr)
		}
		if p, err := n.Presence("backend:srv"); err != nil || len(p) != 0 {
			t.Errorf("presence = %v, %v: the override turned it off", p, err)
		}
		if r := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "backend:srv", Data: []byte(`{"x":1}`)}}); r.Error != nil {
			t.Fatal(r.Error)
		}
		pub := c.WaitPubs("backend:srv", 1)[0]
		if pub.Tags["t"] != "1" || pub.Info == nil || string(pub.Info.ChanInfo) != `{"seat":3}` {
			t.Errorf("publication = %+v", pub)
		}
		mu.Lock()
		if seenMeta != `{"m":2}` {
			t.Errorf("meta = %q", seenMeta)
		}
		mu.Unlock()
		pubs, _, err := n.History("backend:srv", -1, nil, false)
		if err != nil || len(pubs) != 0 {
			t.Errorf("history = %d publications, %v; want none (skip_history)", len(pubs), err)
		}
	})
}

// TestServerSideRefreshRetries: a failing server-side refresh handler
// keeps the connection (and the subscription) and is asked again; its
// later answer decides.
func TestServerSideRefreshRetries(t *testing.T) {
	cfg := handlersConfig()
	cfg.ServerSideRefreshRetry = 50 * time.Millisecond
	var mu sync.Mutex
	// unsubscribed is set once the client saw its subscription end, so
	// that the connection's refresh cannot close it before that push.
	var unsubscribed atomic.Bool
	calls := map[string]int{}
	count := func(what string) int {
		mu.Lock()
		defer mu.Unlock()
		calls[what]++
		return calls[what]
	}
	_, url := newTestNodeWith(t, cfg, func(n *gyre.Node) {
		n.OnConnecting(func(context.Context, gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
			return gyre.ConnectingReply{Credentials: &gyre.Credentials{UserID: "u3", ExpireAt: time.Now().Add(time.Second).Unix()}}, nil
		})
		n.OnSubscribe(func(context.Context, *gyre.Client, gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
			return gyre.SubscribeReply{ExpireAt: time.Now().Add(time.Second).Unix(), ServerSideRefresh: true}, nil
		})
		n.OnSubRefresh(func(context.Context, *gyre.Client, gyre.SubRefreshEvent) (gyre.SubRefreshReply, error) {
			if count("sub") < 3 {
				return gyre.SubRefreshReply{}, errors.New("backend down")
			}
			return gyre.SubRefreshReply{Expired: true}, nil
		})
		n.OnServerSideRefresh(func(context.Context, *gyre.Client, gyre.RefreshEvent) (gyre.RefreshReply, error) {
			// Failing until the subscription is gone keeps the
			// connection for the subscription's part of the test.
			if k := count("conn"); k < 3 || !unsubscribed.Load() {
				return gyre.RefreshReply{}, errors.New("backend down")
			}
			return gyre.RefreshReply{Expired: true}, nil
		})
	})
	c := dial(t, url, protocol.TypeJSON)
	res := c.connect("")
	if res.Expires {
		t.Error("connect result asks the client to refresh")
	}
	sr := c.Subscribe(&protocol.SubscribeRequest{Channel: "backend:r"})
	if sr.Error != nil || sr.Subscribe.Expires {
		t.Fatalf("subscribe = %+v, want no client-side expiry", sr)
	}
	u := c.WaitPush("unsubscribe 2501", func(p *protocol.Push) bool { return p.Unsubscribe != nil })
	if u.Unsubscribe.Code != 2501 {
		t.Errorf("unsubscribe code %d, want 2501", u.Unsubscribe.Code)
	}
	unsubscribed.Store(true)
	if ce := c.WaitClose(); ce.Code != 3005 {
		t.Errorf("close %d, want 3005", ce.Code)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["sub"] != 3 || calls["conn"] < 3 {
		t.Errorf("handler calls = %v, want 3 for the subscription (two failures, then the answer), 3 or more for the connection", calls)
	}
}
