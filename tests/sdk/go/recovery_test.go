package sdk

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/centrifugal/centrifuge-go"

	"github.com/gyrehq/gyre/tests/sdk/go/internal/gyretest"
)

func TestRecoversMissedPublicationsInOrderOnce(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		c := newClient(t, cd, clientOptions{})
		c.connect(t)
		ch := channel("chat:rec-")
		s, live := subscribeWithLive(t, srv, c, ch, centrifuge.SubscriptionConfig{})
		recoversAfterDisconnect(t, srv, c, ch, s, live)
	})
}

func TestRecoversAfterNetworkDrop(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		sw := &netSwitch{}
		c := newClient(t, cd, clientOptions{dial: sw.dial})
		c.connect(t)
		ch := channel("chat:drop-")
		s, live := subscribeWithLive(t, srv, c, ch, centrifuge.SubscriptionConfig{})

		mark := c.connecting.mark()
		sw.cut()
		c.connecting.wait(t, mark, nil)
		missed := publishMissed(t, srv, ch, live)

		subMark, pubMark := s.subscribed.mark(), s.pubs.mark()
		sw.restore()
		expectRecovered(t, srv, ch, s, subMark, pubMark, missed)
	})
}

func TestGapLargerThanHistoryIsNotRecovered(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		c := newClient(t, cd, clientOptions{})
		c.connect(t)
		// "small" keeps two publications: three of the five missed are lost.
		ch := channel("small:gap-")
		s, live := subscribeWithLive(t, srv, c, ch, centrifuge.SubscriptionConfig{})

		mark := c.disconnected.mark()
		if err := c.Disconnect(); err != nil {
			t.Fatalf("disconnect: %v", err)
		}
		c.disconnected.wait(t, mark, nil)
		var top gyretest.StreamPosition
		for n := 1; n <= 5; n++ {
			top = publish(t, ch, map[string]any{"n": n})
		}

		subMark := s.subscribed.mark()
		if err := c.Connect(); err != nil {
			t.Fatalf("connect: %v", err)
		}
		// Either the subscriber gets every publication or it learns that it
		// lost some.
		ev := s.subscribed.wait(t, subMark, nil)
		if !ev.WasRecovering || ev.Recovered {
			t.Fatalf("resubscribed from offset %d with %s after publications up to %d, of which the channel keeps two: "+
				"want was_recovering and not recovered", live.Offset, subscribedString(ev), top.Offset)
		}
		if ev.StreamPosition == nil || ev.StreamPosition.Offset != top.Offset || ev.StreamPosition.Epoch != top.Epoch {
			t.Fatalf("subscribed at %+v, want the stream top %+v", ev.StreamPosition, top)
		}
	})
}

// subscribeWithLive subscribes to ch, a fresh history channel, and sees one
// publication from the API of pub live, so that the position the client
// later recovers from is not zero.
func subscribeWithLive(t *testing.T, pub *gyretest.Server, c *client, ch string, config centrifuge.SubscriptionConfig) (*sub, gyretest.StreamPosition) {
	t.Helper()
	s := newSub(t, c, ch, config)
	ev := s.subscribe(t)
	if !ev.Recoverable {
		t.Fatalf("subscribe to a history channel: %s", subscribedString(ev))
	}
	mark := s.pubs.mark()
	live := publishOn(t, pub, ch, map[string]any{"n": 0})
	s.pubs.wait(t, mark, func(ev centrifuge.PublicationEvent) bool { return ev.Offset == live.Offset })
	return s, live
}

// publishMissed publishes {"n": 1} to {"n": 3} into ch through pub and
// returns their offsets, which follow live's.
func publishMissed(t *testing.T, pub *gyretest.Server, ch string, live gyretest.StreamPosition) []uint64 {
	t.Helper()
	var missed []uint64
	for n := 1; n <= 3; n++ {
		pos := publishOn(t, pub, ch, map[string]any{"n": n})
		if pos.Epoch != live.Epoch {
			t.Fatalf("epoch changed between publishes: %q, then %q", live.Epoch, pos.Epoch)
		}
		missed = append(missed, pos.Offset)
	}
	if want := []uint64{live.Offset + 1, live.Offset + 2, live.Offset + 3}; !slices.Equal(missed, want) {
		t.Fatalf("offsets from the API %v, want %v", missed, want)
	}
	return missed
}

// expectRecovered checks that the resubscription after the marks is
// recovered and delivers the missed publications once each, in offset
// order, with nothing else before a marker pub publishes afterwards.
func expectRecovered(t *testing.T, pub *gyretest.Server, ch string, s *sub, subMark, pubMark int, missed []uint64) {
	t.Helper()
	ev := s.subscribed.wait(t, subMark, nil)
	if !ev.WasRecovering || !ev.Recovered {
		t.Fatalf("resubscribed with %s, want was_recovering and recovered", subscribedString(ev))
	}
	s.pubs.waitN(t, pubMark, len(missed))
	marker := publishOn(t, pub, ch, map[string]any{"n": "marker"})
	s.pubs.wait(t, pubMark, func(ev centrifuge.PublicationEvent) bool { return ev.Offset == marker.Offset })

	got := s.pubs.since(pubMark)
	var offsets []uint64
	for _, p := range got {
		offsets = append(offsets, p.Offset)
	}
	if want := append(slices.Clone(missed), marker.Offset); !slices.Equal(offsets, want) {
		t.Fatalf("offsets after the reconnect %v, want %v: %s", offsets, want, show(got))
	}
	for i := range missed {
		sameJSON(t, "recovered publication", got[i].Data, map[string]any{"n": i + 1})
	}
}

// recoversAfterDisconnect disconnects c, has pub publish three
// publications into ch, connects c again and checks that s, subscribed
// with subscribeWithLive, recovers them.
func recoversAfterDisconnect(t *testing.T, pub *gyretest.Server, c *client, ch string, s *sub, live gyretest.StreamPosition) {
	t.Helper()
	mark := c.disconnected.mark()
	if err := c.Disconnect(); err != nil {
		t.Fatalf("disconnect: %v", err)
	}
	c.disconnected.wait(t, mark, nil)
	missed := publishMissed(t, pub, ch, live)

	subMark, pubMark := s.subscribed.mark(), s.pubs.mark()
	if err := c.Connect(); err != nil {
		t.Fatalf("connect: %v", err)
	}
	expectRecovered(t, pub, ch, s, subMark, pubMark, missed)
}

// netSwitch dials the client's connections and lets the test cut them:
// cut closes every connection and makes dials fail until restore.
type netSwitch struct {
	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

var errCut = errors.New("network cut by the test")

func (sw *netSwitch) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	sw.mu.Lock()
	down := sw.down
	sw.mu.Unlock()
	if down {
		return nil, errCut
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.down {
		conn.Close()
		return nil, errCut
	}
	sw.conns = append(sw.conns, conn)
	return conn, nil
}

func (sw *netSwitch) cut() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.down = true
	for _, conn := range sw.conns {
		conn.Close()
	}
	sw.conns = nil
}

func (sw *netSwitch) restore() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.down = false
}
