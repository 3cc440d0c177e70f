package gyre_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// occupancyConfig has a namespace "room" with channel state events and
// user status events on, with short delays.
func occupancyConfig() gyre.Config {
	cfg := chatConfig()
	cfg.Channels.Namespaces = append(cfg.Channels.Namespaces,
		gyre.Namespace{Name: "room", ChannelOptions: gyre.ChannelOptions{AllowSubscribeForClient: true, StateEvents: true}})
	cfg.UserStatusEvents = true
	cfg.OccupancyOptions = broker.OccupancyOptions{ChannelDelay: 300 * time.Millisecond, UserDelay: 300 * time.Millisecond}
	return cfg
}

// occupancyLog records the events the handlers of one cluster's nodes
// get, with the node that got each.
type occupancyLog struct {
	mu     sync.Mutex
	events []occupancySeen
}

type occupancySeen struct {
	node string
	broker.OccupancyEvent
}

// handler is the OnOccupancy handler of the node called name.
func (l *occupancyLog) handler(name string) gyre.OccupancyHandlerFunc {
	return func(_ context.Context, events []broker.OccupancyEvent) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, e := range events {
			l.events = append(l.events, occupancySeen{node: name, OccupancyEvent: e})
		}
		return nil
	}
}

// of returns the events of key, as "occupied"/"vacated" (or
// "online"/"offline" for users).
func (l *occupancyLog) of(kind broker.OccupancyKind, key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if e.Kind != kind || e.Key != key {
			continue
		}
		switch {
		case kind == broker.OccupancyChannel && e.Occupied:
			out = append(out, "occupied")
		case kind == broker.OccupancyChannel:
			out = append(out, "vacated")
		case e.Occupied:
			out = append(out, "online")
		default:
			out = append(out, "offline")
		}
	}
	return out
}

// waitFor waits until key has exactly want; it fails t if more come.
func (l *occupancyLog) waitFor(t *testing.T, kind broker.OccupancyKind, key string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := l.of(kind, key)
		if slices.Equal(got, want) {
			return
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			t.Fatalf("events of %v %q: %v, want %v", kind, key, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settleFor waits a while longer than the delays and checks that key
// still has exactly want: nothing more came.
func (l *occupancyLog) settleFor(t *testing.T, kind broker.OccupancyKind, key string, want ...string) {
	t.Helper()
	time.Sleep(time.Second)
	if got := l.of(kind, key); !slices.Equal(got, want) {
		t.Fatalf("events of %v %q after a while: %v, want %v", kind, key, got, want)
	}
}

// TestOccupancyOneNode: a channel with state events is occupied by its
// first subscriber and vacated after the delay once the last left; a
// subscriber back within the delay makes no event at all. A user is
// online with its first connection (with the info of its token) and
// offline after the delay once the last closed. Channels without state
// events and anonymous users make none.
func TestOccupancyOneNode(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		log := &occupancyLog{}
		_, url := newTestNodeWith(t, e.Config(t, occupancyConfig()), func(n *gyre.Node) { n.OnOccupancy(log.handler("A")) })
		user := "u-" + e.Name()
		room := "room:" + e.Name()

		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, user, 0, map[string]any{"info": map[string]any{"name": "Ann"}}))
		log.waitFor(t, broker.OccupancyUser, user, "online")
		c.MustSubscribe(room)
		c.MustSubscribe("chat:" + e.Name()) // no state events there
		log.waitFor(t, broker.OccupancyChannel, room, "occupied")

		// A second subscriber on another connection of the same user:
		// nothing new.
		c2 := dial(t, url, protocol.TypeProtobuf)
		c2.connect(connToken(t, user, 0, nil))
		c2.MustSubscribe(room)

		// The first leaves; the second is still there.
		c.Close()
		log.settleFor(t, broker.OccupancyChannel, room, "occupied")
		log.settleFor(t, broker.OccupancyUser, user, "online")

		// The second unsubscribes and comes back within the delay: no
		// event. Then it leaves for good: vacated, and offline.
		c2.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: room}})
		c2.MustSubscribe(room)
		log.settleFor(t, broker.OccupancyChannel, room, "occupied")
		c2.Close()
		log.waitFor(t, broker.OccupancyChannel, room, "occupied", "vacated")
		log.waitFor(t, broker.OccupancyUser, user, "online", "offline")

		log.mu.Lock()
		defer log.mu.Unlock()
		ids := map[string]bool{}
		for _, ev := range log.events {
			if ids[ev.ID] {
				t.Fatalf("event ID %q given twice: %+v", ev.ID, log.events)
			}
			ids[ev.ID] = true
			if strings.HasPrefix(ev.Key, "chat:") || ev.Key == "" {
				t.Fatalf("an event of %q, which has no events", ev.Key)
			}
			if ev.Kind == broker.OccupancyUser && !strings.Contains(string(ev.Info), "Ann") {
				t.Fatalf("user event without the first connection's info: %+v", ev)
			}
		}
	})
}

// TestOccupancyCluster: two nodes of one cluster. A channel subscribed
// on both is occupied once and vacated once, after its last subscriber
// anywhere left; each event reaches one node's handler only.
func TestOccupancyCluster(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		log := &occupancyLog{}
		_, urlA := newTestNodeWith(t, e.Same(t, occupancyConfig(), "c"), func(n *gyre.Node) { n.OnOccupancy(log.handler("A")) })
		_, urlB := newTestNodeWith(t, e.Same(t, occupancyConfig(), "c"), func(n *gyre.Node) { n.OnOccupancy(log.handler("B")) })
		room := "room:cluster-" + e.Name()
		user := "u-cluster-" + e.Name()

		a := dial(t, urlA, protocol.TypeJSON)
		a.connect(connToken(t, user, 0, nil))
		a.MustSubscribe(room)
		log.waitFor(t, broker.OccupancyChannel, room, "occupied")
		b := dial(t, urlB, protocol.TypeJSON)
		b.connect(connToken(t, user, 0, nil))
		b.MustSubscribe(room)

		a.Close()
		log.settleFor(t, broker.OccupancyChannel, room, "occupied")
		log.settleFor(t, broker.OccupancyUser, user, "online")
		b.Close()
		log.waitFor(t, broker.OccupancyChannel, room, "occupied", "vacated")
		log.waitFor(t, broker.OccupancyUser, user, "online", "offline")
		log.settleFor(t, broker.OccupancyChannel, room, "occupied", "vacated")

		log.mu.Lock()
		defer log.mu.Unlock()
		seen := map[string]string{}
		for _, ev := range log.events {
			if node, ok := seen[ev.ID]; ok {
				t.Fatalf("event %s handed to %s and %s", ev.ID, node, ev.node)
			}
			seen[ev.ID] = ev.node
		}
		t.Logf("events: %s", fmt.Sprint(log.events))
	})
}
