package gyre

import (
	"errors"
	"sync"
	"time"
	"unsafe"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// brokerEvents receives what the broker delivers and fans it out to the
// local subscribers.
type brokerEvents struct{ n *Node }

var (
	_ broker.EventHandler            = (*brokerEvents)(nil)
	_ broker.SubscriptionLostHandler = (*brokerEvents)(nil)
	_ broker.PatternScopeLostHandler = (*brokerEvents)(nil)
)

// HandleRuns fans out what the broker handed over together, waking each
// connection once for all of it.
func (e *brokerEvents) HandleRuns(runs []broker.Run) error {
	b := e.n.getBurst()
	defer e.n.putBurst(b)
	e.n.broadcastRuns(runs, b)
	return nil
}

func (e *brokerEvents) HandleJoin(channel string, info *broker.ClientInfo) error {
	e.n.obs.BrokerReceived("join", 1)
	e.n.broadcastJoinLeave(channel, &protocol.Push{Channel: channel, Join: &protocol.Join{Info: toProtoInfo(info)}})
	return nil
}

func (e *brokerEvents) HandleLeave(channel string, info *broker.ClientInfo) error {
	e.n.obs.BrokerReceived("leave", 1)
	e.n.broadcastJoinLeave(channel, &protocol.Push{Channel: channel, Leave: &protocol.Leave{Info: toProtoInfo(info)}})
	return nil
}

func (e *brokerEvents) HandleControl(data []byte) error {
	return e.n.handleControl(data)
}

// broadcastRuns hands the runs a broker delivered together to the local
// subscribers, queuing through burst b: the channels' own subscribers for
// a run without a scope, the matching pattern subscribers for a run with
// one.
func (n *Node) broadcastRuns(runs []broker.Run, b *burst) {
	pubs := 0
	for i := range runs {
		pubs += len(runs[i].Pubs)
	}
	n.obs.BrokerReceived("publication", pubs)
	for i := range runs {
		r := &runs[i]
		if r.Scope == "" {
			n.broadcastRun(r.Channel, r.Pubs, b)
		} else {
			n.broadcastPatternRun(r.Scope, r.Pattern, r.Channel, r.Pubs, b)
		}
	}
}

// broadcastRun hands a run of publications of one channel, one or more,
// to every local subscriber, encoding each publication at most once per
// wire variant and not at all when the channel has no subscribers here. A
// subscriber that takes all of them as published (nearly every one) is
// given the whole run in one queue operation; the others (tag filters,
// delta compression, still subscribing) go publication by publication.
// It runs on the broker's goroutine for the channel, so the run is queued
// before anything published after it.
//
// For subscribers with delta compression, a publication that may go as a
// delta does when the subscriber got its predecessor, else in full.
func (n *Node) broadcastRun(channel string, run []broker.RunPublication, b *burst) {
	subs := n.hub.subscribers(channel)
	if subs.len() == 0 || len(run) == 0 {
		return
	}
	start := time.Now()
	encs := b.encs[:0]
	for _, rp := range run {
		enc := publicationPush(channel, rp.Pub, rp.Delta, rp.Prev)
		enc.channelID, enc.epoch, enc.bodies = subs.id, rp.Position.Epoch, &b.bodies
		encs = append(encs, enc)
	}
	tracer := n.cfg.DeliveryTracer
	traced := traces(tracer, run)
	if traced {
		b.countFates(len(run))
	}
	n.fanOutRun(subs, channel, encs, b)
	if traced {
		b.fannedOut(tracer, run, channel, "", subs.len(), start)
	}
	n.observeRun(len(run), subs.len(), start)
	clear(encs)
	b.encs = encs[:0]
}

// observeRun reports the broadcast of a run of runLen publications to
// subs subscribers, begun at start (what b tallied of it is reported
// when b is flushed). The histogram is of one publication's broadcast:
// each of the run's is counted at the run's average.
func (n *Node) observeRun(runLen, subs int, start time.Time) {
	per := time.Since(start) / time.Duration(runLen)
	for range runLen {
		n.obs.Broadcast(subs, per)
	}
}

// fanOutRun hands a run of publications, encs, to the subscribers subs,
// tallying what it queued in b.sent, and, when b.fates is set, what
// became of each publication. A subscriber that takes all of them as
// published is given the whole run in one queue operation, from messages
// encoded once per wire format; the others go publication by
// publication.
func (n *Node) fanOutRun(subs *subList, channel string, encs []encodedPush, b *burst) {
	// The first offset of the run: a positioned subscriber that has it
	// already (a broker delivering through pub/sub may hand over what a
	// subscriber read from the stream top) goes publication by
	// publication, which drops what it covers.
	// A run that skips offsets inside (see subscription.follows) goes
	// publication by publication to positioned subscribers, which then
	// find the gap.
	var first, prev uint64
	var epoch string
	contiguous := true
	for i := range encs {
		if off := encs[i].offset(); off > 0 {
			if first == 0 {
				first, epoch = off, encs[i].epoch
			} else if off != prev+1 || encs[i].epoch != epoch {
				contiguous = false
			}
			prev = off
		}
	}
	whole := &b.whole
	defer whole.reset()
	fs := b.fates // nil unless the run is traced: then counted, else not
	for _, chunk := range subs.chunks {
		for _, s := range chunk {
			if s.takesAll() && !s.covers(first) && (!s.positioned || s.isMap || contiguous && s.follows(first, epoch)) {
				if wr := whole.forClient(encs, s.client, s.shape); wr != nil {
					queued := true
					if len(wr.msgs) > 0 {
						queued = s.deliverRun(wr.msgs, wr.size, wr.last, &b.wake)
						b.sent.add(s.client.tslot, wr.pubs, wr.size)
					}
					if wr.err != nil {
						n.undeliverable(s.client, channel, wr.err)
					}
					if fs != nil {
						b.countWhole(wr.pubs, queued)
					}
					continue
				}
			}
			for i := range encs {
				f := n.deliverOne(s, channel, &encs[i], b)
				if fs != nil {
					fs[i][f]++
				}
			}
		}
	}
}

// deliverOne hands one publication to one subscriber, through its tag
// filter and in the payload variant it takes, tallying it in b.sent, and
// returns what became of it.
func (n *Node) deliverOne(s *subscription, channel string, enc *encodedPush, b *burst) fate {
	offset := enc.offset()
	if s.covers(offset) {
		return fateHad
	}
	if !s.filter.Match(enc.tags()) {
		s.skip(offset, enc.epoch)
		b.sent.filtered++
		return fateFiltered
	}
	msg := enc.forClient(s.client, s.shape, s.payloadVariant(enc.canDelta))
	if msg == nil {
		n.undeliverable(s.client, channel, enc.err)
		return fateDropped
	}
	f := s.deliver(msg, offset, enc.epoch, &b.wake)
	b.sent.add(s.client.tslot, 1, len(msg))
	return f
}

// wholeRuns holds a run as sent to the subscribers that take all of it,
// by [protocol type][shape], made for the first one of each; its buffers
// are kept between runs. Subscribers with permessage-deflate take the run
// as frames, made with the Compression of the first one (framedBy).
type wholeRuns struct {
	runs [2][numShapes]wholeRun
	made [2][numShapes]bool

	framed     [2][numShapes]wholeRun
	framedMade [2][numShapes]bool
	framedBy   *websocket.Compression
}

// forClient returns the run as c's queue takes it, or nil for a client
// whose Compression is not the one the run's frames were made with, which
// then goes publication by publication.
func (w *wholeRuns) forClient(encs []encodedPush, c *Client, shape uint8) *wholeRun {
	z := c.deflate
	if z == nil {
		return w.get(encs, c.proto, shape)
	}
	if w.framedBy == nil {
		w.framedBy = z
	} else if w.framedBy != z {
		return nil
	}
	wr := &w.framed[c.proto][shape]
	if !w.framedMade[c.proto][shape] {
		w.framedMade[c.proto][shape] = true
		wr.encode(encs, c.proto, shape, z)
	}
	return wr
}

// get returns the run encs encoded for protocol t and shape, encoding it
// on the first call.
func (w *wholeRuns) get(encs []encodedPush, t protocol.Type, shape uint8) *wholeRun {
	wr := &w.runs[t][shape]
	if !w.made[t][shape] {
		w.made[t][shape] = true
		wr.encode(encs, t, shape, nil)
	}
	return wr
}

// reset forgets the runs made, keeping their buffers.
func (w *wholeRuns) reset() {
	for t := range w.runs {
		for shape := range w.runs[t] {
			if w.made[t][shape] {
				w.runs[t][shape].reset()
				w.made[t][shape] = false
			}
			if w.framedMade[t][shape] {
				w.framed[t][shape].reset()
				w.framedMade[t][shape] = false
			}
		}
	}
	w.framedBy = nil
}

// wholeRun is a run of publications encoded for subscribers of one wire
// format that take all of them.
type wholeRun struct {
	msgs []string
	size int
	// pubs is how many publications msgs carry: one each, or all of them
	// in the one frame of a compressed run.
	pubs int
	// last is the offset of the last publication in msgs that has one
	// (those published without history have none).
	last uint64
	// err, when set, is why the publication after msgs could not be
	// encoded; the subscriber gets msgs and is then disconnected.
	err error
}

// encode makes the run for protocol t and shape: encoded messages, or
// with z set, WebSocket frames made with it. A run of several
// publications for subscribers with compression is one frame, the
// messages joined as in an uncompressed frame and compressed together,
// once for all of them: deflate then finds what the publications repeat
// of each other, as it would in a frame compressed per connection. Bare
// pushes (unidirectional WebSocket) stay one a frame: their clients may
// not expect several in one.
func (wr *wholeRun) encode(encs []encodedPush, t protocol.Type, shape uint8, z *websocket.Compression) {
	if z != nil && (len(encs) == 1 || shape == shapeUni) {
		for i := range encs {
			if !wr.add(encs[i].frame(t, z, shape, variantPlain), &encs[i]) {
				break
			}
		}
		return
	}
	for i := range encs {
		if !wr.add(encs[i].get(t, shape, variantPlain), &encs[i]) {
			break
		}
	}
	if z != nil && len(wr.msgs) > 0 {
		joined := protocol.JoinFrame(make([]byte, 0, wr.size+len(wr.msgs)), t, wr.msgs)
		frame := z.AppendFrame(make([]byte, 0, len(joined)/2+16), t == protocol.TypeProtobuf, joined)
		clear(wr.msgs)
		wr.msgs = append(wr.msgs[:0], unsafe.String(unsafe.SliceData(frame), len(frame)))
		wr.size = len(frame)
	}
}

// add appends msg, enc's message (nil: it could not be encoded), and
// reports whether it could.
func (wr *wholeRun) add(msg []byte, enc *encodedPush) bool {
	if msg == nil {
		wr.err = enc.err
		return false
	}
	wr.msgs = append(wr.msgs, unsafe.String(unsafe.SliceData(msg), len(msg)))
	wr.size += len(msg)
	wr.pubs++
	if off := enc.offset(); off > 0 {
		wr.last = off
	}
	return true
}

func (wr *wholeRun) reset() {
	clear(wr.msgs) // the messages must not stay alive with the burst
	*wr = wholeRun{msgs: wr.msgs[:0]}
}

func (n *Node) broadcastJoinLeave(channel string, push *protocol.Push) {
	subs := n.hub.subscribers(channel)
	if subs.len() == 0 {
		return
	}
	enc := encodedPush{push: push, sizeHint: 128 + 2*len(channel), channelID: subs.id}
	var sent deliveries
	defer sent.report(n, pushKind(push))
	for _, chunk := range subs.chunks {
		for _, s := range chunk {
			if !s.pushJoinLeave {
				continue
			}
			msg := enc.forClient(s.client, s.shape, variantPlain)
			if msg == nil {
				n.undeliverable(s.client, channel, enc.err)
				continue
			}
			s.deliver(msg, 0, "", nil)
			sent.add(s.client.tslot, 1, len(msg))
		}
	}
}

// undeliverable handles a message that cannot be encoded for a client:
// binary data for a JSON client closes it with 3506, as the protocol
// says, since skipping the message would leave a silent gap.
func (n *Node) undeliverable(c *Client, channel string, err error) {
	if errors.Is(err, errNotJSON) {
		n.log.Info("binary payload for a JSON client", "client", c.id, "channel", channel)
		go c.Disconnect(DisconnectBadProtocol)
		return
	}
	n.log.Error("encode push", "client", c.id, "channel", channel, "error", err)
	go c.Disconnect(DisconnectServerError)
}

// HandleSubscriptionLost is called by brokers that can lose their
// subscriptions (Redis restarting) once the channels are subscribed again:
// publications may have been missed in between. Subscribers that were
// promised continuity (recoverable or positioned) are unsubscribed with
// 2500, so they resubscribe and recover from history; never a silent gap.
// So are map subscribers, whatever their mode: a map subscriber's state
// is only whole with every change.
//
// The others, of channels without history, have at-most-once delivery:
// they are not told (there is nothing to recover from), and are counted
// (Observer.SubscriptionsLost) and logged, one line per episode.
func (e *brokerEvents) HandleSubscriptionLost(channels []string) error {
	n := e.n
	told, atMostOnce := 0, 0
	for _, ch := range channels {
		for s := range n.hub.subscribers(ch).all() {
			if s.recoverable || s.positioned || s.isMap {
				// No live publication may reach the subscriber after the
				// gap: it would move the client's position past what it
				// missed, and recovery from there would skip it.
				if loseState(s) {
					told++
				}
			} else {
				atMostOnce++
			}
		}
	}
	if len(channels) > 0 {
		n.obs.SubscriptionsLost(told, atMostOnce)
		n.lossLog.add(n, len(channels), told, atMostOnce)
	}
	return nil
}

// lossLog writes one line per episode of interrupted broker
// subscriptions: a pub/sub connection that comes back resubscribes its
// channels in batches, each reported on its own, and the line sums what a
// second of them reported.
type lossLog struct {
	mu                             sync.Mutex
	pending                        bool
	channels, scopes, told, atMost int
}

func (l *lossLog) add(n *Node, channels, told, atMostOnce int) {
	l.addScopes(n, channels, 0, told, atMostOnce)
}

func (l *lossLog) addScopes(n *Node, channels, scopes, told, atMostOnce int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.channels += channels
	l.scopes += scopes
	l.told += told
	l.atMost += atMostOnce
	if !l.pending {
		l.pending = true
		time.AfterFunc(time.Second, func() { l.flush(n) })
	}
}

func (l *lossLog) flush(n *Node) {
	l.mu.Lock()
	channels, scopes, told, atMost := l.channels, l.scopes, l.told, l.atMost
	l.channels, l.scopes, l.told, l.atMost, l.pending = 0, 0, 0, 0, false
	l.mu.Unlock()
	n.log.Warn("broker subscriptions were interrupted: publications may have been missed; subscribers of recoverable channels were told to resubscribe, those of channels without history were not (at-most-once delivery)",
		"channels", channels, "pattern_scopes", scopes, "subscribers_told", told, "subscribers_at_most_once", atMost)
}

// loseState ends s, which may have missed publications, and tells its
// client that it lost state: an unsubscribe push 2500, after which the
// SDK subscribes again (recovering where it can), or, for a server-side
// subscription, which the client cannot subscribe again, disconnect 3010,
// after which it reconnects. It must run on the goroutine that delivers
// s's publications (see subscription.interrupt). It reports false when s
// was closed already, and nobody is told.
func loseState(s *subscription) bool {
	return s.interrupt(lossTell(s))
}

// lossTell is how loseState tells s's client.
func lossTell(s *subscription) func() {
	c := s.client
	if s.serverSide {
		return func() { c.Disconnect(DisconnectInsufficientState) }
	}
	return func() { c.unsubscribeSub(s, UnsubscribeCodeInsufficientState, "insufficient state") }
}
