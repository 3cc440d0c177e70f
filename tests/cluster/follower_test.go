package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/gyrehq/gyre/internal/condwait"
	"github.com/gyrehq/gyre/protocol"
)

// follower is a client that follows one recoverable channel the way the
// SDKs do: after unsubscribe 2500 it resubscribes with recover from its
// last offset and epoch, after a lost connection it reconnects (to the
// next address when one cannot be reached) and recovers, and it retries a
// failed subscribe. It runs on its own goroutine and records every
// publication with the way it arrived, and every broken promise: a gap or
// repeat in offsets, recovered=false, a changed epoch.
type follower struct {
	name    string
	user    string
	channel string
	urls    []string
	token   string

	stop chan struct{}
	done chan struct{}

	mu         sync.Mutex
	cond       *sync.Cond
	epoch      string
	offset     uint64
	positioned bool // epoch and offset are known
	subscribed bool
	clientID   string
	clientIDs  []string // one per connection
	got        []delivery
	problems   []string
	events     []string // recent connection and subscription events, for failure reports
	// beforeProblem are the events up to the first problem, kept for the
	// failure report: by the end of a run they have rolled out of events.
	beforeProblem []string
	// resubscribes counts unsubscribes with 2500 and above; reconnects
	// counts connections after the first.
	resubscribes int
	reconnects   int

	// toldLoss makes a failed recovery (recovered=false, or a new epoch)
	// an accepted outcome, counted in told, instead of a problem: the
	// client was told it lost state, which is what a fault that loses
	// data must lead to. A silent gap stays a problem.
	toldLoss bool
	told     int
	// flapEvery, when set, ends each connection after that long, so
	// that the follower reconnects and recovers again and again.
	flapEvery time.Duration
}

// delivery is one publication as the follower received it.
type delivery struct {
	offset    uint64
	epoch     string
	n         int  // the "n" of the publication's data
	recovered bool // came in a subscribe result, not as a push
}

// startFollower starts a follower of channel for user, connecting to the
// first of urls; it is stopped when the test ends.
func startFollower(t testing.TB, name, user, channel string, urls ...string) *follower {
	t.Helper()
	return startConfiguredFollower(t, &follower{name: name, user: user, channel: channel, urls: urls})
}

// startConfiguredFollower starts f, whose name, user, channel, urls and
// options are set.
func startConfiguredFollower(t testing.TB, f *follower) *follower {
	t.Helper()
	f.token = signToken(t, f.user)
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	f.cond = sync.NewCond(&f.mu)
	go f.run()
	t.Cleanup(f.close)
	return f
}

// close stops the follower and waits for it; closing twice is harmless.
func (f *follower) close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

func (f *follower) stopped() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

func (f *follower) run() {
	defer close(f.done)
	idx := 0
	for first := true; !f.stopped(); first = false {
		if !first {
			f.note("reconnect")
		}
		reached, err := f.session(f.urls[idx%len(f.urls)], !first)
		if !reached {
			// As an SDK behind a list of endpoints would: try the next.
			idx++
		}
		f.event("connection ended: %v", err)
		select {
		case <-f.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// session runs one connection until it ends; reached tells whether the
// server could be reached at all.
func (f *follower) session(url string, again bool) (reached bool, err error) {
	conn, _, _, err := ws.Dialer{Timeout: 5 * time.Second}.Dial(context.Background(), url)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-f.stop:
			conn.Close()
		case <-ended:
		}
	}()
	if again {
		f.mu.Lock()
		f.reconnects++
		f.mu.Unlock()
	}
	if f.flapEvery > 0 {
		flap := time.AfterFunc(f.flapEvery, func() { conn.Close() })
		defer flap.Stop()
	}
	s := &followSession{f: f, conn: conn}
	return true, s.run()
}

// followSession is the state of one connection of a follower.
type followSession struct {
	f      *follower
	conn   net.Conn
	nextID uint32
	connID uint32
	subID  uint32
	// recovering: the pending subscribe asked for recovery from this
	// position.
	recovering bool
}

func (s *followSession) run() error {
	s.nextID++
	s.connID = s.nextID
	connect, err := protocol.EncodeCommand(protocol.TypeJSON, &protocol.Command{
		Id: s.connID, Connect: &protocol.ConnectRequest{Token: s.f.token, Name: "cluster-follower"},
	})
	if err != nil {
		return err
	}
	// Like the SDKs, connect and subscribe go in one frame.
	sub, err := s.subscribeCommand()
	if err != nil {
		return err
	}
	if err := wsutil.WriteClientText(s.conn, append(append(connect, '\n'), sub...)); err != nil {
		return err
	}
	for {
		msgs, err := wsutil.ReadServerMessage(s.conn, nil)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.OpCode == ws.OpClose {
				code, reason := ws.ParseCloseFrameData(m.Payload)
				return fmt.Errorf("closed by server: %d %s", code, reason)
			}
			if m.OpCode.IsControl() {
				continue
			}
			if err := s.handleFrame(m.Payload); err != nil {
				return err
			}
		}
	}
}

// subscribeCommand encodes a subscribe with recovery from the last known
// position, if any.
func (s *followSession) subscribeCommand() ([]byte, error) {
	f := s.f
	s.nextID++
	s.subID = s.nextID
	req := &protocol.SubscribeRequest{Channel: f.channel}
	f.mu.Lock()
	if f.positioned {
		req.Recover, req.Offset, req.Epoch = true, f.offset, f.epoch
	}
	f.subscribed = false
	f.mu.Unlock()
	s.recovering = req.Recover
	return protocol.EncodeCommand(protocol.TypeJSON, &protocol.Command{Id: s.subID, Subscribe: req})
}

func (s *followSession) resubscribe() error {
	cmd, err := s.subscribeCommand()
	if err != nil {
		return err
	}
	return wsutil.WriteClientText(s.conn, cmd)
}

func (s *followSession) handleFrame(frame []byte) error {
	replies, err := protocol.DecodeReplies(protocol.TypeJSON, frame, nil)
	if err != nil {
		s.f.problem("undecodable frame %q: %v", frame, err)
		return err
	}
	for _, r := range replies {
		if err := s.handleReply(r); err != nil {
			return err
		}
	}
	return nil
}

func (s *followSession) handleReply(r *protocol.Reply) error {
	f := s.f
	switch {
	case r.Id == s.connID:
		if r.Error != nil {
			return fmt.Errorf("connect: error %d %s", r.Error.Code, r.Error.Message)
		}
		f.mu.Lock()
		f.clientID = r.Connect.Client
		f.clientIDs = append(f.clientIDs, r.Connect.Client)
		f.mu.Unlock()
	case r.Id == s.subID:
		if r.Error != nil {
			// A temporary failure (the broker unreachable): retry after
			// a pause, as the SDKs do.
			f.event("subscribe error %d %s", r.Error.Code, r.Error.Message)
			time.Sleep(200 * time.Millisecond)
			return s.resubscribe()
		}
		f.subscribeResult(r.Subscribe, s.recovering)
	case r.Id > 0:
		f.problem("reply to unknown command %d", r.Id)
	case r.Push != nil:
		return s.handlePush(r.Push)
	default:
		return wsutil.WriteClientText(s.conn, []byte("{}"))
	}
	return nil
}

func (s *followSession) handlePush(p *protocol.Push) error {
	f := s.f
	if p.Channel != f.channel {
		return nil
	}
	switch {
	case p.Pub != nil:
		f.mu.Lock()
		live := f.subscribed
		f.mu.Unlock()
		if live {
			f.apply(p.Pub, false)
		}
	case p.Unsubscribe != nil:
		code := p.Unsubscribe.Code
		f.event("unsubscribed %d %s", code, p.Unsubscribe.Reason)
		if code < 2500 {
			f.problem("unsubscribed with %d %q", code, p.Unsubscribe.Reason)
			return nil
		}
		f.note("resubscribe")
		return s.resubscribe()
	}
	return nil
}

// subscribeResult applies a successful subscribe.
func (f *follower) subscribeResult(res *protocol.SubscribeResult, recovering bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subscribed = true
	f.cond.Broadcast()
	if !recovering {
		f.epoch, f.offset, f.positioned = res.Epoch, res.Offset, true
		f.eventLocked("subscribed at %d %s", res.Offset, res.Epoch)
		return
	}
	f.eventLocked("recovered %d publications (recovered=%v) from %d, result at %d", len(res.Publications), res.Recovered, f.offset, res.Offset)
	if !res.Recovered || res.Epoch != f.epoch {
		if f.toldLoss {
			f.told++
			f.eventLocked("told of a loss: recovery from %d/%s: recovered=%v, epoch %s", f.offset, f.epoch, res.Recovered, res.Epoch)
			f.epoch, f.offset = res.Epoch, res.Offset
			return
		}
		f.problemLocked("recovery from %d/%s: recovered=%v, epoch %s", f.offset, f.epoch, res.Recovered, res.Epoch)
		f.epoch, f.offset = res.Epoch, res.Offset
		return
	}
	// A recovered result keeps the client's offset; the publications
	// take it on from there.
	if res.Offset != f.offset {
		f.problemLocked("recovered from offset %d, the result says %d", f.offset, res.Offset)
	}
	for _, pub := range res.Publications {
		f.applyLocked(pub, true)
	}
}

func (f *follower) apply(pub *protocol.Publication, recovered bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applyLocked(pub, recovered)
}

func (f *follower) applyLocked(pub *protocol.Publication, recovered bool) {
	if pub.Offset != f.offset+1 {
		f.problemLocked("publication at offset %d after %d (recovered=%v)", pub.Offset, f.offset, recovered)
	}
	var data struct {
		N int `json:"n"`
	}
	if err := json.Unmarshal(pub.Data, &data); err != nil {
		f.problemLocked("publication data %q: %v", pub.Data, err)
	}
	f.got = append(f.got, delivery{offset: pub.Offset, epoch: f.epoch, n: data.N, recovered: recovered})
	f.offset = pub.Offset
	f.cond.Broadcast()
}

func (f *follower) problem(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problemLocked(format, args...)
}

func (f *follower) problemLocked(format string, args ...any) {
	if len(f.problems) < 20 {
		f.problems = append(f.problems, fmt.Sprintf(format, args...))
	}
	f.eventLocked("PROBLEM: "+format, args...)
	if f.beforeProblem == nil {
		f.beforeProblem = slices.Clone(f.events)
	}
}

func (f *follower) note(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if what == "resubscribe" {
		f.resubscribes++
	}
	f.eventLocked("%s", what)
}

func (f *follower) event(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eventLocked(format, args...)
}

func (f *follower) eventLocked(format string, args ...any) {
	const keep = 60
	if len(f.events) == keep {
		f.events = slices.Delete(f.events, 0, 1)
	}
	f.events = append(f.events, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
}

// waitSubscribed waits until the follower is subscribed.
func (f *follower) waitSubscribed(t testing.TB) {
	t.Helper()
	f.waitUntil(t, "subscribed", func() bool { return f.subscribed })
}

// waitOffset waits until the follower has everything up to offset.
func (f *follower) waitOffset(t testing.TB, offset uint64, limit time.Duration) {
	t.Helper()
	f.waitUntilFor(t, fmt.Sprintf("offset %d", offset), limit, func() bool { return f.offset >= offset })
}

func (f *follower) waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	f.waitUntilFor(t, what, waitLimit, cond)
}

// waitUntilFor waits until cond, called with f.mu held, is true; it fails
// the test after limit, with the follower's recent events.
func (f *follower) waitUntilFor(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	if condwait.Until(f.cond, limit, cond) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Fatalf("follower %s: no %s within %v (at offset %d); events:\n%s", f.name, what, limit, f.offset, strings.Join(f.events, "\n"))
}

// current returns the client ID of the follower's connection.
func (f *follower) current() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clientID
}

// verify checks that the follower holds publications 1..total of epoch,
// each once and in offset order, carrying every n in [0, total) once.
func (f *follower) verify(t testing.TB, total int, epoch string) (recovered int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(format string, args ...any) {
		t.Errorf("follower %s: %s; events:\n%s", f.name, fmt.Sprintf(format, args...), strings.Join(f.events, "\n"))
	}
	if len(f.problems) > 0 {
		fail("broken promises:\n  %s", strings.Join(f.problems, "\n  "))
	}
	if len(f.got) != total {
		fail("holds %d publications, want %d", len(f.got), total)
	}
	seen := make([]bool, total)
	for i, d := range f.got {
		if d.offset != uint64(i+1) || d.epoch != epoch {
			fail("publication %d is at %d/%s, want %d/%s", i, d.offset, d.epoch, i+1, epoch)
			return recovered
		}
		if d.n < 0 || d.n >= total || seen[d.n] {
			fail("publication %d carries n=%d: out of range or repeated", i, d.n)
			return recovered
		}
		seen[d.n] = true
		if d.recovered {
			recovered++
		}
	}
	return recovered
}
