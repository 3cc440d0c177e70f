package sdk

import (
	"testing"

	"github.com/centrifugal/centrifuge-go"
)

// TestChannelCompaction: centrifuge-go offers channel compaction on every
// subscribe; in a namespace that allows it the server's pushes then carry a
// number instead of the channel name. Publications, joins and leaves reach
// the right subscription, also after it subscribes again (with a new number)
// and beside a second compacted channel.
func TestChannelCompaction(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		alice := newClient(t, cd, clientOptions{user: "alice"})
		bob := newClient(t, cd, clientOptions{user: "bob"})
		alice.connect(t)
		bob.connect(t)

		ch, other := channel("compact:a-"), channel("compact:b-")
		subA := newSub(t, alice, ch, centrifuge.SubscriptionConfig{})
		subA.subscribe(t)
		subOther := newSub(t, alice, other, centrifuge.SubscriptionConfig{})
		subOther.subscribe(t)
		subB := newSub(t, bob, ch, centrifuge.SubscriptionConfig{})
		subB.subscribe(t)
		subA.joins.wait(t, 0, func(ev centrifuge.JoinEvent) bool { return ev.User == "bob" })

		publish(t, ch, map[string]any{"n": 1})
		publish(t, other, map[string]any{"n": 2})
		sameJSON(t, "publication in "+ch, subA.pubs.wait(t, 0, nil).Data, map[string]any{"n": 1})
		sameJSON(t, "publication in "+other, subOther.pubs.wait(t, 0, nil).Data, map[string]any{"n": 2})
		sameJSON(t, "bob's publication", subB.pubs.wait(t, 0, nil).Data, map[string]any{"n": 1})

		subB.unsubscribe(t)
		subA.leaves.wait(t, 0, func(ev centrifuge.LeaveEvent) bool { return ev.User == "bob" })

		mark := subA.pubs.mark()
		subA.unsubscribe(t)
		subA.subscribe(t)
		publish(t, ch, map[string]any{"n": 3})
		sameJSON(t, "publication after subscribing again", subA.pubs.wait(t, mark, nil).Data, map[string]any{"n": 3})
		if n := len(subOther.pubs.since(0)); n != 1 {
			t.Fatalf("%s got %d publications, want 1: pushes went to the wrong subscription", other, n)
		}
	})
}
