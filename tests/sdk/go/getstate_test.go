package sdk

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/centrifugal/centrifuge-go"

	"github.com/gyrehq/gyre/tests/sdk/go/internal/gyretest"
)

// The SDK's GetState flow (SubscriptionConfig.GetState): with no saved
// position the SDK asks the application for its state's stream position and
// subscribes with recovery from there, setting subscribe flag 2 ("reject
// unrecovered"), so that a position the server cannot recover from comes
// back as error 112 and the SDK asks the application again.

func TestGetStateZeroPositionRecoversStreamFromStart(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		ch := channel("chat:state-")
		var published []uint64
		for n := 1; n <= 3; n++ {
			published = append(published, publish(t, ch, map[string]any{"n": n}).Offset)
		}

		c := newClient(t, cd, clientOptions{})
		c.connect(t)
		var calls atomic.Int64
		s := newSub(t, c, ch, centrifuge.SubscriptionConfig{
			GetState: func(centrifuge.SubscriptionGetStateEvent) (centrifuge.StreamPosition, error) {
				calls.Add(1)
				return centrifuge.StreamPosition{}, nil
			},
		})
		// With the zero position the SDK subscribes with recover, offset 0
		// and epoch "": the whole stream.
		ev := s.subscribe(t)
		if !ev.WasRecovering {
			t.Fatalf("subscribed with %s, want was_recovering", subscribedString(ev))
		}
		got := s.pubs.waitN(t, 0, 3)
		var offsets []uint64
		for _, p := range got {
			offsets = append(offsets, p.Offset)
		}
		if !slices.Equal(offsets, published) {
			t.Fatalf("publications with offsets %v, want the stream's %v: %s", offsets, published, show(got))
		}
		for i, p := range got {
			sameJSON(t, "recovered publication", p.Data, map[string]any{"n": i + 1})
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("GetState called %d times, want once", n)
		}
	})
}

func TestGetStateNotCalledAgainWhenRecoverySucceeds(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		c := newClient(t, cd, clientOptions{})
		c.connect(t)
		ch := channel("chat:state-rec-")
		var calls atomic.Int64
		s, live := subscribeWithLive(t, srv, c, ch, centrifuge.SubscriptionConfig{
			GetState: func(centrifuge.SubscriptionGetStateEvent) (centrifuge.StreamPosition, error) {
				calls.Add(1)
				return centrifuge.StreamPosition{}, nil
			},
		})
		if n := calls.Load(); n != 1 {
			t.Fatalf("GetState called %d times on the first subscribe, want once", n)
		}

		recoversAfterDisconnect(t, srv, c, ch, s, live)
		if n := calls.Load(); n != 1 {
			t.Fatalf("GetState called %d times, want once: a recovered resubscription needs no state", n)
		}
	})
}

func TestGetStateCalledAgainOnUnrecoverablePosition(t *testing.T) {
	eachCodec(t, func(t *testing.T, cd codec) {
		c := newClient(t, cd, clientOptions{})
		c.connect(t)
		// "small" keeps two publications: a client that missed five cannot
		// recover.
		ch := channel("small:state-")
		var calls atomic.Int64
		var lastErr atomic.Value
		getState := func(e centrifuge.SubscriptionGetStateEvent) (centrifuge.StreamPosition, error) {
			calls.Add(1)
			// The application's state is the stream as it is now.
			top, err := srv.StreamTop(e.Channel)
			if err != nil {
				lastErr.Store(err)
				return centrifuge.StreamPosition{}, err
			}
			return centrifuge.StreamPosition{Offset: top.Offset, Epoch: top.Epoch}, nil
		}
		s, live := subscribeWithLive(t, srv, c, ch, centrifuge.SubscriptionConfig{GetState: getState})
		if n := calls.Load(); n != 1 {
			t.Fatalf("GetState called %d times on the first subscribe, want once", n)
		}

		mark := c.disconnected.mark()
		if err := c.Disconnect(); err != nil {
			t.Fatalf("disconnect: %v", err)
		}
		c.disconnected.wait(t, mark, nil)
		var top gyretest.StreamPosition
		for n := 1; n <= 5; n++ {
			top = publish(t, ch, map[string]any{"n": n})
		}
		if top.Epoch != live.Epoch || top.Offset != live.Offset+5 {
			t.Fatalf("stream top %+v after five publishes from %+v", top, live)
		}

		subMark, pubMark := s.subscribed.mark(), s.pubs.mark()
		if err := c.Connect(); err != nil {
			t.Fatalf("connect: %v", err)
		}
		ev := s.subscribed.wait(t, subMark, nil)
		if n := calls.Load(); n != 2 {
			t.Fatalf("GetState called %d times, want twice: the resubscription from offset %d with flag 2 "+
				"(reject unrecovered) must be refused with 112 so that the SDK asks again; it got subscribed with %s (GetState error: %v)",
				n, live.Offset, subscribedString(ev), lastErr.Load())
		}
		if !ev.WasRecovering || !ev.Recovered {
			t.Fatalf("subscribed with %s after GetState returned the stream top, want was_recovering and recovered", subscribedString(ev))
		}
		if ev.StreamPosition == nil || ev.StreamPosition.Offset != top.Offset || ev.StreamPosition.Epoch != top.Epoch {
			t.Fatalf("subscribed at %+v, want the stream top %+v", ev.StreamPosition, top)
		}

		// The application reloaded its state: the lost publications do not
		// come, the next live one does.
		next := publish(t, ch, map[string]any{"n": "live"})
		got := s.pubs.waitN(t, pubMark, 1)
		if got[0].Offset != next.Offset {
			t.Fatalf("first publication after the resubscription: %s, want the live one at offset %d", show(got), next.Offset)
		}
		sameJSON(t, "live publication", got[0].Data, map[string]any{"n": "live"})
	})
}
