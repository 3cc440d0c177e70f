package gyre_test

import (
	"context"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// TestClusterChannels: the channels of every node sharing a Redis, with
// their subscribers summed, matching the pattern. The memory engine has
// no second node.
func TestClusterChannels(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		cfg := gyre.Config{Channels: gyre.ChannelConfig{WithoutNamespace: gyre.ChannelOptions{AllowSubscribeForClient: true}}}
		a, urlA := newTestNode(t, b.Same(t, cfg, "clusterchannels"))
		nb, urlB := newTestNode(t, b.Same(t, cfg, "clusterchannels"))
		// node-b announced itself when it started; node-a has heard of it
		// once a's info lists two nodes.
		deadline := time.Now().Add(10 * time.Second)
		for len(a.Info()) < 2 {
			if time.Now().After(deadline) {
				t.Fatal("node a never heard of node b")
			}
			time.Sleep(10 * time.Millisecond)
		}
		subscribe := func(url, user string, channels ...string) {
			c := dial(t, url, protocol.TypeJSON)
			c.connect(connToken(t, user, time.Hour, nil))
			for _, ch := range channels {
				c.MustSubscribe(ch)
			}
		}
		subscribe(urlA, "u1", "chat.1", "news")
		subscribe(urlB, "u2", "chat.1", "chat.2")
		subscribe(urlB, "u3", "chat.1")
		got, err := a.ClusterChannels(context.Background(), "chat.*")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"chat.1": 3, "chat.2": 1}
		if len(got) != len(want) {
			t.Fatalf("channels %v, want %v", got, want)
		}
		for ch, num := range want {
			if got[ch].NumClients != num {
				t.Fatalf("channels %v, want %v", got, want)
			}
		}
		all, err := a.ClusterChannels(context.Background(), "")
		if err != nil || len(all) != 3 {
			t.Fatalf("all channels %v %v", all, err)
		}
		if _, err := a.ClusterChannels(context.Background(), "["); err == nil {
			t.Fatal("bad pattern accepted")
		}
		// A node that stopped answering is left out once ctx ends.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := nb.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancelShort()
		got, err = a.ClusterChannels(short, "chat.*")
		if err != nil || len(got) != 1 || got["chat.1"].NumClients != 1 {
			t.Fatalf("channels without node b: %v %v", got, err)
		}
	})
}
