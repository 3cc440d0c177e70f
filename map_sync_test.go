package gyre_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
)

// TestMapSyncInPages: a subscriber pages through 2,500 keys 100 at a
// time and goes live with all of them, in every mode; what is written
// afterwards reaches it live.
func TestMapSyncInPages(t *testing.T) {
	const keys = 2500
	eachMapEngine(t, mapConfig(), nil, func(t *testing.T, n *gyre.Node, c *testClient, _ string) {
		for _, m := range mapModes {
			t.Run(m.ns, func(t *testing.T) {
				ch := m.ns + ":big-" + c.Protocol().String()
				for k := range keys {
					mapPut(t, n, ch, "k"+strconv.Itoa(k), keyData(k, 0))
				}
				pages := 0
				v := mapSync(t, c, ch, flowOptions{limit: 100, between: func(*protocol.SubscribeResult) { pages++ }})
				if pages < keys/100-1 {
					t.Errorf("went live after %d pages of 100, want about %d", pages, keys/100)
				}
				want, _ := brokerState(t, n, ch)
				sameEntries(t, "after the sync", v.entries, want)
				if got := v.live.Recoverable; got != m.mode.HasStream() {
					t.Errorf("recoverable %v in mode %s", got, m.mode)
				}
				mapPut(t, n, ch, "k7", keyData(7, 1))
				mapDel(t, n, ch, "k8")
				mapPut(t, n, ch, "new", keyData(-1, 0))
				v.waitLive(t, c, 3)
				want, _ = brokerState(t, n, ch)
				sameEntries(t, "after live changes", v.entries, want)
			})
		}
	})
}

// TestMapUpdatesDuringPaging: keys written, rewritten and removed while
// a subscriber pages through the state, and after, leave it with exactly
// the state the broker has, each change once and in order.
func TestMapUpdatesDuringPaging(t *testing.T) {
	const keys = 1000
	eachMapEngine(t, mapConfig(), nil, func(t *testing.T, n *gyre.Node, c *testClient, _ string) {
		for _, m := range mapModes {
			t.Run(m.ns, func(t *testing.T) {
				ch := m.ns + ":busy-" + c.Protocol().String()
				for k := range keys {
					mapPut(t, n, ch, "k"+strconv.Itoa(k), keyData(k, 0))
				}
				round := 0
				change := func(*protocol.SubscribeResult) {
					round++
					// Keys before, at and after the pages read so far.
					for _, k := range []int{round, keys / 2, keys - round} {
						mapPut(t, n, ch, "k"+strconv.Itoa(k), keyData(k, round))
					}
					mapDel(t, n, ch, "k"+strconv.Itoa(keys/3+round))
					mapPut(t, n, ch, fmt.Sprintf("new%d", round), keyData(-round, round))
				}
				v := mapSync(t, c, ch, flowOptions{limit: 10, between: change})
				if round < 10 {
					t.Fatalf("went live after %d pages: the state was not paged through", round)
				}
				for range 5 {
					change(nil)
				}
				v.settle(t, n, c)
				want, _ := brokerState(t, n, ch)
				sameEntries(t, "after paging under changes", v.entries, want)
			})
		}
	})
}

// TestMapStreamPhase: when the stream runs more than a page ahead of the
// state's position while the subscriber pages, the subscriber catches up
// in stream pages (phase 1) before it goes live.
func TestMapStreamPhase(t *testing.T) {
	eachMapEngine(t, mapConfig(), nil, func(t *testing.T, n *gyre.Node, c *testClient, _ string) {
		for _, m := range mapModes[1:] {
			t.Run(m.ns, func(t *testing.T) {
				ch := m.ns + ":ahead-" + c.Protocol().String()
				for k := range 1000 {
					mapPut(t, n, ch, "k"+strconv.Itoa(k), keyData(k, 0))
				}
				first := true
				v := mapSync(t, c, ch, flowOptions{limit: 10, between: func(res *protocol.SubscribeResult) {
					if first {
						first = false
						for i := range 45 {
							mapPut(t, n, ch, "k"+strconv.Itoa(i%40), keyData(i%40, i+1))
						}
					}
				}})
				stream := 0
				for _, p := range v.phases {
					if p == phaseStream {
						stream++
					}
				}
				if stream < 2 || v.phases[len(v.phases)-1] != phaseLive {
					t.Errorf("phases %v: want state pages, stream pages, live", v.phases)
				}
				want, top := brokerState(t, n, ch)
				sameEntries(t, "after the stream phase", v.entries, want)
				if v.live.Offset != top.Offset || v.live.Epoch != top.Epoch {
					t.Errorf("live at %d/%s, the stream at %d/%s", v.live.Offset, v.live.Epoch, top.Offset, top.Epoch)
				}
			})
		}
	})
}
