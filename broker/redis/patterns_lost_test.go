package redis

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// TestPatternUndecodable: a message on a scope's (or a channel's) pub/sub
// channel that does not decode may have been a publication its
// subscribers then never get: the broker reports the scope (the channel)
// lost at its place, after what came before it, and delivers what
// follows.
func TestPatternUndecodable(t *testing.T) {
	srv := redistest.Start(t)
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, IOTimeout: time.Second})
	const scope, ch = "bad:", "bad:a"
	if err := b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	waitPattern(t, b, ev, scope, ch, "before")
	expectData(t, ev, ch, "before")

	if _, err := srv.Cli("publish", scopeName(b.e.bases[0], scope), "garbage"); err != nil {
		t.Fatal(err)
	}
	waitScopeLost(t, ev, scope)
	if _, err := srv.Cli("publish", b.shard(ch).pubsubName(ch), "garbage"); err != nil {
		t.Fatal(err)
	}
	waitLost(t, ev, ch)
	mustPublish(t, b, ch, "after")
	expectData(t, ev, ch, "after")
}

// slowHandler is an EventHandler that blocks in HandleRuns until open is
// closed, counting pattern publications and recording scope losses.
type slowHandler struct {
	open       chan struct{}
	patterns   atomic.Int64
	scopesLost chan []string
}

func (h *slowHandler) HandleRuns(runs []broker.Run) error {
	<-h.open
	for _, r := range runs {
		if r.Scope != "" {
			h.patterns.Add(int64(len(r.Pubs)))
		}
	}
	return nil
}
func (h *slowHandler) HandleJoin(string, *broker.ClientInfo) error  { return nil }
func (h *slowHandler) HandleLeave(string, *broker.ClientInfo) error { return nil }
func (h *slowHandler) HandleControl([]byte) error                   { return nil }
func (h *slowHandler) HandlePatternScopeLost(scopes []string) error {
	h.scopesLost <- scopes
	return nil
}

// TestPatternSlowReader: a node that reads its pattern connection too
// slowly (its handler is stuck) is dropped by Redis once the connection's
// output buffer passes client-output-buffer-limit pubsub. That is a loss
// like any other: once the node reads again and has subscribed the scope
// again, the scope is reported lost.
func TestPatternSlowReader(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := srv.Cli("config", "set", "client-output-buffer-limit", "pubsub 256kb 128kb 1"); err != nil {
		t.Fatal(err)
	}
	b := newEngine(t, Config{Addresses: []string{srv.Addr}, IOTimeout: time.Second}).Broker()
	h := &slowHandler{open: make(chan struct{}), scopesLost: make(chan []string, 100)}
	if err := b.Run(h); err != nil {
		t.Fatalf("Run: %v", err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(h.open)
		}
	}
	defer release()
	const scope, ch = "slow:", "slow:a"
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	data := bytes.Repeat([]byte("x"), 1024)
	items := make([]broker.PublishItem, 500)
	eventually(t, "Redis to drop the slow pattern connection", func() bool {
		for i := range items {
			items[i] = broker.PublishItem{Channel: ch, Data: data, Opts: broker.PublishOptions{PatternScope: scope}}
		}
		b.PublishMany(items)
		return outputBufferDisconnections(t, srv) > 0
	})
	release()
	select {
	case lost := <-h.scopesLost:
		if len(lost) != 1 || lost[0] != scope {
			t.Errorf("scopes reported lost: %q, want %q", lost, scope)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the scope was never reported lost")
	}
	t.Logf("%d pattern publications handed over", h.patterns.Load())
}

// outputBufferDisconnections is how many clients Redis dropped for
// passing their output buffer limit, from its log (INFO stats counts them
// only from Redis 7.2).
func outputBufferDisconnections(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(srv.Dir, "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(log, []byte("overcoming of output buffer limits"))
}

// orderedEvents records pattern publications and scope losses in the
// order the broker handed them over.
type orderedEvents struct {
	mu  sync.Mutex
	log []orderedEvent
}

// orderedEvent is a pattern publication (seq is its data, a number) or,
// with lost set, a report of lost scopes.
type orderedEvent struct {
	channel string
	seq     int
	lost    []string
}

func (o *orderedEvents) HandleRuns(runs []broker.Run) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range runs {
		if r.Scope == "" {
			continue
		}
		for _, rp := range r.Pubs {
			seq, err := strconv.Atoi(string(rp.Pub.Data))
			if err != nil {
				return fmt.Errorf("pattern publication %q: %w", rp.Pub.Data, err)
			}
			o.log = append(o.log, orderedEvent{channel: r.Channel, seq: seq})
		}
	}
	return nil
}
func (o *orderedEvents) HandleJoin(string, *broker.ClientInfo) error  { return nil }
func (o *orderedEvents) HandleLeave(string, *broker.ClientInfo) error { return nil }
func (o *orderedEvents) HandleControl([]byte) error                   { return nil }
func (o *orderedEvents) HandlePatternScopeLost(scopes []string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = append(o.log, orderedEvent{lost: slices.Clone(scopes)})
	return nil
}

func (o *orderedEvents) snapshot() []orderedEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.log)
}

// lastSeq returns the highest number received per channel.
func (o *orderedEvents) lastSeq() map[string]int {
	out := make(map[string]int)
	for _, e := range o.snapshot() {
		if e.lost == nil {
			out[e.channel] = max(out[e.channel], e.seq)
		}
	}
	return out
}

// seqPublishers publish into each channel from a goroutine of its own,
// numbering the publications 1, 2, 3... in their data, until stopped.
type seqPublishers struct {
	chs  []string
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	started map[string]int          // the number of the last publish begun
	acked   map[string]map[int]bool // the numbers Publish returned nil for
}

func startSeqPublishers(b *Broker, chs []string, opts broker.PublishOptions) *seqPublishers {
	p := &seqPublishers{chs: chs, done: make(chan struct{}), started: make(map[string]int), acked: make(map[string]map[int]bool)}
	for _, ch := range chs {
		p.acked[ch] = make(map[int]bool)
	}
	for _, ch := range chs {
		p.wg.Go(func() {
			for seq := 1; ; seq++ {
				select {
				case <-p.done:
					return
				default:
				}
				p.mu.Lock()
				p.started[ch] = seq
				p.mu.Unlock()
				if _, _, err := b.Publish(ch, []byte(strconv.Itoa(seq)), opts); err == nil {
					p.mu.Lock()
					p.acked[ch][seq] = true
					p.mu.Unlock()
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	return p
}

func (p *seqPublishers) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.wg.Wait()
}

func (p *seqPublishers) snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.started)
}

// ackedBetween returns the acknowledged numbers of ch in (from, to), in
// order.
func (p *seqPublishers) ackedBetween(ch string, from, to int) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for seq := range p.acked[ch] {
		if seq > from && seq < to {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	return out
}

// TestPatternClusterMasterRestart: a cluster master that serves some of
// the channels published into a scope restarts (without persistence, as
// after a crash) while they are published into without pause, and takes
// publishes before the node holding the scope is subscribed there again.
// That node is told the scope was lost, and per channel every
// acknowledged publication it did not receive is preceded by such a
// report: after the last publication received before it, and before the
// first received after it. Channels of the other masters miss nothing.
//
// The subscribing node authenticates as an ACL user of its own, which the
// restarted master (no persistence, no ACL file) no longer knows: its
// connections there fail while the publisher's succeed, until the test
// creates the user again; so the restart surely costs it publications.
func TestPatternClusterMasterRestart(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	addUser := func(n *redistest.Server) {
		t.Helper()
		if out, err := n.Cli("acl", "setuser", "sub", "on", ">subpw", "~*", "&*", "+@all"); err != nil {
			t.Fatalf("ACL SETUSER: %v %s", err, out)
		}
	}
	for _, n := range c.Nodes {
		addUser(n)
	}
	cfg := Config{ClusterAddresses: c.Addrs(), IOTimeout: time.Second}
	pub, _ := runBroker(t, cfg)
	cfg.User, cfg.Password = "sub", "subpw"
	sub := newEngine(t, cfg).Broker()
	ev := &orderedEvents{}
	if err := sub.Run(ev); err != nil {
		t.Fatalf("Run: %v", err)
	}
	const scope = "wild:"
	if err := sub.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	restarted := channelNode(t, c, pub, "wild:0")
	var onRestarted, elsewhere []string
	for i := 0; (len(onRestarted) < 3 || len(elsewhere) < 3) && i < 1000; i++ {
		ch := "wild:" + strconv.Itoa(i)
		if channelNode(t, c, pub, ch) == restarted {
			if len(onRestarted) < 3 {
				onRestarted = append(onRestarted, ch)
			}
		} else if len(elsewhere) < 3 {
			elsewhere = append(elsewhere, ch)
		}
	}
	chs := append(slices.Clone(onRestarted), elsewhere...)
	pubs := startSeqPublishers(pub, chs, scopedHistory(scope))
	defer pubs.stop()
	flowing := func(since map[string]int) func() bool {
		return func() bool {
			got := ev.lastSeq()
			for _, ch := range chs {
				if got[ch] <= since[ch] {
					return false
				}
			}
			return true
		}
	}
	eventually(t, "pattern publications of every channel", flowing(nil))

	restarted.Kill()
	restarted.Restart()
	down := pubs.snapshot()
	eventually(t, "publications the subscriber cannot receive", func() bool {
		for _, ch := range onRestarted {
			if len(pubs.ackedBetween(ch, down[ch], math.MaxInt)) == 0 {
				return false
			}
		}
		return true
	})
	addUser(restarted)
	eventually(t, "the scope to be reported lost", func() bool {
		return slices.ContainsFunc(ev.snapshot(), func(e orderedEvent) bool { return slices.Contains(e.lost, scope) })
	})
	eventually(t, "pattern publications of every channel after the report", flowing(pubs.snapshot()))
	pubs.stop()
	last := pubs.snapshot()
	eventually(t, "the last acknowledged publications", func() bool {
		got := ev.lastSeq()
		for _, ch := range chs {
			if acked := pubs.ackedBetween(ch, got[ch], last[ch]+1); len(acked) > 0 {
				return false
			}
		}
		return true
	})
	missed := checkToldBeforeGaps(t, ev.snapshot(), pubs, scope, onRestarted, elsewhere)
	for _, ch := range onRestarted {
		if missed[ch] == 0 {
			t.Errorf("%s missed nothing although it was published into while the subscriber was away", ch)
		}
	}
}

// checkToldBeforeGaps checks, per channel, that numbers arrive in
// increasing order and that each acknowledged publication not received is
// preceded by a report of scope lost, after the last publication of the
// channel received before it; channels of elsewhere may miss nothing. It
// returns how many acknowledged publications each channel missed.
func checkToldBeforeGaps(t *testing.T, log []orderedEvent, pubs *seqPublishers, scope string, affected, elsewhere []string) map[string]int {
	t.Helper()
	last := make(map[string]int)
	told := make(map[string]bool) // a report since the channel's last publication
	missed := make(map[string]int)
	for _, e := range log {
		if e.lost != nil {
			if slices.Contains(e.lost, scope) {
				for _, ch := range append(slices.Clone(affected), elsewhere...) {
					told[ch] = true
				}
			}
			continue
		}
		if e.seq <= last[e.channel] {
			t.Errorf("%s: %d received after %d", e.channel, e.seq, last[e.channel])
			continue
		}
		gap := pubs.ackedBetween(e.channel, last[e.channel], e.seq)
		missed[e.channel] += len(gap)
		switch {
		case len(gap) > 0 && slices.Contains(elsewhere, e.channel):
			t.Errorf("%s, on a master that did not restart: acknowledged %v missing before %d", e.channel, gap, e.seq)
		case len(gap) > 0 && !told[e.channel]:
			t.Errorf("%s: acknowledged %v missing, and %d received before any report of the loss", e.channel, gap, e.seq)
		}
		last[e.channel], told[e.channel] = e.seq, false
	}
	t.Logf("acknowledged publications missed (each after a report): %v", missed)
	return missed
}
