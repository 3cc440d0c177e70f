package nats

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/backlog"
	"github.com/gyrehq/gyre/broker/nats/internal/wirepb"
)

// maxBatch bounds the messages a worker takes from its queue at once;
// what it takes together is handed to the engine in one HandleRuns.
const maxBatch = 512

// worker hands the messages of its share of the subscriptions to the
// engine, in the order NATS delivered them (each subscription's messages
// are in publish order per publisher). With a store it also puts each
// channel's publications in offset order (sequence) and fills gaps from
// the store.
type worker struct {
	b    *Broker
	in   chan *natsgo.Msg
	wake chan struct{}
	quit chan struct{}
	done chan struct{}

	// gen is the broker's connection count this worker has accounted for.
	gen uint64

	mu sync.Mutex
	// seqs are the channels subscribed here whose publications are put in
	// offset order (with a store); waiting those with publications held.
	seqs    map[string]*sequence
	waiting map[string]struct{}
	// drops are subscriptions whose messages NATS's client dropped.
	drops map[subKey]struct{}
	// lastData is the data of the last publication handed over of each
	// channel that had one asking for delta.
	lastData map[string][]byte

	timer *time.Timer
	out   output
}

// sequence is one channel's order: the next offset expected in epoch,
// and what arrived ahead of it.
type sequence struct {
	ready  bool // the stream top is known
	epoch  string
	next   uint64
	held   []heldPub // ordered by key, then after, then arrival
	heldAt time.Time // when the first of held arrived
}

// heldPub is a publication waiting in a sequence: one of the stream at
// offset key, or (after set) one without an offset that arrived behind
// the one at key and goes once the sequence is past it.
type heldPub struct {
	rp    broker.RunPublication
	key   uint64
	after bool
}

func (h heldPub) cmp(key uint64, after bool) int {
	if c := cmpOffset(h.key, key); c != 0 {
		return c
	}
	switch {
	case h.after == after:
		return 0
	case h.after:
		return 1
	}
	return -1
}

// firstInStream is the offset of the first held publication of the
// stream, 0 when only publications without one are held.
func (s *sequence) firstInStream() uint64 {
	for _, h := range s.held {
		if !h.after {
			return h.key
		}
	}
	return 0
}

func newWorker(b *Broker) *worker {
	w := &worker{
		b:        b,
		in:       make(chan *natsgo.Msg, b.cfg.QueueSize),
		wake:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		gen:      b.gen.Load(),
		seqs:     make(map[string]*sequence),
		waiting:  make(map[string]struct{}),
		drops:    make(map[subKey]struct{}),
		lastData: make(map[string][]byte),
		timer:    time.NewTimer(time.Hour),
	}
	w.timer.Stop()
	return w
}

func (w *worker) wakeUp() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) stop() {
	close(w.quit)
	<-w.done
}

func (w *worker) run() {
	defer close(w.done)
	batch := make([]*natsgo.Msg, 0, maxBatch)
	// A queue that stays non-empty tells the node it is behind, before
	// the NATS client's own buffer fills and drops messages.
	q := backlog.NewQueue(&w.b.backlog, cap(w.in), func() int { return len(w.in) })
	defer q.Stop()
	for {
		batch = batch[:0]
		select {
		case m := <-w.in:
			batch = append(batch, m)
		fill:
			for len(batch) < maxBatch {
				select {
				case m := <-w.in:
					batch = append(batch, m)
				default:
					q.Emptied()
					break fill
				}
			}
			q.Took(len(batch))
		case <-w.wake:
		case <-w.timer.C:
		case <-w.quit:
			return
		}
		// The subscriptions are listed before taking w.mu: the broker
		// takes w.mu holding its own lock.
		reconnected, owned := w.checkGeneration()
		w.mu.Lock()
		if reconnected {
			w.reconnected(owned)
		}
		w.checkDrops()
		for _, m := range batch {
			w.handle(m)
		}
		w.checkWaiting(time.Now())
		w.mu.Unlock()
		clear(batch)
		// The engine is called without w.mu: it may subscribe and
		// unsubscribe meanwhile.
		w.out.flush(w.b)
		if len(w.in) == 0 {
			q.Emptied()
		}
	}
}

// checkGeneration reports whether NATS was connected again since the
// last look, with this worker's subscriptions then.
func (w *worker) checkGeneration() (bool, []subKey) {
	gen := w.b.gen.Load()
	if gen == w.gen {
		return false, nil
	}
	w.gen = gen
	var owned []subKey
	w.b.mu.Lock()
	for k := range w.b.subs {
		if w.b.workerOf(k) == w {
			owned = append(owned, k)
		}
	}
	w.b.mu.Unlock()
	return true, owned
}

// reconnected accounts for a new connection to NATS: whatever was
// published while there was none never reached this node. Channels with
// a store catch up from it; the others, and patterns, are reported lost.
// w.mu must be held.
func (w *worker) reconnected(owned []subKey) {
	var channels, scopes []string
	for _, k := range owned {
		if k.scope != "" {
			scopes = append(scopes, k.scope)
		} else if w.seqs[k.name] == nil {
			channels = append(channels, k.name)
		}
	}
	for ch, s := range w.seqs {
		if s.ready {
			w.catchUp(ch, s)
		}
	}
	w.out.lost(channels, dedup(scopes))
}

// checkDrops reports what NATS's client dropped, as reconnected does.
func (w *worker) checkDrops() {
	if len(w.drops) == 0 {
		return
	}
	var channels, scopes []string
	for k := range w.drops {
		switch s := w.seqs[k.name]; {
		case k.scope != "":
			scopes = append(scopes, k.scope)
		case s != nil && s.ready:
			w.catchUp(k.name, s)
		case s == nil:
			channels = append(channels, k.name)
		}
	}
	clear(w.drops)
	w.out.lost(channels, dedup(scopes))
}

// dropped records that NATS's client dropped messages of k.
func (w *worker) dropped(k subKey) {
	w.mu.Lock()
	w.drops[k] = struct{}{}
	w.mu.Unlock()
	w.wakeUp()
}

// handle takes one message.
func (w *worker) handle(m *natsgo.Msg) {
	b := w.b
	var sub string
	if m.Sub != nil {
		sub = m.Sub.Subject
	}
	pattern := isWildcard(sub)
	if b.cfg.RawMode.Enabled {
		w.handleRaw(m, sub, pattern)
		return
	}
	var msg wirepb.Message
	if err := msg.UnmarshalVT(m.Data); err != nil {
		w.undecodable(m, sub, pattern, err)
		return
	}
	switch msg.Type {
	case publicationMessage:
		rp, err := decodeRunPublication(&msg)
		if err != nil {
			w.undecodable(m, sub, pattern, err)
			return
		}
		if pattern {
			scope, name := b.parseSubject(sub)
			w.out.add(broker.Run{Channel: msg.Channel, Scope: scope, Pattern: name}, rp)
			return
		}
		if s := w.seqs[msg.Channel]; s != nil && (rp.Position.Offset > 0 || len(s.held) > 0) {
			w.sequence(msg.Channel, s, rp)
			return
		}
		w.deliver(msg.Channel, rp)
	case joinMessage, leaveMessage:
		if pattern {
			return // join and leave are not for pattern subscribers
		}
		info, err := decodeInfo(msg.Info)
		if err != nil {
			w.undecodable(m, sub, pattern, err)
			return
		}
		w.out.event(msg.Type == joinMessage, msg.Channel, info)
	default:
		b.cfg.Logger.Warn("nats broker: unknown message type", "subject", m.Subject, "type", msg.Type)
	}
}

// handleRaw takes a message of raw mode: bare data, a publication of the
// subscribed channel, or of the one its subject names for a pattern.
func (w *worker) handleRaw(m *natsgo.Msg, sub string, pattern bool) {
	b := w.b
	pub := &broker.Publication{Data: m.Data, Time: time.Now().UnixMilli()}
	rp := broker.RunPublication{Pub: pub}
	if pattern {
		scope, name := b.split(b.rawChannel(sub))
		w.out.add(broker.Run{Channel: b.rawChannel(m.Subject), Scope: scope, Pattern: name}, rp)
		return
	}
	w.out.add(broker.Run{Channel: b.rawChannel(sub)}, rp)
}

// undecodable reports a message that cannot be read: its subscribers may
// have missed a publication.
func (w *worker) undecodable(m *natsgo.Msg, sub string, pattern bool, err error) {
	b := w.b
	scope, name := b.parseSubject(sub)
	b.cfg.Logger.Error("nats broker: undecodable message", "subject", m.Subject, "size", len(m.Data), "error", err)
	if pattern {
		w.out.lost(nil, []string{scope})
		return
	}
	w.out.lost([]string{b.joinScope(scope, name)}, nil)
}

// sequence hands rp, a publication of a channel with a stream, over in
// offset order: the next one expected goes at once (with what it
// unblocks), one ahead waits for those before it, a late or repeated one
// is dropped (the subscriber's position covers it).
func (w *worker) sequence(channel string, s *sequence, rp broker.RunPublication) {
	off := rp.Position.Offset
	if off == 0 {
		// Published without a stream behind those held: it goes after
		// the last of them.
		w.hold(channel, s, heldPub{rp: rp, key: s.held[len(s.held)-1].key, after: true})
		return
	}
	if s.ready && rp.Position.Epoch != s.epoch {
		if s.next == 1 {
			// Nothing was handed over from the old epoch (the stream was
			// empty when subscribed): the new one simply starts.
			s.epoch = rp.Position.Epoch
		} else {
			// The stream was reset: positions in the old epoch are
			// gone, so its subscribers lost state.
			w.out.lost([]string{channel}, nil)
			s.epoch, s.next = rp.Position.Epoch, off
			w.dropOtherEpochs(channel, s, true)
		}
	}
	if s.ready && off < s.next {
		return
	}
	if s.ready && off == s.next && len(s.held) == 0 {
		w.deliver(channel, rp)
		s.next++
		return
	}
	if _, found := slices.BinarySearchFunc(s.held, off, func(h heldPub, o uint64) int { return h.cmp(o, false) }); found {
		return
	}
	w.hold(channel, s, heldPub{rp: rp, key: off})
	if s.ready {
		w.release(channel, s)
	}
}

// hold adds h to the held publications, after those with the same key.
func (w *worker) hold(channel string, s *sequence, h heldPub) {
	i := len(s.held)
	for i > 0 && s.held[i-1].cmp(h.key, h.after) > 0 {
		i--
	}
	s.held = slices.Insert(s.held, i, h)
	if len(s.held) == 1 {
		s.heldAt = time.Now()
	}
	w.markWaiting(channel)
}

// dropOtherEpochs drops held publications of other epochs than s's.
// After a reset (reset set) those without an offset, whose place was in
// the old epoch, are handed over at once.
func (w *worker) dropOtherEpochs(channel string, s *sequence, reset bool) {
	s.held = slices.DeleteFunc(s.held, func(h heldPub) bool {
		if h.after {
			if reset {
				w.deliver(channel, h.rp)
			}
			return reset
		}
		return h.rp.Position.Epoch != s.epoch
	})
}

func cmpOffset(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// deliver hands over rp, a publication for the channel's own
// subscribers. A delta goes against the publication handed over before
// it, and only then: the base the publisher got from the store may be
// older (a publication without delta skips the store) or the node may
// have joined since, so that a delta whose base is not the last
// publication here goes in full.
func (w *worker) deliver(channel string, rp broker.RunPublication) {
	last, tracked := w.lastData[channel]
	if rp.Delta || tracked {
		if rp.Prev != nil && !(tracked && bytes.Equal(rp.Prev.Data, last)) {
			rp.Prev = nil
		}
		w.lastData[channel] = rp.Pub.Data
	}
	w.out.add(broker.Run{Channel: channel}, rp)
}

// forget drops what deliver kept of the channel.
func (w *worker) forget(channel string) {
	w.mu.Lock()
	delete(w.lastData, channel)
	w.mu.Unlock()
}

// release hands over the held publications that are next in order.
func (w *worker) release(channel string, s *sequence) {
	n := 0
	for _, h := range s.held {
		if h.after {
			if s.next <= h.key {
				break
			}
		} else {
			if h.key > s.next {
				break
			}
			if h.key < s.next {
				n++ // handed over already
				continue
			}
			s.next++
		}
		w.deliver(channel, h.rp)
		n++
	}
	if n > 0 {
		clear(s.held[:n])
		s.held = s.held[n:]
		if len(s.held) > 0 {
			s.heldAt = time.Now()
		}
	}
}

func (w *worker) markWaiting(channel string) {
	w.waiting[channel] = struct{}{}
}

// checkWaiting fills the gaps that waited long enough from the store and
// arms the timer for the others.
func (w *worker) checkWaiting(now time.Time) {
	var soonest time.Duration
	for ch := range w.waiting {
		s := w.seqs[ch]
		if s == nil {
			delete(w.waiting, ch)
			continue
		}
		wait := w.b.cfg.ReorderWait
		if !s.ready {
			continue // ready wakes the worker
		}
		w.release(ch, s)
		if len(s.held) == 0 {
			delete(w.waiting, ch)
			continue
		}
		if left := wait - now.Sub(s.heldAt); left > 0 {
			if soonest == 0 || left < soonest {
				soonest = left
			}
			continue
		}
		if first := s.firstInStream(); first > 0 {
			w.fill(ch, s, first-1)
		}
		w.release(ch, s)
		if len(s.held) == 0 {
			delete(w.waiting, ch)
		} else {
			s.heldAt = now
			if soonest == 0 || w.b.cfg.ReorderWait < soonest {
				soonest = w.b.cfg.ReorderWait
			}
		}
	}
	if soonest > 0 {
		w.timer.Reset(soonest)
	}
}

// catchUp hands over from the store what the channel's stream has past
// what was handed over (a connection to NATS was down, or messages were
// dropped), reporting the channel lost where the store cannot give all
// of it.
func (w *worker) catchUp(channel string, s *sequence) {
	_, top, err := w.b.store.History(channel, broker.HistoryOptions{Peek: true})
	switch {
	case err != nil:
		w.b.cfg.Logger.Warn("nats broker: stream top after an interruption", "channel", channel, "error", err)
		w.out.lost([]string{channel}, nil)
		return
	case top.Epoch != s.epoch && s.next == 1:
		// Nothing was handed over from the old epoch: the new one starts.
		s.epoch = top.Epoch
		w.fill(channel, s, top.Offset)
	case top.Epoch != s.epoch:
		w.out.lost([]string{channel}, nil)
		s.epoch, s.next = top.Epoch, top.Offset+1
		w.dropOtherEpochs(channel, s, true)
	default:
		w.fill(channel, s, top.Offset)
	}
	w.release(channel, s)
}

// fill hands over the publications from s.next to upto, read from the
// store; where the store no longer has some (evicted, expired), the
// channel is reported lost in their place, before what follows them.
func (w *worker) fill(channel string, s *sequence, upto uint64) {
	if upto < s.next {
		return
	}
	pubs, _, err := w.b.store.History(channel, broker.HistoryOptions{MetaTTL: peekTTL, Filter: broker.HistoryFilter{
		Since: &broker.StreamPosition{Offset: s.next - 1, Epoch: s.epoch},
		Limit: int(upto - s.next + 1),
	}})
	if err != nil {
		w.b.cfg.Logger.Warn("nats broker: reading missed publications from the store", "channel", channel, "error", err)
		pubs = nil
	}
	lost := false
	for _, p := range pubs {
		if p.Offset < s.next || p.Offset > upto {
			continue
		}
		if p.Offset > s.next && !lost {
			w.out.lost([]string{channel}, nil)
			lost = true
		}
		s.next = p.Offset
		w.deliver(channel, broker.RunPublication{Pub: p, Position: broker.StreamPosition{Offset: p.Offset, Epoch: s.epoch}})
		s.next++
	}
	if s.next <= upto {
		if !lost {
			w.out.lost([]string{channel}, nil)
		}
		s.next = upto + 1
	}
}

// track starts ordering the channel's publications; they wait until
// ready gives the stream top.
func (w *worker) track(channel string) {
	w.mu.Lock()
	if w.seqs[channel] == nil {
		w.seqs[channel] = &sequence{}
	}
	w.mu.Unlock()
}

// ready gives the channel's sequence the stream top its subscribers
// start from.
func (w *worker) ready(channel string, top broker.StreamPosition) {
	w.mu.Lock()
	if s := w.seqs[channel]; s != nil && !s.ready {
		w.setReady(channel, s, top)
	}
	w.mu.Unlock()
	w.wakeUp()
}

// setReady starts the channel's order after top: publications at or
// before it were published before the subscribers' start and are
// dropped, those after it go in order. w.mu must be held; it hands
// nothing over itself.
func (w *worker) setReady(channel string, s *sequence, top broker.StreamPosition) {
	s.ready, s.epoch, s.next = true, top.Epoch, top.Offset+1
	if first := s.firstInStream(); first > 0 {
		if h := s.held[slices.IndexFunc(s.held, func(h heldPub) bool { return !h.after })]; h.rp.Position.Epoch != top.Epoch {
			// Published after a reset that happened after the top was
			// read: start from it.
			s.epoch, s.next = h.rp.Position.Epoch, first
		}
	}
	w.dropOtherEpochs(channel, s, false)
	if len(s.held) > 0 {
		// The worker hands them over (checkWaiting): the output is its
		// alone, and ready runs on the subscriber's goroutine.
		w.markWaiting(channel)
	}
}

func (w *worker) untrack(channel string) {
	w.mu.Lock()
	delete(w.seqs, channel)
	delete(w.waiting, channel)
	w.mu.Unlock()
}

// isWildcard reports whether a subscription's subject has a wildcard
// token: escaping keeps every channel's subject free of them.
func isWildcard(subject string) bool {
	for tok := range strings.SplitSeq(subject, ".") {
		if tok == "*" || tok == ">" {
			return true
		}
	}
	return false
}

// parseSubject is the scope and name a subject (outside raw mode) was
// made of, wildcards kept.
func (b *Broker) parseSubject(subject string) (scope, name string) {
	rest := strings.TrimPrefix(subject, b.channelBase)
	first, rest, _ := strings.Cut(rest, ".")
	var sb strings.Builder
	for i, tok := range strings.Split(rest, ".") {
		if i > 0 {
			sb.WriteByte('.')
		}
		if tok == "*" || tok == ">" {
			sb.WriteString(tok)
			continue
		}
		sb.WriteString(unescapeToken(tok))
	}
	return unescapeToken(first), sb.String()
}

// unescapeToken is the inverse of escapeToken.
func unescapeToken(tok string) string {
	if tok == "%" {
		return ""
	}
	if !strings.Contains(tok, "%") {
		return tok
	}
	out := make([]byte, 0, len(tok))
	for i := 0; i < len(tok); i++ {
		if tok[i] == '%' && i+2 < len(tok) {
			out = append(out, unhex(tok[i+1])<<4|unhex(tok[i+2]))
			i += 2
			continue
		}
		out = append(out, tok[i])
	}
	return string(out)
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}

func dedup(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
