package gyre_test

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// slowBroker hands what it delivers to the node slowly: perCall for each
// batch of publications, so that the node falls behind a publisher on
// another node (and, as a real node does, takes more at a time the more
// waits).
type slowBroker struct {
	broker.Broker
	perCall time.Duration
}

func (b *slowBroker) Run(h broker.EventHandler) error {
	return b.Broker.Run(&slowHandler{EventHandler: h, perCall: b.perCall})
}

// slowHandler passes the node's optional handlers on, as the broker
// finds them by type assertion.
type slowHandler struct {
	broker.EventHandler
	perCall time.Duration
}

func (h *slowHandler) HandleRuns(runs []broker.Run) error {
	time.Sleep(h.perCall)
	return h.EventHandler.HandleRuns(runs)
}

func (h *slowHandler) HandleSubscriptionLost(channels []string) error {
	return h.EventHandler.(broker.SubscriptionLostHandler).HandleSubscriptionLost(channels)
}

func (h *slowHandler) HandleBacklog(behind bool, queued int) {
	h.EventHandler.(broker.BacklogHandler).HandleBacklog(behind, queued)
}

// holdObserver counts publishes held and refused, and lost subscribers.
type holdObserver struct {
	gyre.NopObserver
	held, refused, behind atomic.Int64
	told, atMostOnce      atomic.Int64
}

func (o *holdObserver) PublishHeld(_ time.Duration, refused bool) {
	if refused {
		o.refused.Add(1)
	} else {
		o.held.Add(1)
	}
}

func (o *holdObserver) BrokerBehind(behind bool) {
	if behind {
		o.behind.Add(1)
	}
}

func (o *holdObserver) SubscriptionsLost(told, atMostOnce int) {
	o.told.Add(int64(told))
	o.atMostOnce.Add(int64(atMostOnce))
}

func overloadConfig(obs gyre.Observer) gyre.Config {
	return gyre.Config{
		Observer: obs,
		Channels: gyre.ChannelConfig{
			WithoutNamespace: gyre.ChannelOptions{AllowSubscribeForClient: true},
			Namespaces: []gyre.Namespace{{Name: "hist", ChannelOptions: gyre.ChannelOptions{
				HistorySize: 10000, HistoryTTL: time.Minute, ForceRecovery: true, AllowSubscribeForClient: true,
			}}},
		},
	}
}

// TestOverloadHoldsPublishers: node B hands publications to its
// subscribers far slower than node A's publishers publish. B tells the
// cluster it is behind and A holds its publishes (or refuses them with
// 111) until B caught up: B's subscribers get every publication that was
// accepted, in order, on a channel with history and on one without,
// and nobody is told of a loss because there is none.
func TestOverloadHoldsPublishers(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		obsA, obsB := new(holdObserver), new(holdObserver)
		a, _ := newTestNode(t, e.Same(t, overloadConfig(obsA), "overload"))
		cfgB := e.Same(t, overloadConfig(obsB), "overload")
		cfgB.Broker = &slowBroker{Broker: cfgB.Broker, perCall: 20 * time.Millisecond}
		nb, urlB := newTestNode(t, cfgB)
		waitNodes(t, []*gyre.Node{a, nb})

		channels := []string{"hist:load", "plain-load"}
		c := dial(t, urlB, protocol.TypeJSON)
		c.connect(connToken(t, "u", time.Hour, nil))
		for _, ch := range channels {
			c.MustSubscribe(ch)
		}

		// One publication each first: B's subscriptions are live.
		for _, ch := range channels {
			if _, err := a.Publish(ch, []byte(`"warm"`)); err != nil {
				t.Fatal(err)
			}
		}
		c.WaitFor("warm-up publications", func() bool {
			return len(c.Pubs(channels[0])) == 1 && len(c.Pubs(channels[1])) == 1
		})

		// At least perChannel each, and on until A held or was refused
		// a publish: how fast A publishes depends on the engine.
		const perChannel, most, batch = 4000, 30000, 100
		accepted := make([][]int, len(channels))
		refused := make([]int, len(channels))
		var wg sync.WaitGroup
		for ci, ch := range channels {
			wg.Go(func() {
				for i := 0; i < most && (i < perChannel || obsA.held.Load()+obsA.refused.Load() == 0); i += batch {
					items := make([]gyre.PublishItem, batch)
					for j := range items {
						items[j] = gyre.PublishItem{Channel: ch, Data: []byte(strconv.Itoa(i + j))}
					}
					a.PublishMany(items)
					// Not faster than a NATS client buffers: A must
					// still be publishing when B says it is behind.
					time.Sleep(2 * time.Millisecond)
					for j, it := range items {
						switch {
						case it.Err == nil:
							accepted[ci] = append(accepted[ci], i+j)
						case errors.Is(it.Err, gyre.ErrorTooManyRequests):
							refused[ci]++
						default:
							t.Errorf("publish %s %d: %v", ch, i+j, it.Err)
						}
					}
				}
			})
		}
		wg.Wait()
		for ci, ch := range channels {
			want := accepted[ci]
			if len(want) == 0 {
				t.Fatalf("%s: every publish refused", ch)
			}
			pubs := c.WaitPubs(ch, len(want)+1)[1:]
			if len(pubs) != len(want) {
				t.Fatalf("%s: got %d publications, %d accepted", ch, len(pubs), len(want))
			}
			for k, p := range pubs {
				if string(p.Data) != `"`+strconv.Itoa(want[k])+`"` && string(p.Data) != strconv.Itoa(want[k]) {
					t.Fatalf("%s: publication %d is %s, want %d", ch, k, p.Data, want[k])
				}
			}
			t.Logf("%s: %d accepted and delivered, %d refused with 111", ch, len(want), refused[ci])
		}
		if obsB.behind.Load() == 0 {
			t.Fatal("node B never said it was behind")
		}
		if obsA.held.Load()+obsA.refused.Load() == 0 {
			t.Fatal("node A held no publish back while node B was behind")
		}
		if obsB.told.Load()+obsB.atMostOnce.Load() != 0 {
			t.Fatalf("node B lost subscriptions: %d told, %d not", obsB.told.Load(), obsB.atMostOnce.Load())
		}
		t.Logf("node A: %d publishes held, %d refused; node B behind %d times", obsA.held.Load(), obsA.refused.Load(), obsB.behind.Load())
	})
}

// TestSubscriptionLossCounted: when Redis drops the node's pub/sub
// connection, subscribers of a channel with history are told (2500) and
// those of a channel without are counted as at-most-once: the metric
// says how many of each, and nobody is dropped.
func TestSubscriptionLossCounted(t *testing.T) {
	s := redistest.Start(t)
	obs := new(holdObserver)
	n, url := newTestNode(t, enginetest.OnRedis(t, overloadConfig(obs), redis.Config{Addresses: []string{s.Addr}, Prefix: "lost", IOTimeout: time.Second}))
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "u", time.Hour, nil))
	c.MustSubscribe("hist:a")
	c.MustSubscribe("plain-a")
	c.MustSubscribe("plain-b")
	killPubSub(t, []*redistest.Server{s})
	c.WaitPush("unsubscribe 2500 from hist:a", func(p *protocol.Push) bool {
		return p.Channel == "hist:a" && p.Unsubscribe != nil && p.Unsubscribe.Code == gyre.UnsubscribeCodeInsufficientState
	})
	c.WaitFor("the loss counted", func() bool { return obs.told.Load() == 1 && obs.atMostOnce.Load() == 2 })
	// The channels without history go on at most once: live again.
	if _, err := n.Publish("plain-a", []byte(`"after"`)); err != nil {
		t.Fatal(err)
	}
	c.WaitPubs("plain-a", 1)
	for _, p := range c.Pushes() {
		if p.Unsubscribe != nil && p.Channel != "hist:a" {
			t.Fatalf("unsubscribed from %s too", p.Channel)
		}
	}
}

// gatedBroker hands nothing over to its node until gate is closed: the
// node's queues fill and it falls behind, for as long as a test says.
type gatedBroker struct {
	broker.Broker
	gate chan struct{}
}

func (b *gatedBroker) Run(h broker.EventHandler) error {
	return b.Broker.Run(&gatedHandler{slowHandler: slowHandler{EventHandler: h}, gate: b.gate})
}

type gatedHandler struct {
	slowHandler
	gate chan struct{}
}

func (h *gatedHandler) HandleRuns(runs []broker.Run) error {
	<-h.gate
	return h.EventHandler.HandleRuns(runs)
}

// TestClientPublishRefusedWhileHeld: while another node is behind, a
// client's publish waits the hold timeout and is then refused with 111,
// marked temporary, so that an SDK may try it again; once the node caught
// up, publishes go through, and that node's subscriber gets exactly the
// accepted ones, in order.
func TestClientPublishRefusedWhileHeld(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
		obsA, obsB := new(holdObserver), new(holdObserver)
		cfgA := overloadConfig(obsA)
		cfgA.Channels.WithoutNamespace.AllowPublishForClient = true
		cfgA.PublishHoldTimeout = 100 * time.Millisecond
		a, urlA := newTestNode(t, e.Same(t, cfgA, "held"))
		cfgB := e.Same(t, overloadConfig(obsB), "held")
		gate := make(chan struct{})
		opened := false
		open := func() {
			if !opened {
				opened = true
				close(gate)
			}
		}
		defer open()
		cfgB.Broker = &gatedBroker{Broker: cfgB.Broker, gate: gate}
		nb, urlB := newTestNode(t, cfgB)
		waitNodes(t, []*gyre.Node{a, nb})

		const channel = "plain-held"
		sub := dial(t, urlB, protocol.TypeJSON)
		sub.connect(connToken(t, "s", time.Hour, nil))
		sub.MustSubscribe(channel)
		pub := dial(t, urlA, protocol.TypeJSON)
		pub.connect(connToken(t, "p", time.Hour, nil))

		// Publish from the client until a publish is refused: B, which
		// hands nothing over, falls behind after a moment and says so.
		var accepted []string
		publish := func(i int) *protocol.Error {
			data := strconv.Itoa(i)
			r := pub.Call(&protocol.Command{Publish: &protocol.PublishRequest{Channel: channel, Data: []byte(data)}})
			if r.Error == nil {
				accepted = append(accepted, data)
			}
			return r.Error
		}
		i := 0
		deadline := time.Now().Add(15 * time.Second)
		var refusal *protocol.Error
		for ; refusal == nil; i++ {
			if time.Now().After(deadline) {
				t.Fatalf("no publish refused in 15 s; B behind %d times", obsB.behind.Load())
			}
			refusal = publish(i)
			time.Sleep(5 * time.Millisecond)
		}
		if refusal.Code != uint32(gyre.ErrorTooManyRequests.Code) || !refusal.Temporary {
			t.Fatalf("refused with %d %q (temporary %v), want 111, temporary", refusal.Code, refusal.Message, refusal.Temporary)
		}
		if obsA.refused.Load() == 0 {
			t.Fatal("the refusal was not reported to the observer")
		}

		// B catches up; the hold ends and the client's publishes pass.
		open()
		deadline = time.Now().Add(15 * time.Second)
		for {
			if time.Now().After(deadline) {
				t.Fatal("publishes still refused 15 s after B caught up")
			}
			perr := publish(i)
			if perr == nil {
				break
			}
			if perr.Code != refusal.Code {
				t.Fatalf("publish after B caught up: %d %q", perr.Code, perr.Message)
			}
			i++
			time.Sleep(20 * time.Millisecond)
		}
		// In order, a refused publication delivered would come before
		// the last accepted one and be found here.
		pubs := sub.WaitPubs(channel, len(accepted))
		for k, want := range accepted {
			if string(pubs[k].Data) != want {
				t.Fatalf("publication %d is %s, want %s (the accepted ones, in order)", k, pubs[k].Data, want)
			}
		}
		t.Logf("%d of %d client publishes accepted; %d refused while held", len(accepted), i+1, obsA.refused.Load())
	})
}
