package loadtest

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/protocol"
)

// closeWait bounds how long a leaving churn connection waits for the
// server to close it after its close frame.
const closeWait = 5 * time.Second

// aLongTimeAgo is a read deadline that has passed: setting it cuts a
// blocked read short.
var aLongTimeAgo = time.Unix(1, 0)

// churner keeps a worker's share of churn's connections coming and
// going: spec.Count slots, each a goroutine that has a connection set
// up, holds it for a while, makes it leave, and starts over. A fixed set
// of setters dials, connects and subscribes for the slots: the dial
// needs a deep stack, which a setter keeps from one connection to the
// next, while a slot's goroutine only reads and leaves and keeps a small
// one, as open's readers do.
type churner struct {
	p            *pool
	nodes        []churnCounters // per URL
	subscribeLat histogram
	pace         sharedPacer
	// begun counts the connections begun: the node and the source
	// address go in turn by it.
	begun atomic.Uint64
	jobs  chan setupJob

	mu      sync.Mutex
	traffic traffic // of the connections that ended
}

// churnCounters are one node's ChurnCounts as the slots count them.
type churnCounters struct {
	connects, connectErrors, subscribes, subscribeRefused atomic.Int64
	unsubscribes, disconnects, dropped                    atomic.Int64
}

func (c *churnCounters) load() ChurnCounts {
	return ChurnCounts{
		Connects:         c.connects.Load(),
		ConnectErrors:    c.connectErrors.Load(),
		Subscribes:       c.subscribes.Load(),
		SubscribeRefused: c.subscribeRefused.Load(),
		Unsubscribes:     c.unsubscribes.Load(),
		Disconnects:      c.disconnects.Load(),
		Dropped:          c.dropped.Load(),
	}
}

// setupJob asks a setter for a connection to a node, subscribed to a
// channel; the answer goes to done.
type setupJob struct {
	node    int
	dialer  *net.Dialer
	token   string
	channel string
	done    chan<- setupResult
}

// setupResult is a connection set up (nil when that failed) and whether
// the server accepted its subscription.
type setupResult struct {
	c          *conn
	subscribed bool
}

func newChurner(p *pool) *churner {
	return &churner{
		p:     p,
		nodes: make([]churnCounters, len(p.spec.URLs)),
		pace:  sharedPacer{p: newPacer(p.spec.Rate)},
		jobs:  make(chan setupJob),
	}
}

// run churns until ctx ends, then waits for every connection to leave.
func (ch *churner) run(ctx context.Context) {
	p := ch.p
	tokens, err := ch.tokens(time.Now())
	if err != nil {
		p.errs.add("sign token: " + err.Error())
		return
	}
	p.openStart.Store(time.Now().UnixNano())
	defer func() { p.openEnd.Store(time.Now().UnixNano()) }()
	var setters sync.WaitGroup
	for range min(p.spec.Concurrency, p.spec.Count) {
		setters.Add(1)
		go func() {
			defer setters.Done()
			for j := range ch.jobs {
				j.done <- ch.setUp(ctx, j)
			}
		}()
	}
	var slots sync.WaitGroup
	for i := range p.spec.Count {
		slots.Add(1)
		go func() {
			defer slots.Done()
			ch.slot(ctx, tokens[i])
		}()
	}
	slots.Wait()
	close(ch.jobs)
	setters.Wait()
}

// tokens signs each slot's token ahead, once per user, so that connects
// measure the server's token check, not this side's signing.
func (ch *churner) tokens(now time.Time) ([]string, error) {
	s := &ch.p.spec
	byUser := map[int]string{}
	out := make([]string, s.Count)
	for i := range out {
		n := s.First + i
		user := n % max(s.Users, 1)
		t, ok := byUser[user]
		if !ok {
			var err error
			if t, err = s.tokenFor(n, now); err != nil {
				return nil, err
			}
			byUser[user] = t
		}
		out[i] = t
	}
	return out, nil
}

// slot keeps one connection after another, until ctx ends.
func (ch *churner) slot(ctx context.Context, token string) {
	s := &ch.p.spec
	done := make(chan setupResult, 1)
	first := true
	for ch.pace.wait(ctx) {
		k := ch.begun.Add(1) - 1
		j := setupJob{
			node:    int((uint64(s.First) + k) % uint64(len(s.URLs))),
			dialer:  ch.p.dialers[k%uint64(len(ch.p.dialers))],
			token:   token,
			channel: churnChannel(s.Channel, rand.IntN(s.Channels)),
			done:    done,
		}
		select {
		case ch.jobs <- j:
		case <-ctx.Done():
			return
		}
		r := <-done
		d := stayFor(s.Hold, first)
		first = false
		if r.c == nil {
			// A failed attempt takes its time all the same, so that
			// attempts keep the churn's pace whatever the server does.
			sleep(ctx, d)
			continue
		}
		ch.stay(ctx, r, j, d)
	}
}

// stayFor draws how long a connection stays: uniform in [hold/2,
// 3·hold/2]. A slot's first connection stays what is left of such a
// stay at a random moment of it (a renewal process's residual life:
// uniform below hold/2, then falling linearly to zero at 3·hold/2), so
// that disconnects come at their steady rate from the start rather than
// in a wave one hold in.
func stayFor(hold time.Duration, first bool) time.Duration {
	lo, hi := hold/2, hold*3/2
	switch {
	case !first:
		return lo + rand.N(hi-lo+1)
	case rand.IntN(2) == 0:
		return rand.N(lo + 1)
	}
	return hi - time.Duration(float64(hi-lo)*math.Sqrt(rand.Float64()))
}

// setUp dials j's node, connects and subscribes. An attempt the end of
// the run finds not yet begun is not made; one begun is carried through
// (within setupTimeout), so that the end counts no failure of its own.
func (ch *churner) setUp(ctx context.Context, j setupJob) setupResult {
	if ctx.Err() != nil {
		return setupResult{}
	}
	p := ch.p
	counts := &ch.nodes[j.node]
	start := time.Now()
	c := &conn{p: p, typ: p.spec.Protocol}
	err := c.dial(context.WithoutCancel(ctx), p.spec.URLs[j.node], j.dialer, p.spec.Compression)
	if err == nil {
		err = c.nc.SetDeadline(start.Add(setupTimeout))
		if err == nil {
			err = c.connect(j.token)
		}
		if err != nil {
			c.nc.Close()
		}
	}
	if err != nil {
		p.failed.Add(1)
		counts.connectErrors.Add(1)
		p.errs.add(errKind(err))
		return setupResult{}
	}
	p.connectLat.record(int64(time.Since(start)))
	p.opened.Add(1)
	counts.connects.Add(1)
	if c.rs.z != nil {
		p.negotiated.Add(1)
		if c.rs.z.takeover {
			p.takeover.Add(1)
		}
	}
	subStart := time.Now()
	err = c.subscribe([]string{j.channel})
	var refused *replyError
	switch {
	case err == nil:
		ch.subscribeLat.record(int64(time.Since(subStart)))
		counts.subscribes.Add(1)
		return setupResult{c: c, subscribed: true}
	case errors.As(err, &refused):
		counts.subscribeRefused.Add(1)
		p.errs.add(err.Error())
		return setupResult{c: c}
	}
	ch.drop(c, counts, err)
	return setupResult{}
}

// stay holds r's connection for d, reading (and answering pings), and
// makes it leave; the end of the run cuts the stay short.
func (ch *churner) stay(ctx context.Context, r setupResult, j setupJob, d time.Duration) {
	c := r.c
	err := c.nc.SetDeadline(time.Time{})
	if err == nil {
		err = c.nc.SetReadDeadline(time.Now().Add(d))
	}
	if err == nil {
		cut := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			_ = c.nc.SetReadDeadline(aLongTimeAgo)
			close(cut)
		})
		err = c.run()
		if !stop() {
			// The cut is under way: leave must not have its deadline
			// overwritten.
			<-cut
		}
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		ch.drop(c, &ch.nodes[j.node], err)
		return
	}
	ch.leave(c, r.subscribed, j.channel, &ch.nodes[j.node])
}

// leave ends a connection as a client that goes away does: an
// unsubscribe first when asked for, then a WebSocket close. It waits for
// the server to close the TCP connection, so that a disconnect counted
// is one the server has taken in. The read buffer may hold part of a
// frame whose read the deadline cut short, so nothing more is parsed:
// what comes until the end is discarded.
func (ch *churner) leave(c *conn, subscribed bool, channel string, counts *churnCounters) {
	unsubscribe := ch.p.spec.Unsubscribe && subscribed
	var out []byte
	if unsubscribe {
		cmd := &protocol.Command{Id: 3, Unsubscribe: &protocol.UnsubscribeRequest{Channel: channel}}
		msg, err := protocol.AppendCommand(nil, c.typ, cmd)
		if err != nil {
			ch.drop(c, counts, err)
			return
		}
		out = appendClientFrame(out, c.dataOp(), protocol.JoinFrame(nil, c.typ, [][]byte{msg}))
	}
	out = appendClientFrame(out, ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, ""))
	err := c.nc.SetDeadline(time.Now().Add(closeWait))
	if err == nil {
		_, err = c.nc.Write(out)
	}
	if err == nil {
		_, err = io.Copy(io.Discard, c.nc)
	}
	_ = c.nc.Close()
	if err != nil {
		ch.p.errs.add("disconnect: " + errKind(err))
	}
	if unsubscribe {
		counts.unsubscribes.Add(1)
	}
	counts.disconnects.Add(1)
	ch.addTraffic(c)
}

// drop closes a connection that the server or the network ended (or
// that cannot go on), counting it and why.
func (ch *churner) drop(c *conn, counts *churnCounters, err error) {
	_ = c.nc.Close()
	ch.p.dropped.Add(1)
	counts.dropped.Add(1)
	ch.p.errs.add("dropped: " + errKind(err))
	ch.addTraffic(c)
}

func (ch *churner) addTraffic(c *conn) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.traffic.add(c.rs.traffic)
}

// received is what the connections that ended received.
func (ch *churner) received() traffic {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.traffic
}

// counts are the totals so far, per node.
func (ch *churner) counts() []ChurnCounts {
	out := make([]ChurnCounts, len(ch.nodes))
	for i := range ch.nodes {
		out[i] = ch.nodes[i].load()
	}
	return out
}
