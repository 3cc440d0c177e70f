package gyre_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// protocols runs a test over both wire formats.
func protocols(t *testing.T, fn func(t *testing.T, proto protocol.Type)) {
	for _, p := range []protocol.Type{protocol.TypeJSON, protocol.TypeProtobuf} {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			fn(t, p)
		})
	}
}

func chatConfig() gyre.Config {
	return gyre.Config{Channels: gyre.ChannelConfig{
		WithoutNamespace: gyre.ChannelOptions{AllowSubscribeForClient: true},
		Namespaces: []gyre.Namespace{
			{Name: "chat", ChannelOptions: gyre.ChannelOptions{
				Presence: true, JoinLeave: true, ForcePushJoinLeave: true,
				HistorySize: 100, HistoryTTL: time.Minute, ForceRecovery: true,
				AllowSubscribeForClient: true, AllowPublishForSubscriber: true,
				AllowPresenceForSubscriber: true, AllowHistoryForSubscriber: true,
			}},
			{Name: "private"},
		},
	}}
}

func TestConnect(t *testing.T) {
	protocols(t, func(t *testing.T, proto protocol.Type) {
		_, url := newTestNode(t, chatConfig())
		c := dial(t, url, proto)
		res := c.connect(connToken(t, "42", time.Hour, nil))
		if res.Client == "" || !res.Expires || res.Ttl == 0 || res.Ping != 25 || !res.Pong {
			t.Fatalf("connect result: %+v", res)
		}
	})
}

func TestConnectIncludeServerTime(t *testing.T) {
	protocols(t, func(t *testing.T, proto protocol.Type) {
		_, url := newTestNode(t, chatConfig())
		if res := dial(t, url, proto).connect(connToken(t, "42", time.Hour, nil)); res.Time != 0 {
			t.Fatalf("time %d sent without connect_include_server_time", res.Time)
		}
		cfg := chatConfig()
		cfg.ConnectIncludeServerTime = true
		_, url = newTestNode(t, cfg)
		before := time.Now().UnixMilli()
		res := dial(t, url, proto).connect(connToken(t, "42", time.Hour, nil))
		after := time.Now().UnixMilli()
		if res.Time < before || res.Time > after {
			t.Fatalf("connect result time %d, want the server time in Unix milliseconds, within [%d, %d]", res.Time, before, after)
		}
	})
}

// TestSingleConnection: a user's new connection closes the older ones
// with 3504, on one node and, through Redis, on another node.
func TestSingleConnection(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			cfg := chatConfig()
			cfg.SubscribeToUserPersonalChannel = true
			cfg.PersonalChannelNamespace = "personal"
			cfg.SingleConnection = true
			cfg.Channels.Namespaces = append(cfg.Channels.Namespaces, gyre.Namespace{Name: "personal", ChannelOptions: gyre.ChannelOptions{Presence: true}})
			url, secondURL := "", ""
			if !b.Multinode() {
				_, url = newTestNode(t, b.Config(t, cfg))
				secondURL = url
			} else {
				// The second connection lands on another node of the
				// cluster: the first must go all the same.
				_, url = newTestNode(t, b.Same(t, cfg, "single"))
				_, secondURL = newTestNode(t, b.Same(t, cfg, "single"))
			}
			first := dial(t, url, proto)
			first.connect(connToken(t, "42", time.Hour, nil))
			other := dial(t, url, proto)
			other.connect(connToken(t, "7", time.Hour, nil))
			second := dial(t, secondURL, proto)
			second.connect(connToken(t, "42", time.Hour, nil))
			if ce := first.WaitClose(); uint16(ce.Code) != 3504 {
				t.Fatalf("first connection of user 42 closed with %d %q, want 3504 (connection limit)", ce.Code, ce.Reason)
			}
			// The new connection and the other user's stay.
			for name, c := range map[string]*testClient{"second": second, "other user": other} {
				if r, ce := c.TryCall(&protocol.Command{Presence: &protocol.PresenceRequest{Channel: "#42"}}); ce != nil {
					t.Fatalf("%s connection closed (%d) after the second connect of user 42", name, ce.Code)
				} else if r == nil {
					t.Fatalf("%s: no reply", name)
				}
			}
		})
	})
}

func TestConnectRefused(t *testing.T) {
	tests := []struct {
		name  string
		token func(t *testing.T) string
		code  uint16
	}{
		{"bad signature", func(t *testing.T) string { return connToken(t, "42", time.Hour, nil) + "x" }, 3500},
		{"garbage", func(t *testing.T) string { return "not.a.token" }, 3500},
		{"no token", func(t *testing.T) string { return "" }, 3501},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newTestNode(t, chatConfig())
			c := dial(t, url, protocol.TypeJSON)
			c.Send(&protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{Token: tt.token(t)}})
			if ce := c.WaitClose(); uint16(ce.Code) != tt.code {
				t.Fatalf("close code %d (%s), want %d", ce.Code, ce.Reason, tt.code)
			}
		})
	}
}

func TestConnectExpiredToken(t *testing.T) {
	_, url := newTestNode(t, chatConfig())
	c := dial(t, url, protocol.TypeJSON)
	tok := connToken(t, "42", 0, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}})
	if r.Error == nil || r.Error.Code != 109 {
		t.Fatalf("reply %+v, want error 109", r)
	}
}

func TestSubscribeAndReceive(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, chatConfig()))
			c := dial(t, url, proto)
			c.connect(connToken(t, "42", 0, nil))
			r := c.Subscribe(&protocol.SubscribeRequest{Channel: "news"})
			if r.Error != nil {
				t.Fatalf("subscribe: %+v", r.Error)
			}
			if _, err := n.Publish("news", []byte(`{"text":"hi"}`), gyre.WithTags(map[string]string{"k": "v"})); err != nil {
				t.Fatal(err)
			}
			pubs := c.WaitPubs("news", 1)
			if string(pubs[0].Data) != `{"text":"hi"}` || pubs[0].Tags["k"] != "v" {
				t.Fatalf("publication %+v", pubs[0])
			}
		})
	})
}

func TestSubscribeErrors(t *testing.T) {
	tests := []struct {
		name    string
		user    string
		channel string
		code    uint32
		typ     int32
	}{
		{"unknown namespace", "42", "nope:x", 102, 0},
		{"namespace without permission", "42", "private:x", 103, 0},
		{"private prefix", "42", "$secret", 103, 0},
		{"user limited channel off", "42", "news#42", 103, 0},
		{"empty channel", "42", "", 102, 0},
		// Subscription types other than a stream (0) are not served.
		{"subscription type 1", "42", "chat:x", 107, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newTestNode(t, chatConfig())
			c := dial(t, url, protocol.TypeJSON)
			c.connect(connToken(t, tt.user, 0, nil))
			r := c.Subscribe(&protocol.SubscribeRequest{Channel: tt.channel, Type: tt.typ})
			if r.Error == nil || r.Error.Code != tt.code {
				t.Fatalf("reply %+v, want error %d", r, tt.code)
			}
		})
	}
}

func TestAlreadySubscribed(t *testing.T) {
	_, url := newTestNode(t, chatConfig())
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "news"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "news"}); r.Error == nil || r.Error.Code != 105 {
		t.Fatalf("reply %+v, want 105", r)
	}
}

func TestChannelLimit(t *testing.T) {
	cfg := chatConfig()
	cfg.ChannelLimit = 2
	_, url := newTestNode(t, cfg)
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	for _, ch := range []string{"a", "b"} {
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch}); r.Error != nil {
			t.Fatal(r.Error)
		}
	}
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "c"}); r.Error == nil || r.Error.Code != 106 {
		t.Fatalf("reply %+v, want 106", r)
	}
}

// TestChannelLimitNegative: a negative ChannelLimit means none (zero means
// the default, 128).
func TestChannelLimitNegative(t *testing.T) {
	cfg := chatConfig()
	cfg.ChannelLimit = -1
	_, url := newTestNode(t, cfg)
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	for i := range 130 {
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: fmt.Sprintf("ch%d", i)}); r.Error != nil {
			t.Fatalf("subscribe %d: %+v", i, r.Error)
		}
	}
}

func TestUserLimitedChannel(t *testing.T) {
	cfg := chatConfig()
	cfg.Channels.WithoutNamespace.AllowUserLimitedChannels = true
	_, url := newTestNode(t, cfg)
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "dialog#41,42"}); r.Error != nil {
		t.Fatalf("own user-limited channel: %+v", r.Error)
	}
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "dialog#41,43"}); r.Error == nil || r.Error.Code != 103 {
		t.Fatalf("other users' channel: %+v, want 103", r)
	}
}

// TestSubscriptionToken: a token for the channel and the user opens a
// channel nothing else opens. What every other token gets is in
// tokens_test.go.
func TestSubscriptionToken(t *testing.T) {
	_, url := newTestNode(t, chatConfig())
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "private:room"}); r.Error == nil || r.Error.Code != 103 {
		t.Fatalf("subscribe without a token: %+v, want 103", r)
	}
	good := connToken(t, "42", time.Hour, map[string]any{"channel": "private:room"})
	if r := c.Subscribe(&protocol.SubscribeRequest{Channel: "private:room", Token: good}); r.Error != nil {
		t.Fatalf("subscribe with token: %+v", r.Error)
	}
}

func TestRecovery(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url := newTestNode(t, b.Config(t, chatConfig()))
			c := dial(t, url, proto)
			c.connect(connToken(t, "42", 0, nil))
			r := c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:r", Recoverable: true})
			if r.Error != nil || !r.Subscribe.Recoverable || r.Subscribe.Epoch == "" {
				t.Fatalf("subscribe: %+v", r)
			}
			if _, err := n.Publish("chat:r", []byte(`{"n":1}`)); err != nil {
				t.Fatal(err)
			}
			first := c.WaitPubs("chat:r", 1)[0]
			epoch := r.Subscribe.Epoch
			c.Conn().Close()

			for i := 2; i <= 4; i++ {
				if _, err := n.Publish("chat:r", []byte(`{"n":`+string(rune('0'+i))+`}`)); err != nil {
					t.Fatal(err)
				}
			}
			c2 := dial(t, url, proto)
			c2.connect(connToken(t, "42", 0, nil))
			r = c2.Subscribe(&protocol.SubscribeRequest{Channel: "chat:r", Recover: true, Offset: first.Offset, Epoch: epoch, Recoverable: true})
			res := r.Subscribe
			if r.Error != nil || !res.Recovered || !res.WasRecovering || len(res.Publications) != 3 {
				t.Fatalf("recover: %+v", r)
			}
			for i, p := range res.Publications {
				if p.Offset != first.Offset+uint64(i)+1 {
					t.Fatalf("publication %d has offset %d", i, p.Offset)
				}
			}
			bad := c2.Subscribe(&protocol.SubscribeRequest{Channel: "chat:other", Recover: true, Offset: 5, Epoch: "gone", Recoverable: true})
			if bad.Error != nil || bad.Subscribe.Recovered || !bad.Subscribe.WasRecovering {
				t.Fatalf("recover with a wrong epoch: %+v", bad)
			}
		})
	})
}

func TestPresenceAndJoinLeave(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			_, url := newTestNode(t, b.Config(t, chatConfig()))
			a := dial(t, url, proto)
			a.connect(connToken(t, "alice", 0, map[string]any{"info": map[string]string{"name": "Alice"}}))
			if r := a.Subscribe(&protocol.SubscribeRequest{Channel: "chat:p"}); r.Error != nil {
				t.Fatal(r.Error)
			}
			b := dial(t, url, proto)
			b.connect(connToken(t, "bob", 0, nil))
			if r := b.Subscribe(&protocol.SubscribeRequest{Channel: "chat:p"}); r.Error != nil {
				t.Fatal(r.Error)
			}
			join := a.WaitPush("join of bob", func(p *protocol.Push) bool { return p.Join != nil && p.Join.Info.User == "bob" })
			if join.Channel != "chat:p" {
				t.Fatalf("join push %+v", join)
			}
			r := a.Call(&protocol.Command{Presence: &protocol.PresenceRequest{Channel: "chat:p"}})
			if r.Error != nil || len(r.Presence.Presence) != 2 {
				t.Fatalf("presence: %+v", r)
			}
			users := map[string]string{}
			for _, ci := range r.Presence.Presence {
				users[ci.User] = string(ci.ConnInfo)
			}
			var info map[string]string
			if err := json.Unmarshal([]byte(users["alice"]), &info); err != nil || info["name"] != "Alice" {
				t.Fatalf("alice's conn info %q", users["alice"])
			}
			st := a.Call(&protocol.Command{PresenceStats: &protocol.PresenceStatsRequest{Channel: "chat:p"}})
			if st.Error != nil || st.PresenceStats.NumClients != 2 || st.PresenceStats.NumUsers != 2 {
				t.Fatalf("presence stats: %+v", st)
			}
			b.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: "chat:p"}})
			a.WaitPush("leave of bob", func(p *protocol.Push) bool { return p.Leave != nil && p.Leave.Info.User == "bob" })
			st = a.Call(&protocol.Command{PresenceStats: &protocol.PresenceStatsRequest{Channel: "chat:p"}})
			if st.PresenceStats.NumClients != 1 {
				t.Fatalf("presence stats after leave: %+v", st)
			}
		})
	})
}

func TestClientCommandPermissions(t *testing.T) {
	_, url := newTestNode(t, chatConfig())
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	// Not subscribed: subscriber-only permissions refuse.
	for name, cmd := range map[string]*protocol.Command{
		"publish":  {Publish: &protocol.PublishRequest{Channel: "chat:x", Data: []byte(`{}`)}},
		"presence": {Presence: &protocol.PresenceRequest{Channel: "chat:x"}},
		"history":  {History: &protocol.HistoryRequest{Channel: "chat:x"}},
	} {
		if r := c.Call(cmd); r.Error == nil || r.Error.Code != 103 {
			t.Errorf("%s: %+v, want 103", name, r)
		}
	}
	// Features off in the namespace: 108.
	if r := c.Call(&protocol.Command{Presence: &protocol.PresenceRequest{Channel: "news"}}); r.Error == nil || r.Error.Code != 108 {
		t.Errorf("presence without presence: %+v, want 108", r)
	}
	if r := c.Call(&protocol.Command{History: &protocol.HistoryRequest{Channel: "news"}}); r.Error == nil || r.Error.Code != 108 {
		t.Errorf("history without history: %+v, want 108", r)
	}
	// RPC without a handler is a feature the server does not offer, not a
	// method the client got wrong (centrifuge-js's own tests expect 108).
	if r := c.Call(&protocol.Command{Rpc: &protocol.RPCRequest{Method: "x"}}); r.Error == nil || r.Error.Code != 108 {
		t.Errorf("rpc without handler: %+v, want 108", r)
	}
	// Subscribed: allowed.
	c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:x"})
	if r := c.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: "chat:x", Data: []byte(`{"a":1}`)}}); r.Error != nil {
		t.Errorf("publish as subscriber: %+v", r.Error)
	}
	c.WaitPubs("chat:x", 1)
	r := c.Call(&protocol.Command{History: &protocol.HistoryRequest{Channel: "chat:x", Limit: 10}})
	if r.Error != nil || len(r.History.Publications) != 1 || r.History.Publications[0].Info.User != "42" {
		t.Errorf("history as subscriber: %+v", r)
	}
}

func TestRPCAndSend(t *testing.T) {
	_, url := newTestNodeWith(t, chatConfig(), func(n *gyre.Node) {
		n.OnRPC(func(_ context.Context, c *gyre.Client, e gyre.RPCEvent) (gyre.RPCReply, error) {
			if e.Method == "fail" {
				return gyre.RPCReply{}, &gyre.Error{Code: 1001, Message: "app error"}
			}
			return gyre.RPCReply{Data: []byte(`{"echo":` + string(e.Data) + `}`)}, nil
		})
	})
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	r := c.Call(&protocol.Command{Rpc: &protocol.RPCRequest{Method: "echo", Data: []byte(`[1,2]`)}})
	if r.Error != nil || string(r.Rpc.Data) != `{"echo":[1,2]}` {
		t.Fatalf("rpc: %+v", r)
	}
	r = c.Call(&protocol.Command{Rpc: &protocol.RPCRequest{Method: "fail"}})
	if r.Error == nil || r.Error.Code != 1001 {
		t.Fatalf("rpc app error: %+v", r)
	}
}
