package api_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/api"
)

func TestSubscribeAndUnsubscribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c, _ := e.dial("bob")
	other, _ := e.dial("carol")

	e.call("subscribe", `{"user":"bob","channel":"hist:srv"}`, nil)
	c.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.Subscribe != nil && p.Channel == "hist:srv" })
	e.call("publish", `{"channel":"hist:srv","data":{"x":1}}`, nil)
	jsonEq(t, c.WaitPubs("hist:srv", 1)[0].Data, `{"x":1}`)

	// Subscribing again is not an error: the user already is.
	e.call("subscribe", `{"user":"bob","channel":"hist:srv"}`, nil)

	e.call("unsubscribe", `{"user":"bob","channel":"hist:srv"}`, nil)
	u := c.WaitPush("unsubscribe push", func(p *protocol.Push) bool { return p.Unsubscribe != nil && p.Channel == "hist:srv" })
	if u.Unsubscribe.Code != 2000 {
		t.Fatalf("unsubscribe code %d, want 2000", u.Unsubscribe.Code)
	}
	var ch channelsResult
	e.call("channels", `{}`, &ch)
	if _, ok := ch.Channels["hist:srv"]; ok {
		t.Fatalf("hist:srv still has subscribers: %+v", ch)
	}
	n := len(other.Pushes())
	if n != 0 {
		t.Fatalf("another user got %d pushes", n)
	}

	tests := []struct {
		name string
		body string
		want uint32
	}{
		{"no channel", `{"user":"bob"}`, 107},
		{"no user nor client", `{"channel":"a"}`, 107},
		{"unknown namespace", `{"user":"bob","channel":"nope:a"}`, 102},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.callErr("subscribe", tt.body); got != tt.want {
				t.Fatalf("error %d, want %d", got, tt.want)
			}
		})
	}
	if got := e.callErr("unsubscribe", `{"user":"bob"}`); got != 107 {
		t.Fatalf("unsubscribe without channel: error %d, want 107", got)
	}
}

func TestSubscribeOneClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c1, r1 := e.dial("dan")
	c2, _ := e.dial("dan")
	e.call("subscribe", `{"user":"dan","client":"`+r1.Client+`","channel":"one"}`, nil)
	c1.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.Subscribe != nil })
	var ps presenceStats
	e.call("presence_stats", `{"channel":"one"}`, &ps)
	if ps.NumClients != 1 {
		t.Fatalf("%d clients in channel, want only the chosen one", ps.NumClients)
	}
	if n := len(c2.Pushes()); n != 0 {
		t.Fatalf("the other client got %d pushes", n)
	}
}

func TestDisconnect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		wantCode   int
		wantReason string
	}{
		{"default", `{"user":"erin"}`, 3503, "force disconnect"},
		{"custom", `{"user":"erin","disconnect":{"code":4001,"reason":"bye"}}`, 4001, "bye"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, api.Config{})
			c, _ := e.dial("erin")
			e.call("disconnect", tt.body, nil)
			ce := c.WaitClose()
			if int(ce.Code) != tt.wantCode || ce.Reason != tt.wantReason {
				t.Fatalf("closed with %d %q, want %d %q", ce.Code, ce.Reason, tt.wantCode, tt.wantReason)
			}
		})
	}
	t.Run("whitelist", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, api.Config{})
		keep, r := e.dial("erin")
		gone, _ := e.dial("erin")
		e.call("disconnect", `{"user":"erin","whitelist":["`+r.Client+`"]}`, nil)
		gone.WaitClose()
		keep.MustSubscribe("still-here")
	})
	t.Run("bad code", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, api.Config{})
		if got := e.callErr("disconnect", `{"user":"erin","disconnect":{"code":1000}}`); got != 107 {
			t.Fatalf("error %d, want 107", got)
		}
	})
}

func TestRefresh(t *testing.T) {
	t.Parallel()
	t.Run("expire_at", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, api.Config{})
		c, _ := e.dial("fay")
		at := time.Now().Add(time.Hour).Unix()
		e.call("refresh", `{"user":"fay","expire_at":`+strconv.FormatInt(at, 10)+`}`, nil)
		p := c.WaitPush("refresh push", func(p *protocol.Push) bool { return p.Refresh != nil })
		if !p.Refresh.Expires || p.Refresh.Ttl == 0 || p.Refresh.Ttl > 3600 {
			t.Fatalf("refresh push %+v", p.Refresh)
		}
	})
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, api.Config{})
		c, _ := e.dial("fay")
		e.call("refresh", `{"user":"fay","expired":true}`, nil)
		if ce := c.WaitClose(); ce.Code != 3005 {
			t.Fatalf("closed with %d %q, want 3005", ce.Code, ce.Reason)
		}
	})
}
