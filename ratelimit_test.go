package gyre_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// fakeClock is the rate limiter's clock in these tests: time moves only
// when a test says so.
type fakeClock struct{ now atomic.Int64 }

func (c *fakeClock) Now() time.Duration      { return time.Duration(c.now.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.now.Add(int64(d)) }

func perSecond(rate int) []gyre.RateBucket {
	return []gyre.RateBucket{{Interval: time.Second, Rate: rate}}
}

func rateLimitedNode(t *testing.T, rl gyre.RateLimitConfig) (string, *fakeClock) {
	url, clock, _ := rateLimitedNodeWith(t, rl)
	return url, clock
}

// rateLimitedNodeWith also returns the IDs of disconnected clients, in
// order.
func rateLimitedNodeWith(t *testing.T, rl gyre.RateLimitConfig) (string, *fakeClock, <-chan string) {
	t.Helper()
	clock := &fakeClock{}
	rl.Now = clock.Now
	cfg := chatConfig()
	cfg.RateLimit = rl
	gone := make(chan string, 16)
	_, url := newTestNodeWith(t, cfg, func(n *gyre.Node) {
		n.OnDisconnect(func(c *gyre.Client, _ gyre.DisconnectEvent) { gone <- c.ID() })
	})
	return url, clock, gone
}

func publishCmd() *protocol.Command {
	return &protocol.Command{Publish: &protocol.PublishRequest{Channel: "chat:room", Data: []byte(`{}`)}}
}

func historyCmd() *protocol.Command {
	return &protocol.Command{History: &protocol.HistoryRequest{Channel: "chat:room"}}
}

// wantCode checks a reply's error code; 0 means no error.
func wantCode(t *testing.T, what string, r *protocol.Reply, code uint32) {
	t.Helper()
	var got uint32
	if r.Error != nil {
		got = r.Error.Code
	}
	if got != code {
		t.Fatalf("%s: error %+v, want code %d", what, r.Error, code)
	}
}

func TestRateLimitPerConnection(t *testing.T) {
	url, clock := rateLimitedNode(t, gyre.RateLimitConfig{Client: gyre.CommandRates{Publish: perSecond(2)}})
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	c.MustSubscribe("chat:room")
	wantCode(t, "publish 1", c.Call(publishCmd()), 0)
	wantCode(t, "publish 2", c.Call(publishCmd()), 0)
	wantCode(t, "publish 3", c.Call(publishCmd()), 111)
	// Other kinds have no buckets: not limited.
	for i := range 5 {
		wantCode(t, "history "+string(rune('0'+i)), c.Call(historyCmd()), 0)
	}
	// Half a second refills one of two tokens per second.
	clock.advance(500 * time.Millisecond)
	wantCode(t, "publish after refill", c.Call(publishCmd()), 0)
	wantCode(t, "publish after the refilled token", c.Call(publishCmd()), 111)
	// A long pause refills no more than the bucket holds.
	clock.advance(time.Hour)
	wantCode(t, "publish a", c.Call(publishCmd()), 0)
	wantCode(t, "publish b", c.Call(publishCmd()), 0)
	wantCode(t, "publish c", c.Call(publishCmd()), 111)

	// Another connection of the same user has its own buckets.
	other := dial(t, url, protocol.TypeJSON)
	other.connect(connToken(t, "42", 0, nil))
	other.MustSubscribe("chat:room")
	wantCode(t, "other connection", other.Call(publishCmd()), 0)
}

func TestRateLimitPerUser(t *testing.T) {
	url, clock, gone := rateLimitedNodeWith(t, gyre.RateLimitConfig{User: gyre.CommandRates{History: perSecond(3)}})
	a := dial(t, url, protocol.TypeJSON)
	a.connect(connToken(t, "42", 0, nil))
	b := dial(t, url, protocol.TypeJSON)
	b.connect(connToken(t, "42", 0, nil))
	stranger := dial(t, url, protocol.TypeJSON)
	stranger.connect(connToken(t, "7", 0, nil))
	for _, c := range []*testClient{a, b, stranger} {
		c.MustSubscribe("chat:room")
	}
	wantCode(t, "a 1", a.Call(historyCmd()), 0)
	wantCode(t, "b 1", b.Call(historyCmd()), 0)
	wantCode(t, "a 2", a.Call(historyCmd()), 0)
	wantCode(t, "b over the user's limit", b.Call(historyCmd()), 111)
	wantCode(t, "a over the user's limit", a.Call(historyCmd()), 111)
	wantCode(t, "another user", stranger.Call(historyCmd()), 0)
	clock.advance(400 * time.Millisecond) // 1.2 tokens
	wantCode(t, "b after refill", b.Call(historyCmd()), 0)
	wantCode(t, "a after b took the token", a.Call(historyCmd()), 111)

	// When the user's last connection is gone, so are its buckets.
	// The node releases them before it reports the disconnect.
	a.Close()
	b.Close()
	<-gone
	<-gone
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	c.MustSubscribe("chat:room")
	wantCode(t, "the user reconnected", c.Call(historyCmd()), 0)
}

func TestRateLimitDefaultAndTotal(t *testing.T) {
	url, _ := rateLimitedNode(t, gyre.RateLimitConfig{Client: gyre.CommandRates{
		Default: perSecond(1),
		Total:   perSecond(3),
	}})
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	wantCode(t, "subscribe", c.Subscribe(&protocol.SubscribeRequest{Channel: "chat:room"}), 0) // total 2 left
	wantCode(t, "publish", c.Call(publishCmd()), 0)                                            // total 1 left
	wantCode(t, "second publish: default bucket empty", c.Call(publishCmd()), 111)
	// A refused command takes no token from Total: the history passes.
	wantCode(t, "history", c.Call(historyCmd()), 0) // total 0 left
	// Ping has no bucket of its own but counts in Total.
	wantCode(t, "ping over total", c.Call(&protocol.Command{Ping: &protocol.PingRequest{}}), 111)
}

func TestRateLimitDisconnect(t *testing.T) {
	url, _ := rateLimitedNode(t, gyre.RateLimitConfig{Client: gyre.CommandRates{RPC: perSecond(1)}, Disconnect: true})
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", 0, nil))
	rpc := func() *protocol.Command { return &protocol.Command{Rpc: &protocol.RPCRequest{Method: "m"}} }
	if r, closed := c.TryCall(rpc()); closed != nil || r.Error == nil || r.Error.Code == 111 {
		t.Fatalf("first rpc: %+v %v, want the usual answer (no handler)", r, closed)
	}
	if r, closed := c.TryCall(rpc()); closed == nil || closed.Code != 3013 {
		t.Fatalf("second rpc: reply %+v, close %v; want close 3013", r, closed)
	}
}

func TestRateLimitConfigRefused(t *testing.T) {
	for _, b := range []gyre.RateBucket{{Interval: 0, Rate: 1}, {Interval: time.Second, Rate: 0}, {Interval: time.Second, Rate: -1}} {
		_, err := gyre.NewNode(gyre.Config{RateLimit: gyre.RateLimitConfig{User: gyre.CommandRates{Presence: []gyre.RateBucket{b}}}})
		if err == nil {
			t.Errorf("bucket %+v accepted", b)
		}
	}
}
