package gyre_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// lossShape is a Redis setup the pattern loss test runs on, with the
// faults it can inflict: drop every pub/sub connection (CLIENT KILL TYPE
// pubsub), and restart a Redis that carries a pattern connection of the
// node and serves some of the published channels (without persistence, as
// a crash would leave it; in a cluster, a master).
type lossShape struct {
	name  string
	start func(t *testing.T) (cfg redis.Config, servers []*redistest.Server)
}

func lossShapes() []lossShape {
	return []lossShape{
		{"single", func(t *testing.T) (redis.Config, []*redistest.Server) {
			s := redistest.Start(t)
			return redis.Config{Addresses: []string{s.Addr}}, []*redistest.Server{s}
		}},
		{"sharded", func(t *testing.T) (redis.Config, []*redistest.Server) {
			a, b := redistest.Start(t), redistest.Start(t)
			return redis.Config{Addresses: []string{a.Addr, b.Addr}, PubSubShards: 2}, []*redistest.Server{a, b}
		}},
		{"cluster", func(t *testing.T) (redis.Config, []*redistest.Server) {
			c := redistest.StartCluster(t, 3)
			return redis.Config{ClusterAddresses: c.Addrs(), ClusterShards: 8}, c.Nodes
		}},
	}
}

// TestWildcardPubSubLoss: pattern subscribers, client-side (a WebSocket
// client that subscribes again when told, as the SDKs do) and server-side
// (a connection token's channels; the client reconnects when told),
// follow four channels while they are published into without pause. The
// node's Redis pub/sub connections are dropped twice and a Redis carrying
// a pattern connection and some of the channels restarted once. Each
// fault tells every
// pattern subscriber (unsubscribe 2500, disconnect 3010), and in every
// subscription each subscriber received, per channel, every acknowledged
// publication published after it subscribed, up to the point where it
// was told: nothing missing without being told, and nothing received
// past a publication it missed.
func TestWildcardPubSubLoss(t *testing.T) {
	for _, shape := range lossShapes() {
		t.Run(shape.name, func(t *testing.T) {
			rc, servers := shape.start(t)
			rc.Prefix = "loss"
			rc.IOTimeout = time.Second
			n, url := newTestNode(t, enginetest.OnRedis(t, wildcardConfig(), rc))

			pubs := startPublishers(t, n, []string{"geo:eu.a", "geo:eu.b", "geo:eu.c", "geo:eu.d"})
			subs := []*lossSubscriber{
				{t: t, url: url, pattern: "geo:eu.*", pubs: pubs},
				{t: t, url: url, pattern: "geo:eu.>", serverSide: true, pubs: pubs},
			}
			for _, s := range subs {
				s.subscribe()
			}
			settle(t, subs, false)

			faults := []struct {
				name string
				do   func()
			}{
				{"client kill", func() { killPubSub(t, servers) }},
				{"client kill", func() { killPubSub(t, servers) }},
				{"restart", func() {
					s := patternServer(t, servers, rc.Prefix, "geo:eu.")
					s.Kill()
					s.Restart()
				}},
			}
			for _, f := range faults {
				t.Logf("fault: %s", f.name)
				f.do()
				settle(t, subs, true)
			}
			pubs.stop()
			for _, s := range subs {
				s.waitLast()
				s.check()
				if s.told < len(faults) {
					t.Errorf("%s was told %d times over %d faults, want at least once per fault", s.pattern, s.told, len(faults))
				}
				t.Logf("%s: %d subscriptions, told %d times", s.pattern, len(s.periods), s.told)
			}
		})
	}
}

// killPubSub drops every pub/sub connection of every server.
func killPubSub(t *testing.T, servers []*redistest.Server) {
	t.Helper()
	killed := 0
	for _, s := range servers {
		out, err := s.Cli("client", "kill", "type", "pubsub")
		if err != nil {
			t.Fatalf("CLIENT KILL TYPE pubsub: %v", err)
		}
		k, _ := strconv.Atoi(strings.TrimSpace(out))
		killed += k
	}
	if killed == 0 {
		t.Fatal("CLIENT KILL TYPE pubsub killed no connection")
	}
}

// patternServer returns a server that has a subscription of the node to
// a pattern scope (a classic channel, or in a cluster a shard channel
// under one of the channels' hash tags) and the history of some channels
// starting with chPrefix: a restart of it interrupts their pattern path.
func patternServer(t *testing.T, servers []*redistest.Server, prefix, chPrefix string) *redistest.Server {
	t.Helper()
	for _, s := range servers {
		classic, err1 := s.Cli("pubsub", "channels", prefix+".*w.*")
		sharded, err2 := s.Cli("pubsub", "shardchannels", prefix+".*w.*")
		streams, err3 := s.Cli("keys", prefix+".*s."+chPrefix+"*")
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("find the pattern server: %v", err)
		}
		if strings.TrimSpace(classic+sharded) != "" && strings.TrimSpace(streams) != "" {
			return s
		}
	}
	t.Fatal("no server has both a pattern scope's subscription and a channel's history")
	return nil
}

// publishers publish into their channels, one goroutine each, numbering
// the publications of each channel 1, 2, 3... in their data, until
// stopped.
type publishers struct {
	chs     []string
	started []atomic.Int64 // the number of the last publish begun, per channel
	done    chan struct{}
	wg      sync.WaitGroup

	mu    sync.Mutex
	acked []map[int]bool // per channel, the numbers Publish returned nil for
}

func startPublishers(t *testing.T, n *gyre.Node, chs []string) *publishers {
	p := &publishers{chs: chs, started: make([]atomic.Int64, len(chs)), done: make(chan struct{}), acked: make([]map[int]bool, len(chs))}
	for i, ch := range chs {
		p.acked[i] = make(map[int]bool)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for seq := 1; ; seq++ {
				select {
				case <-p.done:
					return
				default:
				}
				p.started[i].Store(int64(seq))
				if _, err := n.Publish(ch, []byte(strconv.Itoa(seq))); err == nil {
					p.mu.Lock()
					p.acked[i][seq] = true
					p.mu.Unlock()
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	t.Cleanup(p.stop)
	return p
}

func (p *publishers) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.wg.Wait()
}

// snapshot returns the number of the last publish begun per channel.
func (p *publishers) snapshot() []int {
	out := make([]int, len(p.chs))
	for i := range p.started {
		out[i] = int(p.started[i].Load())
	}
	return out
}

// ackedAfter returns the acknowledged numbers of channel i above from, in
// order.
func (p *publishers) ackedAfter(i, from int) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for seq := range p.acked[i] {
		if seq > from {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	return out
}

// lossSubscriber is one pattern subscriber and the subscriptions it had:
// a client-side subscriber subscribes again on one connection when told
// (2500), a server-side one connects again (3010).
type lossSubscriber struct {
	t          *testing.T
	url        string
	pattern    string
	serverSide bool
	pubs       *publishers

	c       *testClient
	periods []*lossPeriod
	told    int
	// unsubs is how many unsubscribe pushes of c were handled.
	unsubs int
}

// lossPeriod is one subscription: what was begun before it started (so
// need not be received), and where its pushes are.
type lossPeriod struct {
	start []int
	c     *testClient
	// first is the index of its first push in c's pushes, and last one
	// past its last, -1 while it lasts.
	first, last int
	told        bool
}

// subscribe subscribes (server-side: connects) until it succeeds, as the
// SDKs do: a temporary error (a Redis of a sharded setup still coming
// back) is tried again.
func (s *lossSubscriber) subscribe() {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !s.trySubscribe() {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: subscribing failed for 30s", s.pattern)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.periods = append(s.periods, &lossPeriod{start: s.pubs.snapshot(), c: s.c, first: len(s.c.Pushes()), last: -1})
}

// trySubscribe subscribes once, reporting false on a temporary error.
func (s *lossSubscriber) trySubscribe() bool {
	s.t.Helper()
	var r *protocol.Reply
	if s.serverSide {
		s.c = dial(s.t, s.url, protocol.TypeProtobuf)
		r = s.c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{
			Token: connToken(s.t, "bob", 0, map[string]any{"channels": []string{s.pattern}}),
		}})
	} else {
		if s.c == nil {
			s.c = dial(s.t, s.url, protocol.TypeJSON)
			s.c.connect(connToken(s.t, "alice", 0, nil))
		}
		r = s.c.Subscribe(&protocol.SubscribeRequest{Channel: s.pattern})
	}
	if r.Error != nil && !r.Error.Temporary {
		s.t.Fatalf("%s: error %d %s", s.pattern, r.Error.Code, r.Error.Message)
	}
	if r.Error == nil && s.serverSide && r.Connect.Subs[s.pattern] == nil {
		// The node connects a client whose server-side subscription
		// failed without it; the result shows it, and this client
		// connects again.
		s.c.Close()
		return false
	}
	return r.Error == nil
}

// poll handles a telling that arrived: it checks its code, ends the
// subscription and subscribes again. It reports whether there was one.
func (s *lossSubscriber) poll() bool {
	s.t.Helper()
	cur := s.periods[len(s.periods)-1]
	if s.serverSide {
		ce := s.c.Closed()
		if ce == nil {
			return false
		}
		if ce.Code != 3010 {
			s.t.Fatalf("%s: connection closed with %d %s, want 3010", s.pattern, ce.Code, ce.Reason)
		}
		cur.last, cur.told = len(s.c.Pushes()), true
		s.told++
		s.subscribe()
		return true
	}
	pushes := s.c.Pushes()
	for i := cur.first; i < len(pushes); i++ {
		p := pushes[i]
		if p.Unsubscribe == nil || p.Channel != s.pattern {
			continue
		}
		if p.Unsubscribe.Code != 2500 {
			s.t.Fatalf("%s: unsubscribed with %d %s, want 2500", s.pattern, p.Unsubscribe.Code, p.Unsubscribe.Reason)
		}
		cur.last, cur.told = i, true
		s.told++
		s.subscribe()
		return true
	}
	if ce := s.c.Closed(); ce != nil {
		s.t.Fatalf("%s: connection closed with %d %s", s.pattern, ce.Code, ce.Reason)
	}
	return false
}

// received returns the numbers the period received per channel, in order.
func (p *lossPeriod) received(t *testing.T, pattern string, chs []string) [][]int {
	pushes := p.c.Pushes()
	last := p.last
	if last < 0 {
		last = len(pushes)
	}
	out := make([][]int, len(chs))
	for _, push := range pushes[p.first:last] {
		if push.Pub == nil || push.Channel != pattern {
			continue
		}
		i := slices.Index(chs, push.Pub.Channel)
		seq, err := strconv.Atoi(string(push.Pub.Data))
		if i < 0 || err != nil {
			t.Fatalf("%s: unexpected publication %s %q", pattern, push.Pub.Channel, push.Pub.Data)
		}
		out[i] = append(out[i], seq)
	}
	return out
}

// flowing reports whether the current subscription received, on every
// channel, a publication begun after it started and after since.
func (s *lossSubscriber) flowing(since []int) bool {
	cur := s.periods[len(s.periods)-1]
	for i, got := range cur.received(s.t, s.pattern, s.pubs.chs) {
		if len(got) == 0 || got[len(got)-1] <= max(cur.start[i], since[i]) {
			return false
		}
	}
	return true
}

// waitLast waits until the current subscription received the last
// acknowledged publication of every channel begun after it started.
func (s *lossSubscriber) waitLast() {
	s.t.Helper()
	cur := s.periods[len(s.periods)-1]
	s.c.WaitFor(s.pattern+" to receive the last publications", func() bool {
		got := cur.received(s.t, s.pattern, s.pubs.chs)
		for i := range s.pubs.chs {
			want := s.pubs.ackedAfter(i, cur.start[i])
			if len(want) > 0 && !slices.Contains(got[i], want[len(want)-1]) {
				return false
			}
		}
		return true
	})
}

// check verifies every subscription: per channel the numbers received
// increase, and every acknowledged publication begun after the
// subscription started was received, except, in a subscription that was
// told, those from the first one missed on, none of which may have been
// received.
func (s *lossSubscriber) check() {
	s.t.Helper()
	for k, p := range s.periods {
		for i, got := range p.received(s.t, s.pattern, s.pubs.chs) {
			ch := s.pubs.chs[i]
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				s.t.Errorf("%s subscription %d, %s: received out of order or twice: %v", s.pattern, k, ch, got)
			}
			for _, seq := range s.pubs.ackedAfter(i, p.start[i]) {
				if slices.Contains(got, seq) {
					continue
				}
				if !p.told {
					s.t.Errorf("%s subscription %d (never told), %s: acknowledged publication %d missing", s.pattern, k, ch, seq)
				} else if len(got) > 0 && got[len(got)-1] > seq {
					s.t.Errorf("%s subscription %d, %s: publication %d missing, and %d received after it before being told", s.pattern, k, ch, seq, got[len(got)-1])
				}
				break
			}
		}
	}
}

// settle handles the tellings after a fault (told: every subscriber must
// be told at least once) and returns once every subscriber's current
// subscription receives publications begun after the call on every
// channel.
func settle(t *testing.T, subs []*lossSubscriber, told bool) {
	t.Helper()
	since := subs[0].pubs.snapshot()
	deadline := time.Now().Add(60 * time.Second)
	toldNow := make([]bool, len(subs))
	for {
		done := true
		for i, s := range subs {
			if s.poll() {
				toldNow[i] = true
			}
			done = done && (toldNow[i] || !told) && s.flowing(since)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for the subscribers to be told and receive again (told: %v)", toldNow)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
