package gyre

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/filter"
)

// Subscription states. A subscription is added to the hub as pending before
// its subscribe reply is built, so that nothing published meanwhile is lost;
// publications that arrive while it is pending are held and sent right after
// the reply.
const (
	subPending uint32 = iota
	subActive
	subClosed
)

// States of subscription.observed.
const (
	obsNew uint32 = iota
	obsCounted
	obsEnded
)

// subscription is one client's subscription to one channel.
type subscription struct {
	client  *Client
	channel string
	opts    *ChannelOptions

	state atomic.Uint32
	// hubPos is the subscription's place in its channel's subscriber list
	// while it is in it; guarded by the hub shard's lock.
	hubPos int32
	// offset of the last publication delivered, for positioning.
	offset atomic.Uint64
	epoch  string
	// checkedTop is the stream top seen at the last position check; only
	// the position checker touches it.
	checkedTop uint64

	// scope is set on a pattern subscription: the pattern scope of its
	// namespace (see channelRules.patternScope); channel is the pattern,
	// and its last nameLen bytes the pattern within the scope.
	scope   string
	nameLen int32
	// observed follows the subscription in the Observer's count (obsNew,
	// obsCounted, obsEnded), so that its end is counted once and only
	// after its start, whichever path ends it.
	observed atomic.Uint32

	pushJoinLeave bool
	// isMap: a subscription to a map channel (see client_map.go).
	isMap bool
	// mapPresence: the subscription keeps the client in its channel's map
	// presence (map_presence.go).
	mapPresence bool
	positioned  bool
	recoverable bool
	serverSide  bool
	// serverRefresh: the node's sub-refresh handler prolongs the
	// subscription at its expiry (guarded by the client's mu).
	serverRefresh bool
	// filter drops publications the subscriber does not want; nil passes
	// everything.
	filter *filter.Filter
	// delta: the subscriber negotiated fossil delta compression.
	delta bool
	// shape is how its pushes are framed (shapeReply, shapeUni or
	// shapeCompact); channelID is the number that replaces the channel
	// name with shapeCompact.
	shape     uint8
	channelID int64
	// deltaBase is set once the subscriber received a live publication, so
	// that it holds the payload the next delta applies to. Only the
	// channel's broadcasts touch it, and the broker never runs two of them
	// at once for one channel.
	deltaBase bool
	presence  bool // this client is in the channel's presence
	joinLeave bool // this client's join/leave is published
	chanInfo  []byte
	expireAt  int64       // unix seconds, 0: never; guarded by client.mu
	expTimer  *time.Timer // guarded by client.mu

	mu sync.Mutex
	// held publications that arrived while pending; holdLimit, when
	// positive, bounds them: past it they are dropped and overflow set
	// (a map subscription then fails to go live, see mapGoLive).
	held      []heldMessage
	holdLimit int
	overflow  bool
	// tellLost, set on a pending subscription whose delivery had a gap
	// (interrupt), is run by activate instead of activating.
	tellLost func()
	// stream, when set, feeds the subscription besides its channel.
	stream *subStream
	// poll is set on a shared-poll subscription: its tracked keys.
	poll *pollSub
}

type heldMessage struct {
	offset uint64
	epoch  string // of the stream the publication is in; "" for none
	msg    []byte
}

// deliver sends one encoded publication (or join/leave: offset 0) to the
// subscriber, in the form its client's queue takes (encodedPush.forClient),
// and returns what became of it. It never blocks on the network.
func (s *subscription) deliver(msg []byte, offset uint64, epoch string, l *wakeList) fate {
	if s.state.Load() != subActive {
		s.mu.Lock()
		switch s.state.Load() {
		case subPending:
			if s.holdLimit > 0 && len(s.held) >= s.holdLimit {
				s.held, s.overflow = nil, true
			}
			f := fateDropped
			if !s.overflow {
				s.held = append(s.held, heldMessage{offset: offset, epoch: epoch, msg: msg})
				f = fateReached
			}
			s.mu.Unlock()
			return f
		case subClosed:
			s.mu.Unlock()
			return fateDropped
		}
		s.mu.Unlock()
	}
	// The subscription may have been activated since the caller's covers
	// check: activation set the position the subscriber was told of,
	// which may already count this publication.
	if s.covers(offset) {
		return fateHad
	}
	if !s.follows(offset, epoch) {
		loseState(s)
		return fateDropped
	}
	if offset > 0 {
		s.offset.Store(offset)
	}
	if !s.client.enqueueIn(msg, l) {
		return fateDropped
	}
	return fateReached
}

// covers reports whether a positioned subscriber has a publication at
// offset already, or was told it has it: its subscribe result's position
// or a publication it was given is at or past it. A broker that delivers
// through a subscription of its own (Redis pub/sub) may hand over a
// publication after the subscriber read a stream top that counts it; sent
// again, it would repeat an offset and, with delta compression, break the
// chain the next delta builds on.
//
// Only a positioned subscriber holds a position in one epoch. Offsets
// start again at 1 in a new epoch (the stream expired, Redis lost it): a
// positioned subscriber is then unsubscribed with 2500 by the position
// check or the broker's subscription-lost handling, to recover or reload;
// any other subscriber just goes on receiving.
func (s *subscription) covers(offset uint64) bool {
	return s.positioned && offset > 0 && offset <= s.offset.Load()
}

// follows reports whether a publication at offset in the stream of epoch
// may reach the subscriber without a gap: offset comes right after its
// position, in its epoch (an empty epoch, the publication's or the
// subscriber's, is not compared), or the subscriber keeps no position
// (not positioned, a map subscription, a publication without offset). A
// positioned subscriber's broker hands each node every publication of
// the channel in offset order; one that skips offsets, or comes from
// another epoch, means some were lost on the way (a Redis failover: a
// node still reading the old master while a recovery read the new one,
// which lacks its last writes, or the new master starting an epoch of
// its own), and the subscriber must be told, not given the next one as
// if nothing was missed. covers is checked first. s must be active, or
// mu held at activation: s.epoch is set while it subscribes.
func (s *subscription) follows(offset uint64, epoch string) bool {
	return s.followsFrom(s.offset.Load(), offset, epoch)
}

// followsFrom is follows from position pos instead of the subscriber's.
func (s *subscription) followsFrom(pos, offset uint64, epoch string) bool {
	if !s.positioned || s.isMap || offset == 0 {
		return true
	}
	return offset == pos+1 && (epoch == "" || s.epoch == "" || epoch == s.epoch)
}

// takesAll reports whether the subscriber is given every publication of
// its channel as published: active, with no tag filter and no delta
// compression.
func (s *subscription) takesAll() bool {
	return s.filter == nil && !s.delta && s.state.Load() == subActive
}

// deliverRun queues a run of encoded publications, size bytes in all, for
// a subscriber that takes all of them (takesAll, and none is covered);
// last is the offset of the last one. It reports whether they were
// queued.
func (s *subscription) deliverRun(msgs []string, size int, last uint64, l *wakeList) bool {
	if last > 0 {
		s.offset.Store(last)
	}
	return s.client.enqueueRunIn(msgs, size, l)
}

// payloadVariant picks how a publication goes to this subscriber: plain
// without delta compression; with it, a delta when the publication may be
// one and the subscriber holds its predecessor, else in full. Publications
// held while pending go in full, since held ones before the subscriber's
// position are dropped at activation.
//
// A map subscriber's deltas are per key: once live it holds every key's
// value (from the state, the catch-up, and each change since), which is
// what a change's delta is made against (the key's previous value the
// broker hands over); a key without one goes in full.
func (s *subscription) payloadVariant(canDelta bool) int {
	if !s.delta {
		return variantPlain
	}
	active := s.settledState() == subActive
	if s.isMap {
		if canDelta && active {
			return variantDelta
		}
		return variantFull
	}
	if canDelta && s.deltaBase && active {
		return variantDelta
	}
	if active {
		s.deltaBase = true
	}
	return variantFull
}

// settledState is s's state once an activation under way has finished.
// Activation holds mu from before the subscribe reply is queued until s
// is active, so a publication made after the client read its reply finds
// s active here and takes the variant of a live subscriber (a map key's
// delta), not the full payload of one held while pending.
func (s *subscription) settledState() uint32 {
	st := s.state.Load()
	if st == subPending {
		s.mu.Lock()
		st = s.state.Load()
		s.mu.Unlock()
	}
	return st
}

// skip records that a publication was filtered out for this subscriber:
// its position still moves, so that the position check sees no gap.
func (s *subscription) skip(offset uint64, epoch string) {
	if offset == 0 {
		return
	}
	if s.state.Load() != subActive {
		s.mu.Lock()
		if s.state.Load() == subPending {
			// Its place among the held ones, for activation to see the
			// offsets follow on.
			if s.positioned && !s.overflow {
				s.held = append(s.held, heldMessage{offset: offset, epoch: epoch})
			}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if s.state.Load() != subActive {
			return
		}
	}
	if s.covers(offset) {
		return
	}
	if !s.follows(offset, epoch) {
		loseState(s)
		return
	}
	s.offset.Store(offset)
}

// activate releases held publications that come after the position the
// client was given (top) and switches to direct delivery. It must be called
// after the subscribe reply was enqueued.
func (s *subscription) activate(top uint64) {
	s.activateAfter(top, nil)
}

// activateAfter runs send, which queues the subscribe reply (or push), and
// activates s, holding mu throughout: a delivery that finds s pending
// waits in settledState until s is active, so nothing published after
// the client could read the reply is treated as held.
func (s *subscription) activateAfter(top uint64, send func()) {
	s.mu.Lock()
	if send != nil {
		send()
	}
	if tell := s.tellLost; tell != nil && s.state.Load() == subPending {
		s.tellLost = nil
		s.closeAndTell(tell)
		return
	}
	if s.state.Load() != subPending {
		s.mu.Unlock()
		return
	}
	if top > 0 {
		s.offset.Store(top)
	}
	if !s.heldFollow() {
		// What was held skips offsets past the position the client was
		// given: tell it, right after its reply.
		s.closeAndTell(lossTell(s))
		return
	}
	for _, h := range s.held {
		if h.offset != 0 && h.offset <= s.offset.Load() {
			continue
		}
		if h.offset > 0 {
			s.offset.Store(h.offset)
		}
		if h.msg != nil { // nil: filtered out, held for its offset
			s.client.enqueueIn(h.msg, nil) // held in the client's queue form
		}
	}
	s.held = nil
	s.state.Store(subActive)
	s.mu.Unlock()
}

// heldFollow reports whether the publications held after the position
// follow on from it without a gap (see follows). mu is held.
func (s *subscription) heldFollow() bool {
	pos := s.offset.Load()
	for _, h := range s.held {
		if h.offset == 0 || h.offset <= pos {
			continue
		}
		if !s.followsFrom(pos, h.offset, h.epoch) {
			return false
		}
		pos = h.offset
	}
	return true
}

// overflowed reports whether s, pending, held more than its holdLimit.
func (s *subscription) overflowed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overflow
}

func (s *subscription) close() {
	s.mu.Lock()
	s.state.Store(subClosed)
	s.held = nil
	s.mu.Unlock()
	s.stream.end()
}

// interrupt ends s after a gap in what its broker delivered: it closes s
// and runs tell, on a goroutine of its own, to let the client know. It is
// called on the goroutine that delivers s's publications, so that nothing
// delivered after the gap reaches s before it is closed. A pending
// subscription is closed and told by activate, right after its subscribe
// reply, so that the client never hears of the loss before it hears of
// the subscription; until then what arrives is held, and dropped. A
// subscription already closed is left alone (told is false).
func (s *subscription) interrupt(tell func()) (told bool) {
	s.mu.Lock()
	switch s.state.Load() {
	case subPending:
		s.tellLost = tell
		s.mu.Unlock()
		return true
	case subClosed:
		s.mu.Unlock()
		return false
	}
	s.closeAndTell(tell)
	return true
}

// closeAndTell closes s, whose mu is held and released here, and runs
// tell on a goroutine of its own.
func (s *subscription) closeAndTell(tell func()) {
	s.state.Store(subClosed)
	s.held = nil
	s.mu.Unlock()
	s.stream.end()
	go tell()
}
