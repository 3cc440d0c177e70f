package jetstream

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
)

// Append stores items as broker.Store says. The items of one channel form
// a chain of runs (consecutive items stored as one message), each sent
// once the previous one is acknowledged (its sequence is the next one's
// expected last sequence); chains of different channels go out together,
// one run of each per round trip.
func (s *Store) Append(items []broker.StoreItem) {
	if err := s.ready(); err != nil {
		for i := range items {
			items[i].Position, items[i].Suppressed, items[i].Prev, items[i].Err = broker.StreamPosition{}, false, nil, err
		}
		return
	}
	chains := s.chains(items)
	if len(chains) == 0 {
		return
	}
	names := make([]string, len(chains))
	for i, c := range chains {
		names[i] = c.channel
	}
	unlock := s.locks.lock(names)
	defer unlock()
	out := outboxes.Get().(*outbox)
	defer outboxes.Put(out)
	for active := chains; len(active) > 0; {
		b := newBatch(len(active))
		for i, c := range active {
			s.send(c, out, b, i)
		}
		s.acks.wait(b, s.cfg.Timeout)
		for i, c := range active {
			s.receive(c, b.res[i])
		}
		active = slices.DeleteFunc(active, func(c *chain) bool {
			if c.done() {
				if c.loaded {
					s.cache.put(c.channel, c.st)
				}
				return true
			}
			return false
		})
	}
}

// outbox is the message Append fills for each publication: the client
// copies a message when it is published, so one serves them all.
type outbox struct {
	msg nats.Msg
	buf []byte
}

var outboxes = sync.Pool{New: func() any { return &outbox{msg: nats.Msg{Header: nats.Header{}}} }}

// chain is the items of one channel in one Append.
type chain struct {
	channel   string
	items     []*broker.StoreItem
	next      int       // index in items of the item in flight
	st        chanState // the channel's state before items[next]
	loaded    bool      // st is valid
	cached    bool      // the cache was asked already: st is read from the stream
	fresh     bool      // st was read from the stream for items[next]
	attempts  int
	inFlight  bool
	sent      chanState // the state the run in flight leaves when stored
	run       int       // items in flight, from items[next] on
	claim     uint64    // sequence of items[next]'s idempotency claim
	origin    uint64    // sequence of the first claim of that attempt (see claimKey)
	subject   string    // the channel's subject in subjectOf
	subjectOf *streamRef
	one       [1]*broker.StoreItem // items of a chain of one
}

// subjectIn returns the channel's subject in r.
func (c *chain) subjectIn(r *streamRef) string {
	if c.subjectOf != r {
		c.subject, c.subjectOf = r.subject(c.channel), r
	}
	return c.subject
}

func (c *chain) done() bool { return c.next >= len(c.items) }

// chains groups items by channel, sorted by channel name (the lock order).
func (s *Store) chains(items []broker.StoreItem) []*chain {
	by := make(map[string]*chain, len(items))
	all := make([]chain, 0, len(items))
	out := make([]*chain, 0, len(items))
	for i := range items {
		it := &items[i]
		it.Position, it.Suppressed, it.Prev, it.Err = broker.StreamPosition{}, false, nil, nil
		c := by[it.Channel]
		if c == nil {
			all = append(all, chain{channel: it.Channel})
			c = &all[len(all)-1]
			c.items = c.one[:0]
			by[it.Channel] = c
			out = append(out, c)
		}
		c.items = append(c.items, it)
	}
	slices.SortFunc(out, func(a, b *chain) int { return strings.Compare(a.channel, b.channel) })
	return out
}

func withHistory(o *broker.PublishOptions) bool { return o.HistorySize > 0 && o.HistoryTTL > 0 }

// send puts the chain's next item in flight, settling on the way the
// items that need no write (repeated keys, stale versions, items without
// history nor delta) or cannot be sent.
func (s *Store) send(c *chain, out *outbox, b *ackBatch, i int) {
	for !c.done() {
		it := c.items[c.next]
		o := &it.Opts
		if o.IdempotencyKey != "" && c.claim == 0 {
			settled, err := s.claimKey(c, it)
			if err != nil {
				s.fail(c, err)
				continue
			}
			if settled {
				c.advance()
				continue
			}
		}
		hist := withHistory(o)
		if !hist && !o.UseDelta && c.loaded && c.st.stream.copies == nil && c.st.last == nil {
			// No delta base to drop: nothing to store but the
			// idempotency result.
			s.settle(c, it)
			continue
		}
		if err := s.load(c, it, hist); err != nil {
			s.fail(c, err)
			continue
		}
		if !hist && !o.UseDelta && c.st.last == nil {
			s.settle(c, it)
			continue
		}
		if hist && o.Version > 0 && stale(&c.st, o.Version, o.VersionEpoch) {
			if !c.fresh {
				// The cache may lag behind the stream (another node
				// published, or the channel moved): only the stream's own
				// top may suppress.
				c.loaded = false
				continue
			}
			it.Position, it.Suppressed = c.st.position(), true
			s.settle(c, it)
			continue
		}
		if err := s.publish(c, it, out, b, i); err != nil {
			s.fail(c, err)
			continue
		}
		return
	}
}

// load makes c.st the channel's state in the stream the item goes to:
// the history stream of its HistoryTTL, or, without history, the stream
// of delta bases.
func (s *Store) load(c *chain, it *broker.StoreItem, hist bool) error {
	var r *streamRef
	var err error
	if hist {
		r, err = s.historyStream(it.Opts.HistoryTTL)
	} else {
		r, err = s.deltaStream()
	}
	if err != nil {
		return err
	}
	if c.loaded && c.st.stream == r {
		return nil
	}
	if !c.loaded && !c.cached {
		c.cached = true
		if st, ok := s.cache.get(c.channel); ok && st.stream == r {
			c.st, c.loaded, c.fresh = st, true, false
			return nil
		}
	}
	st, err := s.startState(r, c.channel, s.metaTTL(&it.Opts), hist)
	if err != nil {
		return err
	}
	c.st, c.loaded, c.fresh = st, true, true
	return nil
}

// startState reads the state a publication of the channel into r starts
// from: the channel's last message in r, else the copy of it, if the
// position stands, else what carry finds.
func (s *Store) startState(r *streamRef, channel string, metaTTL time.Duration, hist bool) (chanState, error) {
	st, ok, err := s.subjectTop(r, channel)
	if err != nil {
		return chanState{}, err
	}
	if !hist {
		// A delta base: the previous publication while its meta TTL runs.
		if ok && !st.alive(time.Now()) {
			st.last = nil
		}
		return st, nil
	}
	if ok && st.moved == "" {
		return st, nil
	}
	if !ok {
		cp, ok, err := s.copyTop(r, channel)
		if err != nil {
			return chanState{}, err
		}
		if ok && cp.moved == "" && cp.alive(time.Now()) {
			cp.seq = 0
			return cp, nil
		}
	}
	return s.carry(r, channel, metaTTL)
}

func (s *Store) metaTTL(o *broker.PublishOptions) time.Duration {
	return min(orDefault(o.HistoryMetaTTL, s.cfg.MetaTTL), s.cfg.MetaTTL)
}

// stale applies PublishOptions.Version: the publication is dropped unless
// newer than the stream's version, or of another version epoch.
func stale(st *chanState, version uint64, epoch string) bool {
	return (epoch == "" || epoch == st.versionEpoch) && version <= st.version
}

// floorFor is the oldest offset History returns once offset is stored
// with HistorySize size, the floor before it being prev.
func floorFor(prev, offset uint64, size int) uint64 {
	f := uint64(1)
	if offset > uint64(size) {
		f = offset - uint64(size) + 1
	}
	return max(prev, f)
}

// Bounds of a run: the publications of one channel stored as one
// message. The body stays well under NATS's default max payload (1 MB),
// and under the server's own, headers aside.
const (
	maxRunItems = 100
	maxRunBytes = 768 << 10
)

// publish sends the chain's next item, with the items after it that can
// go in the same message as a run: consecutive items of the same history
// stream without idempotency key, none of which its version would
// suppress. A run goes with one expected last sequence, so it is stored
// whole or not at all.
func (s *Store) publish(c *chain, it *broker.StoreItem, out *outbox, b *ackBatch, i int) error {
	o := &it.Opts
	next := c.st
	next.metaTTL = s.metaTTL(o)
	m := &out.msg
	m.Subject, m.Data = c.subjectIn(c.st.stream), nil
	n := 1
	switch {
	case withHistory(o):
		var err error
		if next, n, err = s.encodeRun(c, out); err != nil {
			return err
		}
		m.Data = out.buf
		setHeaders(m.Header, &next, "")
		if n > 1 {
			setHeader(m.Header, hdrRun, runHeader(next.offset-uint64(n)+1, n))
		}
	case o.UseDelta:
		pub := broker.Publication{Offset: next.offset, Data: it.Data, Info: o.ClientInfo, Tags: o.Tags, Time: it.Time}
		var err error
		if out.buf, err = encodePub(out.buf[:0], &pub); err != nil {
			return err
		}
		m.Data = out.buf
		setHeaders(m.Header, &next, "")
	default:
		// A publication without delta drops the channel's delta base.
		setHeaders(m.Header, &next, markRemoved)
	}
	setHeader(m.Header, hdrExpectLastSubjSeq, strconv.FormatUint(c.st.seq, 10))
	if c.claim != 0 {
		setHeader(m.Header, hdrMsgID, msgID(c.channel, o.IdempotencyKey, c.origin))
	} else {
		delete(m.Header, hdrMsgID)
	}
	if err := s.acks.publish(b, i, m); err != nil {
		return wrap("publish", err)
	}
	c.inFlight, c.sent, c.run = true, next, n
	return nil
}

// encodeRun encodes into out.buf the run starting at the chain's next
// item (which has history), and returns the state it leaves and its
// length. A run of one is a plain publication.
func (s *Store) encodeRun(c *chain, out *outbox) (chanState, int, error) {
	next := c.st
	first := c.items[c.next]
	out.buf = out.buf[:0]
	var one []byte // the first item alone, as a plain publication
	// Headers aside: a server may allow less than the default payload.
	limit := min(maxRunBytes, int(s.nc.MaxPayload())-8<<10)
	n := 0
	for _, it := range c.items[c.next:] {
		o := &it.Opts
		// A keyed item goes alone: its message id (see claimKey) must
		// stand for it only.
		if n > 0 && (n == maxRunItems || !withHistory(o) || o.HistoryTTL != first.Opts.HistoryTTL ||
			o.IdempotencyKey != "" || first.Opts.IdempotencyKey != "" || o.Version > 0 && stale(&next, o.Version, o.VersionEpoch) ||
			len(out.buf) >= limit) {
			break
		}
		st := next
		st.metaTTL = s.metaTTL(o)
		st.offset++
		st.floor = floorFor(next.floor, st.offset, o.HistorySize)
		if o.Version > 0 {
			st.version, st.versionEpoch = o.Version, o.VersionEpoch
		}
		pub := broker.Publication{Offset: st.offset, Data: it.Data, Info: o.ClientInfo, Tags: o.Tags, Time: it.Time}
		undo := len(out.buf)
		var err error
		if out.buf, err = appendRunPub(out.buf, &pub); err != nil {
			return chanState{}, 0, err
		}
		if n > 0 && len(out.buf) > limit {
			out.buf = out.buf[:undo]
			break
		}
		if n == 0 {
			_, k := binary.Uvarint(out.buf)
			one = out.buf[k:]
		}
		next, n = st, n+1
	}
	if n == 1 {
		out.buf = append(out.buf[:0], one...)
	}
	return next, n, nil
}

// receive settles the chain's run in flight with its ack, or prepares it
// to be sent again.
func (s *Store) receive(c *chain, r ackResult) {
	if !c.inFlight {
		return
	}
	c.inFlight = false
	switch {
	case isWrongLastSeq(r.err):
		// Another appender wrote first, the channel's publications
		// expired, or it moved: read the top and send again.
		c.loaded = false
		if c.attempts++; c.attempts >= maxAttempts {
			s.failRun(c, fmt.Errorf("jetstream: channel %q: gave up after %d conflicting appends", c.channel, c.attempts))
		} else if c.attempts > 2 {
			// A node appending back to back always beats one that must
			// read the top first; a random pause lets the loser in when
			// the winner pauses between its own appends.
			time.Sleep(rand.N(time.Duration(c.attempts) * 200 * time.Microsecond))
		}
	case r.err != nil:
		// A run that timed out may have landed: none of it is retried.
		s.failRun(c, wrap("publish", r.err))
	case r.duplicate:
		s.storedBefore(c, r.seq)
	default:
		s.stored(c, r.seq)
	}
}

// storedBefore settles the chain's keyed item that JetStream recognised
// by its message id: an earlier attempt stored it at seq and its ack got
// lost (a timeout, a node that died). The item answers as a repeat of
// that publication, whose position the stored message holds.
func (s *Store) storedBefore(c *chain, seq uint64) {
	it := c.items[c.next]
	it.Suppressed = true
	if withHistory(&it.Opts) {
		ctx, cancel := s.ctx()
		raw, err := c.st.stream.s.GetMsg(ctx, seq)
		cancel()
		var m stored
		if err == nil {
			m, err = decodeStored(seq, raw.Header, raw.Data)
		}
		if err != nil {
			// Trimmed already, or unreadable: the repeat is still
			// suppressed, without the position it was stored at.
			s.log.Warn("jetstream: a repeated publication was stored before, at a position that cannot be read", "channel", c.channel, "seq", seq, "error", err)
		} else {
			it.Position = m.state.position()
		}
	}
	// The channel's top is past what this attempt was sent against.
	c.loaded = false
	s.cache.del(c.channel)
	s.settle(c, it)
}

// stored settles the chain's run, stored at sequence seq.
func (s *Store) stored(c *chain, seq uint64) {
	prevOffset, prevFloor := c.st.offset, c.st.floor
	if c.st.leftover {
		s.purgeBelow(c.st.stream, c.channel, seq)
	}
	prev := c.st.last
	sent := c.sent
	first := sent.offset - uint64(c.run) + 1
	for k := range c.run {
		it := c.items[c.next]
		o := &it.Opts
		var pub *broker.Publication
		// The next item's Prev, within the run or after it.
		nextDelta := c.next+1 < len(c.items) && c.items[c.next+1].Opts.UseDelta
		if o.UseDelta || nextDelta {
			pub = &broker.Publication{Offset: first + uint64(k), Data: it.Data, Info: o.ClientInfo, Tags: o.Tags, Time: it.Time}
		}
		if o.UseDelta {
			it.Prev = prev
		}
		if withHistory(o) {
			it.Position = broker.StreamPosition{Offset: first + uint64(k), Epoch: sent.epoch}
		}
		if k < c.run-1 {
			if pub != nil {
				prev = pubconv.Clone(pub)
			}
			s.settle(c, it)
			continue
		}
		recent := c.st.recent
		if c.st.pubs && c.st.seq != 0 && c.st.first != 0 {
			// The message before this run: the run's condition held.
			copy(recent[:], recent[1:])
			recent[len(recent)-1] = mark{seq: c.st.seq, first: c.st.first}
		}
		c.st = sent
		c.st.recent = recent
		c.st.seq, c.st.last, c.st.time, c.st.pubs, c.st.leftover = seq, nil, time.Time{}, true, false
		c.st.first, c.st.run = first, nil
		if pub != nil {
			// Kept only for channels that use delta, to bound the cache.
			c.st.last = pubconv.Clone(pub)
		}
		if withHistory(o) {
			s.trim(c, prevOffset, prevFloor, seq, o.HistorySize)
		}
		s.settle(c, it)
	}
}

// trimEvery is the least number of publications between two trims of a
// channel.
const trimEvery = 32

// trim drops, now and then, what the channel keeps below its floor:
// History never returns it, HistoryTTL would drop it later. A channel's
// messages are trimmed when its HistorySize shrinks, else every
// max(HistorySize, trimEvery) publications, so that it keeps at most
// about twice its HistorySize.
//
// A message may hold a run of publications: what comes before the message
// holding the floor goes when the store knows that message (it wrote it
// lately, see chanState.recent); else the channel keeps as many messages
// as it has offsets from its floor up, which keeps at least those.
func (s *Store) trim(c *chain, prevOffset, prevFloor, seq uint64, size int) {
	st := &c.st
	every := uint64(max(size, trimEvery))
	shrunk := st.floor-prevFloor > st.offset-prevOffset
	if !shrunk && prevOffset/every == st.offset/every {
		return
	}
	if st.floor >= st.first {
		s.purgeBelow(st.stream, c.channel, seq)
		return
	}
	for i := len(st.recent) - 1; i >= 0; i-- {
		if m := st.recent[i]; m.seq != 0 && m.first <= st.floor {
			s.purgeBelow(st.stream, c.channel, m.seq)
			return
		}
	}
	s.purgeAsync(st.stream, c.channel, st.offset-st.floor+1)
}

// settle ends the chain's next item as it stands, recording its
// idempotency result.
func (s *Store) settle(c *chain, it *broker.StoreItem) {
	if c.claim != 0 {
		s.finishKey(c, it)
	}
	c.advance()
}

func (c *chain) advance() {
	c.next++
	c.attempts = 0
	c.fresh = false
	c.claim, c.origin = 0, 0
}

// failRun settles every item of the run in flight with err.
func (s *Store) failRun(c *chain, err error) {
	for range c.run {
		s.fail(c, err)
	}
}

// fail settles the chain's next item with err. The state is read again
// for the item after it: a publish that timed out may have landed. An
// idempotency claim is left to lapse.
func (s *Store) fail(c *chain, err error) {
	c.items[c.next].Err = err
	c.loaded = false
	s.cache.del(c.channel)
	c.advance()
}
