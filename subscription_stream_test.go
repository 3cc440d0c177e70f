package gyre_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// testStream is a SubscriptionStream fed by the test: it hands over its
// StreamSubscription when started, records the client's publications and
// counts its Close calls.
type testStream struct {
	bidi bool
	// onStart, when set, runs inside Start.
	onStart   func(sub *gyre.StreamSubscription)
	started   chan *gyre.StreamSubscription
	published chan []byte
	closed    chan struct{}
	starts    atomic.Int32
	closes    atomic.Int32
	// startedAfterClose is set when Start ran after Close.
	startedAfterClose atomic.Bool
}

func newTestStream(bidi bool) *testStream {
	return &testStream{
		bidi:      bidi,
		started:   make(chan *gyre.StreamSubscription, 1),
		published: make(chan []byte, 100),
		closed:    make(chan struct{}),
	}
}

func (s *testStream) Start(sub *gyre.StreamSubscription) {
	s.starts.Add(1)
	if s.closes.Load() > 0 {
		s.startedAfterClose.Store(true)
	}
	if s.onStart != nil {
		s.onStart(sub)
	}
	s.started <- sub
}

func (s *testStream) Publish(_ context.Context, data []byte) error {
	if !s.bidi {
		return gyre.ErrorNotAvailable
	}
	s.published <- data
	return nil
}

func (s *testStream) Close() {
	if s.closes.Add(1) == 1 {
		close(s.closed)
	}
}

// waitStarted returns the stream's StreamSubscription once Start ran.
func (s *testStream) waitStarted(t *testing.T) *gyre.StreamSubscription {
	t.Helper()
	select {
	case sub := <-s.started:
		return sub
	case <-time.After(10 * time.Second):
		t.Fatal("stream not started")
		return nil
	}
}

// waitClosed waits for Close and checks it came once.
func (s *testStream) waitClosed(t *testing.T) {
	t.Helper()
	select {
	case <-s.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("stream not closed")
	}
	if n := s.closes.Load(); n != 1 {
		t.Fatalf("Close called %d times", n)
	}
}

// streamNode runs a node whose subscribe handler makes every subscription
// in namespace "stream" (one-way) and "bidi" (both ways) a stream made by
// newStream; the streams made are sent on the returned channel. The
// namespaces keep history and force recovery, which streamed subscriptions
// must turn off. The publish handler refuses everything: a publication
// into a stream must not reach it.
func streamNode(t *testing.T, b enginetest.Engine, setup func(ch string, st *testStream) gyre.SubscribeReply) (*gyre.Node, string, chan *testStream) {
	t.Helper()
	opts := gyre.ChannelOptions{
		HistorySize: 10, HistoryTTL: time.Minute, ForceRecovery: true, AllowTagsFilter: true,
		Presence: true, JoinLeave: true, ForcePushJoinLeave: true, AllowHistoryForClient: true,
	}
	cfg := gyre.Config{Channels: gyre.ChannelConfig{
		WithoutNamespace: gyre.ChannelOptions{AllowSubscribeForClient: true},
		Namespaces:       []gyre.Namespace{{Name: "stream", ChannelOptions: opts}, {Name: "bidi", ChannelOptions: opts}},
	}}
	streams := make(chan *testStream, 10)
	n, url := newTestNodeWith(t, b.Config(t, cfg), func(n *gyre.Node) {
		n.OnSubscribe(func(_ context.Context, c *gyre.Client, e gyre.SubscribeEvent) (gyre.SubscribeReply, error) {
			var st *testStream
			switch {
			case len(e.Channel) > 7 && e.Channel[:7] == "stream:":
				st = newTestStream(false)
			case len(e.Channel) > 5 && e.Channel[:5] == "bidi:":
				st = newTestStream(true)
			default:
				return gyre.SubscribeReply{}, nil
			}
			rep := gyre.SubscribeReply{Stream: st}
			if setup != nil {
				rep = setup(e.Channel, st)
			}
			streams <- st
			return rep, nil
		})
		n.OnPublish(func(context.Context, *gyre.Client, gyre.PublishEvent) (gyre.PublishReply, error) {
			return gyre.PublishReply{}, gyre.ErrorPermissionDenied
		})
	})
	return n, url, streams
}

func nextStream(t *testing.T, streams chan *testStream) *testStream {
	t.Helper()
	select {
	case st := <-streams:
		return st
	case <-time.After(10 * time.Second):
		t.Fatal("subscribe handler not called")
		return nil
	}
}

// TestSubscriptionStreamDelivers: what a stream delivers reaches its own
// subscriber only, all of it and in order, with tags and without offsets,
// on JSON and protobuf connections; the subscription is neither
// recoverable nor positioned though its namespace forces recovery, and it
// still receives what is published into the channel.
func TestSubscriptionStreamDelivers(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url, streams := streamNode(t, b, nil)
			const ch = "stream:feed"
			a := dial(t, url, proto)
			a.connect(connToken(t, "1", 0, nil))
			res := a.MustSubscribe(ch)
			if res.Recoverable || res.Positioned || res.Epoch != "" {
				t.Fatalf("subscribe result %+v: want no recovery, no positioning", res)
			}
			subA := nextStream(t, streams).waitStarted(t)
			if subA.Channel() != ch || subA.Client().UserID() != "1" {
				t.Fatalf("stream of %q for user %q", subA.Channel(), subA.Client().UserID())
			}

			other := dial(t, url, proto)
			other.connect(connToken(t, "2", 0, nil))
			other.MustSubscribe(ch)
			subOther := nextStream(t, streams).waitStarted(t)

			const count = 200
			go func() {
				for i := range count {
					var tags map[string]string
					if i%2 == 0 {
						tags = map[string]string{"i": strconv.Itoa(i)}
					}
					if err := subA.Publish(numbered(i), tags); err != nil {
						t.Errorf("publish %d: %v", i, err)
						return
					}
				}
			}()
			if err := subOther.Publish([]byte(`{"for":"other"}`), nil); err != nil {
				t.Fatal(err)
			}
			pubs := a.WaitPubs(ch, count)
			for i, p := range pubs[:count] {
				if string(p.Data) != string(numbered(i)) || p.Offset != 0 {
					t.Fatalf("publication %d: data %s offset %d, want %s without offset", i, p.Data, p.Offset, numbered(i))
				}
				if want := strconv.Itoa(i); i%2 == 0 && p.Tags["i"] != want {
					t.Fatalf("publication %d: tags %v", i, p.Tags)
				}
			}
			op := other.WaitPubs(ch, 1)
			if string(op[0].Data) != `{"for":"other"}` {
				t.Fatalf("other subscriber got %s first: another stream's publication", op[0].Data)
			}

			// What the channel gets from the broker reaches both.
			if _, err := n.Publish(ch, []byte(`{"api":true}`)); err != nil {
				t.Fatal(err)
			}
			for _, c := range []*testClient{a, other} {
				c.WaitFor("the API publication", func() bool {
					for _, p := range c.Pubs(ch) {
						if string(p.Data) == `{"api":true}` {
							return true
						}
					}
					return false
				})
			}
			if got := len(other.Pubs(ch)); got != 2 {
				t.Fatalf("other subscriber got %d publications, want its own and the API's", got)
			}
		})
	})
}

// TestSubscriptionStreamReplyFirst: a stream that delivers as soon as it
// starts is still behind the subscribe reply on the wire, which a client
// needs to take the publication as its subscription's.
func TestSubscriptionStreamReplyFirst(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		_, url, _ := streamNode(t, b, func(_ string, st *testStream) gyre.SubscribeReply {
			st.onStart = func(sub *gyre.StreamSubscription) {
				for i := range 3 {
					_ = sub.Publish(numbered(i), nil)
				}
			}
			return gyre.SubscribeReply{Stream: st}
		})
		conn, _, _, err := ws.Dial(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		connect, _ := protocol.AppendCommand(nil, protocol.TypeJSON, &protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{Token: connToken(t, "1", 0, nil)}})
		sub, _ := protocol.AppendCommand(nil, protocol.TypeJSON, &protocol.Command{Id: 2, Subscribe: &protocol.SubscribeRequest{Channel: "stream:first"}})
		if err := wsutil.WriteClientText(conn, protocol.JoinFrame(nil, protocol.TypeJSON, [][]byte{connect, sub})); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var order []string
		for len(order) < 5 {
			frame, err := wsutil.ReadServerText(conn)
			if err != nil {
				t.Fatalf("read after %v: %v", order, err)
			}
			replies, err := protocol.DecodeReplies(protocol.TypeJSON, frame, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range replies {
				switch {
				case r.Id != 0:
					order = append(order, "reply "+strconv.Itoa(int(r.Id)))
				case r.Push != nil && r.Push.Pub != nil:
					order = append(order, "pub "+string(r.Push.Pub.Data))
				}
			}
		}
		want := []string{"reply 1", "reply 2", `pub {"n":0}`, `pub {"n":1}`, `pub {"n":2}`}
		if fmt.Sprint(order) != fmt.Sprint(want) {
			t.Fatalf("order %q, want %q", order, want)
		}
	})
}

// TestSubscriptionStreamPublish: a client's publication into a
// bidirectional stream goes to the stream, is answered with an empty
// result and reaches neither the publish handler (which refuses
// everything here), the channel's other subscribers nor its history. A
// one-way stream refuses it with 108.
func TestSubscriptionStreamPublish(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			n, url, streams := streamNode(t, b, nil)
			const ch = "bidi:chat"
			a := dial(t, url, proto)
			a.connect(connToken(t, "1", 0, nil))
			a.MustSubscribe(ch)
			st := nextStream(t, streams)
			st.waitStarted(t)
			watcher := dial(t, url, proto)
			watcher.connect(connToken(t, "2", 0, nil))
			watcher.MustSubscribe(ch)

			for i := range 3 {
				r := a.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: ch, Data: numbered(i)}})
				if r.Error != nil || r.Publish == nil {
					t.Fatalf("publish %d: reply %+v", i, r)
				}
			}
			for i := range 3 {
				select {
				case got := <-st.published:
					if string(got) != string(numbered(i)) {
						t.Fatalf("stream got %s, want %s", got, numbered(i))
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("publication %d did not reach the stream", i)
				}
			}
			h := a.Call(&protocol.Command{History: &protocol.HistoryRequest{Channel: ch, Limit: -1}})
			if h.Error != nil || len(h.History.Publications) != 0 {
				t.Fatalf("history %+v: the stream's publications went to the broker", h)
			}
			// A publication through the broker marks where the watcher's
			// pushes are up to: had a's gone to the broker, they would
			// have come before it.
			if _, err := n.Publish(ch, []byte(`{"marker":true}`)); err != nil {
				t.Fatal(err)
			}
			if got := watcher.WaitPubs(ch, 1); len(got) != 1 || string(got[0].Data) != `{"marker":true}` {
				t.Fatalf("watcher got %d publications, first %s", len(got), got[0].Data)
			}

			one := "stream:oneway"
			a.MustSubscribe(one)
			nextStream(t, streams).waitStarted(t)
			r := a.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: one, Data: []byte(`{}`)}})
			if r.Error == nil || r.Error.Code != gyre.ErrorNotAvailable.Code {
				t.Fatalf("publish into a one-way stream: reply %+v, want error 108", r)
			}
		})
	})
}

// TestSubscriptionStreamEnds: the stream is closed once however its
// subscription ends, and ending it from the stream's side unsubscribes
// the client with the stream's code, without touching a later
// subscription to the same channel.
func TestSubscriptionStreamEnds(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		_, url, streams := streamNode(t, b, nil)
		const ch = "stream:ends"
		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, "1", 0, nil))

		t.Run("client unsubscribes", func(t *testing.T) {
			c.MustSubscribe(ch)
			st := nextStream(t, streams)
			sub := st.waitStarted(t)
			c.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: ch}})
			st.waitClosed(t)
			<-sub.Done()
			if err := sub.Publish([]byte(`{}`), nil); err != gyre.ErrSubscriptionEnded {
				t.Fatalf("publish after the end: %v, want ErrSubscriptionEnded", err)
			}
		})

		t.Run("stream ends", func(t *testing.T) {
			c.MustSubscribe(ch)
			st := nextStream(t, streams)
			sub := st.waitStarted(t)
			sub.Unsubscribe(gyre.UnsubscribeCodeInsufficientState, "insufficient state")
			p := c.WaitPush("unsubscribe push", func(p *protocol.Push) bool { return p.Unsubscribe != nil && p.Channel == ch })
			if p.Unsubscribe.Code != 2500 || p.Unsubscribe.Reason != "insufficient state" {
				t.Fatalf("unsubscribe push %+v", p.Unsubscribe)
			}
			st.waitClosed(t)

			// The client subscribes again; the old stream's late end must
			// leave the new subscription alone.
			c.MustSubscribe(ch)
			st2 := nextStream(t, streams)
			sub2 := st2.waitStarted(t)
			sub.Unsubscribe(gyre.UnsubscribeCodeServer, "late")
			if err := sub2.Publish([]byte(`{"alive":true}`), nil); err != nil {
				t.Fatalf("new subscription: %v", err)
			}
			c.WaitFor("publication of the new stream", func() bool {
				pubs := c.Pubs(ch)
				return len(pubs) > 0 && string(pubs[len(pubs)-1].Data) == `{"alive":true}`
			})
			if n := st.closes.Load(); n != 1 {
				t.Fatalf("old stream closed %d times", n)
			}
			c.Call(&protocol.Command{Unsubscribe: &protocol.UnsubscribeRequest{Channel: ch}})
			st2.waitClosed(t)
		})

		t.Run("client disconnects", func(t *testing.T) {
			d := dial(t, url, protocol.TypeProtobuf)
			d.connect(connToken(t, "1", 0, nil))
			d.MustSubscribe(ch)
			st := nextStream(t, streams)
			st.waitStarted(t)
			d.Close()
			st.waitClosed(t)
		})
	})
}

// TestSubscriptionStreamLifecycleEdges: a stream that ends its
// subscription from within Start is closed once, after Start; a subscribe
// that fails after the handler returned closes the stream without
// starting it.
func TestSubscriptionStreamLifecycleEdges(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		_, url, streams := streamNode(t, b, func(ch string, st *testStream) gyre.SubscribeReply {
			switch ch {
			case "stream:refuse-at-once":
				st.onStart = func(sub *gyre.StreamSubscription) {
					sub.Unsubscribe(gyre.UnsubscribeCodeServer, "server unsubscribe")
					if st.closes.Load() != 0 {
						panic("Close ran while Start ran")
					}
				}
			case "stream:expired":
				return gyre.SubscribeReply{Stream: st, ExpireAt: time.Now().Add(-time.Hour).Unix()}
			}
			return gyre.SubscribeReply{Stream: st}
		})
		c := dial(t, url, protocol.TypeJSON)
		c.connect(connToken(t, "1", 0, nil))

		c.MustSubscribe("stream:refuse-at-once")
		st := nextStream(t, streams)
		st.waitStarted(t)
		p := c.WaitPush("unsubscribe push", func(p *protocol.Push) bool { return p.Unsubscribe != nil })
		if p.Unsubscribe.Code != gyre.UnsubscribeCodeServer {
			t.Fatalf("unsubscribe push %+v", p.Unsubscribe)
		}
		st.waitClosed(t)

		r := c.Subscribe(&protocol.SubscribeRequest{Channel: "stream:expired"})
		if r.Error == nil || r.Error.Code != gyre.ErrorTokenExpired.Code {
			t.Fatalf("subscribe with an expiry in the past: %+v", r)
		}
		st = nextStream(t, streams)
		st.waitClosed(t)
		if st.starts.Load() != 0 {
			t.Fatal("a stream whose subscribe failed was started")
		}
	})
}

// TestSubscriptionStreamFilterAndPayloads: the subscriber's tags filter
// applies to what the stream delivers; a payload that is not JSON closes
// a JSON connection with 3506, as a channel publication would, and
// reaches a protobuf connection as it is.
func TestSubscriptionStreamFilterAndPayloads(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, b enginetest.Engine) {
		_, url, streams := streamNode(t, b, nil)
		const ch = "stream:filtered"
		c := dial(t, url, protocol.TypeProtobuf)
		c.connect(connToken(t, "1", 0, nil))
		r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch, Tf: &protocol.FilterNode{Key: "k", Cmp: "eq", Val: "yes"}})
		if r.Error != nil {
			t.Fatalf("subscribe: %+v", r.Error)
		}
		sub := nextStream(t, streams).waitStarted(t)
		for i, v := range []string{"no", "yes", "no", "yes"} {
			if err := sub.Publish([]byte{0xff, byte(i)}, map[string]string{"k": v}); err != nil {
				t.Fatal(err)
			}
		}
		pubs := c.WaitPubs(ch, 2)
		if len(pubs) != 2 || pubs[0].Data[1] != 1 || pubs[1].Data[1] != 3 {
			t.Fatalf("filtered publications %v", pubs)
		}

		j := dial(t, url, protocol.TypeJSON)
		j.connect(connToken(t, "1", 0, nil))
		j.MustSubscribe(ch)
		st := nextStream(t, streams)
		sub = st.waitStarted(t)
		if err := sub.Publish([]byte{0xff}, nil); err == nil {
			t.Fatal("binary payload to a JSON client: no error")
		}
		if ce := j.WaitClose(); ce.Code != 3506 {
			t.Fatalf("close %d %s, want 3506", ce.Code, ce.Reason)
		}
		st.waitClosed(t)
	})
}
