package gyre

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// listed returns l's subscribers in order.
func listed(l *subList) []*subscription { return slices.Collect(l.all()) }

// checkSubList fails unless l holds exactly want (in any order), every
// chunk but the last is full, and each subscriber's hubPos is its place.
func checkSubList(t *testing.T, l *subList, want map[*subscription]bool) {
	t.Helper()
	got := listed(l)
	if len(got) != len(want) || l.len() != len(want) {
		t.Fatalf("%d listed, len %d, want %d", len(got), l.len(), len(want))
	}
	for i, s := range got {
		if !want[s] {
			t.Fatalf("position %d holds a subscriber that left or never came", i)
		}
		if int(s.hubPos) != i || l.at(i) != s {
			t.Fatalf("subscriber at %d has hubPos %d", i, s.hubPos)
		}
	}
	for c, chunk := range l.chunks {
		if c < len(l.chunks)-1 && len(chunk) != subChunk {
			t.Fatalf("chunk %d of %d holds %d, want a full %d", c, len(l.chunks), len(chunk), subChunk)
		}
		if len(chunk) == 0 {
			t.Fatalf("chunk %d is empty", c)
		}
	}
}

// TestHubSubscriberList adds and removes subscribers of one channel at
// random across several chunks and checks the list after every change,
// and that snapshots taken earlier (what a broadcast in progress holds)
// never change.
func TestHubSubscriberList(t *testing.T) {
	h := newHub()
	rng := rand.New(rand.NewPCG(1, 2))
	in := map[*subscription]bool{}
	var members []*subscription
	type snapshot struct {
		list *subList
		subs []*subscription
	}
	var snaps []snapshot
	for step := range 6000 {
		// Grow to about three chunks, then mostly shrink, then grow again.
		add := len(members) == 0 || rng.IntN(100) < 60
		if step > 2500 && step < 4500 {
			add = len(members) == 0 || rng.IntN(100) < 30
		}
		if add {
			s := &subscription{channel: "crowd"}
			first := h.addSubscription(s)
			if first != (len(members) == 0) {
				t.Fatalf("step %d: first %v with %d members", step, first, len(members))
			}
			in[s] = true
			members = append(members, s)
		} else {
			i := rng.IntN(len(members))
			s := members[i]
			members = slices.Delete(members, i, i+1)
			delete(in, s)
			last := h.removeSubscription(s)
			if last != (len(members) == 0) {
				t.Fatalf("step %d: last %v with %d members left", step, last, len(members))
			}
			if h.removeSubscription(s) {
				t.Fatalf("step %d: a second removal reported the last subscriber", step)
			}
		}
		l := h.subscribers("crowd")
		checkSubList(t, l, in)
		if step%97 == 0 {
			snaps = append(snaps, snapshot{l, listed(l)})
		}
	}
	for i, sn := range snaps {
		if !slices.Equal(listed(sn.list), sn.subs) {
			t.Fatalf("snapshot %d changed after it was taken", i)
		}
	}
	if h.numSubscribers("other") != 0 || h.subscribers("other").len() != 0 {
		t.Fatal("a channel nobody joined has subscribers")
	}
}

// TestHubRemoveStranger: removing a subscription that is not in the list
// (never added, or of another channel with the same position) changes
// nothing.
func TestHubRemoveStranger(t *testing.T) {
	h := newHub()
	a := &subscription{channel: "c"}
	h.addSubscription(a)
	stranger := &subscription{channel: "c"} // hubPos 0, like a
	if h.removeSubscription(stranger) {
		t.Fatal("removing a stranger emptied the channel")
	}
	if got := listed(h.subscribers("c")); len(got) != 1 || got[0] != a {
		t.Fatalf("list %v after removing a stranger", got)
	}
}

// TestHubChannelIDs: a channel's number is the same for every subscriber
// while it has any here, survives others coming and going, and is never
// given again, also to the same channel once it emptied.
func TestHubChannelIDs(t *testing.T) {
	h := newHub()
	compact := func(channel string) *subscription { return &subscription{channel: channel, shape: shapeCompact} }
	a, b, other := compact("c"), compact("c"), compact("d")
	h.addSubscription(a)
	h.addSubscription(&subscription{channel: "c"}) // without compaction: no number of its own
	h.addSubscription(b)
	h.addSubscription(other)
	if a.channelID == 0 || b.channelID != a.channelID || h.subscribers("c").id != a.channelID {
		t.Fatalf("numbers of c: %d, %d, list %d; want one number", a.channelID, b.channelID, h.subscribers("c").id)
	}
	if other.channelID == 0 || other.channelID == a.channelID {
		t.Fatalf("d numbered %d, c %d: want two numbers", other.channelID, a.channelID)
	}
	h.removeSubscription(a)
	if h.subscribers("c").id != b.channelID {
		t.Fatal("the channel's number changed while it kept subscribers")
	}
	for _, s := range listed(h.subscribers("c")) {
		h.removeSubscription(s)
	}
	again := compact("c")
	h.addSubscription(again)
	if again.channelID == b.channelID || again.channelID == other.channelID {
		t.Fatalf("c subscribed anew got %d, a number given before", again.channelID)
	}
}
