package sdk

import (
	"testing"

	"github.com/centrifugal/centrifuge-go"
)

func TestJoinPresenceStatsLeave(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		alice := newClient(t, cd, clientOptions{user: "alice"})
		bob := newClient(t, cd, clientOptions{user: "bob"})
		aliceID := alice.connect(t).ClientID
		bobID := bob.connect(t).ClientID

		ch := channel("chat:room-")
		subA := newSub(t, alice, ch, centrifuge.SubscriptionConfig{})
		subA.subscribe(t)
		subB := newSub(t, bob, ch, centrifuge.SubscriptionConfig{})
		subB.subscribe(t)

		join := subA.joins.wait(t, 0, func(ev centrifuge.JoinEvent) bool { return ev.User == "bob" })
		if join.Client != bobID {
			t.Fatalf("join of bob names client %s, want %s", join.Client, bobID)
		}

		presence, err := subA.Presence(ctx(t))
		if err != nil {
			t.Fatalf("presence: %v", err)
		}
		if len(presence.Clients) != 2 || presence.Clients[aliceID].User != "alice" || presence.Clients[bobID].User != "bob" {
			t.Fatalf("presence %+v, want alice as %s and bob as %s", presence.Clients, aliceID, bobID)
		}
		for id, info := range presence.Clients {
			if info.Client != id {
				t.Errorf("presence entry %s names client %s", id, info.Client)
			}
		}

		stats, err := subA.PresenceStats(ctx(t))
		if err != nil {
			t.Fatalf("presence stats: %v", err)
		}
		if stats.NumClients != 2 || stats.NumUsers != 2 {
			t.Fatalf("presence stats %+v, want 2 clients of 2 users", stats)
		}

		if err := subB.Unsubscribe(); err != nil {
			t.Fatalf("unsubscribe: %v", err)
		}
		leave := subA.leaves.wait(t, 0, func(ev centrifuge.LeaveEvent) bool { return ev.User == "bob" })
		if leave.Client != bobID {
			t.Fatalf("leave of bob names client %s, want %s", leave.Client, bobID)
		}
		stats, err = subA.PresenceStats(ctx(t))
		if err != nil {
			t.Fatalf("presence stats: %v", err)
		}
		if stats.NumClients != 1 || stats.NumUsers != 1 {
			t.Fatalf("presence stats after bob left %+v, want 1 client of 1 user", stats)
		}
	})
}
