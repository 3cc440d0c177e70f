package gyre_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// TestMapRecovery: a subscriber that comes back with its position
// catches up from the stream (recovered) in the modes with one; in the
// ephemeral mode, and with a position of another epoch, it is told with
// 112 to load the state again.
func TestMapRecovery(t *testing.T) {
	eachMapEngine(t, mapConfig(), nil, func(t *testing.T, n *gyre.Node, c *testClient, url string) {
		for _, m := range mapModes {
			t.Run(m.ns, func(t *testing.T) {
				ch := m.ns + ":recover-" + c.Protocol().String()
				for k := range 20 {
					mapPut(t, n, ch, "k"+strconv.Itoa(k), keyData(k, 0))
				}
				v := mapSync(t, c, ch, flowOptions{})
				// Away: the subscriber's connection is gone while the map
				// changes.
				mapPut(t, n, ch, "k1", keyData(1, 1))
				mapDel(t, n, ch, "k2")
				mapPut(t, n, ch, "k20", keyData(20, 0))

				back := dial(t, url, c.Protocol())
				back.connect(connToken(t, "u1", 0, nil))
				req := &protocol.SubscribeRequest{Channel: ch, Type: typeMap, Phase: phaseStream, Recover: true,
					Offset: v.live.Offset, Epoch: v.live.Epoch}
				r := back.Subscribe(req)
				if !m.mode.HasStream() {
					if r.Error == nil || r.Error.Code != 112 {
						t.Fatalf("recovery without a stream: %+v, want error 112", r)
					}
					// What the SDK does then: the state from scratch.
					w := mapSync(t, back, ch, flowOptions{})
					want, _ := brokerState(t, n, ch)
					sameEntries(t, "resynced", w.entries, want)
					return
				}
				if r.Error != nil {
					t.Fatalf("recovery: error %d %s", r.Error.Code, r.Error.Message)
				}
				res := r.Subscribe
				if res.Phase != phaseLive || !res.Recovered || !res.WasRecovering || !res.Recoverable {
					t.Fatalf("recovery result phase %d recovered %v was_recovering %v recoverable %v", res.Phase, res.Recovered, res.WasRecovering, res.Recoverable)
				}
				if len(res.Publications) != 3 || res.Publications[0].Offset != v.live.Offset+1 || !res.Publications[1].Removed {
					t.Fatalf("recovered %v, want the 3 changes after %d", res.Publications, v.live.Offset)
				}
				v.applyChanges(t, back, res.Publications, res.Delta)
				want, top := brokerState(t, n, ch)
				sameEntries(t, "recovered", v.entries, want)
				if res.Offset != top.Offset || res.Epoch != top.Epoch {
					t.Errorf("recovered to %d/%s, the stream is at %d/%s", res.Offset, res.Epoch, top.Offset, top.Epoch)
				}

				// A position of another epoch: the channel was cleared
				// (and written again) meanwhile.
				if err := n.MapClear(context.Background(), ch); err != nil {
					t.Fatal(err)
				}
				mapPut(t, n, ch, "k1", keyData(1, 2))
				later := dial(t, url, c.Protocol())
				later.connect(connToken(t, "u1", 0, nil))
				req.Offset, req.Epoch = res.Offset, res.Epoch
				if r := later.Subscribe(req); r.Error == nil || r.Error.Code != 112 {
					t.Fatalf("recovery into another epoch: %+v, want error 112", r)
				}
			})
		}
	})
}

// TestMapClearResyncs: clearing a map channel unsubscribes its
// subscribers with 2500, so that they load the new state.
func TestMapClearResyncs(t *testing.T) {
	eachMapEngine(t, mapConfig(), nil, func(t *testing.T, n *gyre.Node, c *testClient, _ string) {
		ch := "per:clear-" + c.Protocol().String()
		mapPut(t, n, ch, "a", `{}`)
		mapSync(t, c, ch, flowOptions{})
		if err := n.MapClear(context.Background(), ch); err != nil {
			t.Fatal(err)
		}
		c.WaitPush("unsubscribe 2500", func(p *protocol.Push) bool {
			return p.Channel == ch && p.Unsubscribe != nil && p.Unsubscribe.Code == gyre.UnsubscribeCodeInsufficientState
		})
		v := mapSync(t, c, ch, flowOptions{})
		if len(v.entries) != 0 {
			t.Fatalf("after clear: %v", v.entries)
		}
	})
}

// TestMapSubscriptionLost: when the MapBroker's pub/sub is interrupted
// (Redis restarts), changes may have been missed: every map subscriber
// of the channels is unsubscribed with 2500 and loads the state again,
// whatever its mode.
func TestMapSubscriptionLost(t *testing.T) {
	srv := redistest.Start(t) // restarted below: not a shared one
	n, url := newTestNode(t, enginetest.OnRedis(t, mapConfig(), redis.Config{Addresses: []string{srv.Addr}}))
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "u1", 0, nil))
	for _, m := range mapModes {
		mapPut(t, n, m.ns+":lost", "k", `{}`)
		mapSync(t, c, m.ns+":lost", flowOptions{})
	}
	srv.Kill()
	srv.Restart()
	for _, m := range mapModes {
		c.WaitPush("unsubscribe 2500 from "+m.ns+":lost", func(p *protocol.Push) bool {
			return p.Channel == m.ns+":lost" && p.Unsubscribe != nil && p.Unsubscribe.Code == gyre.UnsubscribeCodeInsufficientState
		})
	}
	waitFor(t, "the map broker back", func() bool {
		_, err := n.MapPublish(context.Background(), "per:lost", "after", gyre.MapPublishOptions{Data: []byte(`{}`)})
		return err == nil
	})
	v := mapSync(t, c, "per:lost", flowOptions{})
	want, _ := brokerState(t, n, "per:lost")
	sameEntries(t, "after the restart", v.entries, want)
}
