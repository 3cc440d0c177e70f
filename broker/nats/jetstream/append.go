package jetstream

import (
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
// a chain, each sent once the previous one is acknowledged (its sequence
// is the next one's expected last sequence); chains of different
// channels go out together, one item of each per round trip.
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
	sent      chanState // the state items[next] leaves when stored
	claim     uint64    // sequence of items[next]'s idempotency claim
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

func (s *Store) publish(c *chain, it *broker.StoreItem, out *outbox, b *ackBatch, i int) error {
	o := &it.Opts
	next := c.st
	next.metaTTL = s.metaTTL(o)
	if withHistory(o) {
		next.offset++
		next.floor = floorFor(c.st.floor, next.offset, o.HistorySize)
		if o.Version > 0 {
			next.version, next.versionEpoch = o.Version, o.VersionEpoch
		}
	}
	m := &out.msg
	m.Subject, m.Data = c.subjectIn(c.st.stream), nil
	if withHistory(o) || o.UseDelta {
		pub := broker.Publication{Offset: next.offset, Data: it.Data, Info: o.ClientInfo, Tags: o.Tags, Time: it.Time}
		var err error
		if out.buf, err = encodePub(out.buf[:0], &pub); err != nil {
			return err
		}
		m.Data = out.buf
		setHeaders(m.Header, &next, "")
	} else {
		// A publication without delta drops the channel's delta base.
		setHeaders(m.Header, &next, markRemoved)
	}
	setHeader(m.Header, hdrExpectLastSubjSeq, strconv.FormatUint(c.st.seq, 10))
	if err := s.acks.publish(b, i, m); err != nil {
		return wrap("publish", err)
	}
	c.inFlight, c.sent = true, next
	return nil
}

// receive settles the chain's item in flight with its ack, or prepares it
// to be sent again.
func (s *Store) receive(c *chain, r ackResult) {
	if !c.inFlight {
		return
	}
	c.inFlight = false
	it := c.items[c.next]
	switch {
	case isWrongLastSeq(r.err):
		// Another appender wrote first, the channel's publications
		// expired, or it moved: read the top and send again.
		c.loaded = false
		if c.attempts++; c.attempts >= maxAttempts {
			s.fail(c, fmt.Errorf("jetstream: channel %q: gave up after %d conflicting appends", c.channel, c.attempts))
		} else if c.attempts > 2 {
			// A node appending back to back always beats one that must
			// read the top first; a random pause lets the loser in when
			// the winner pauses between its own appends.
			time.Sleep(rand.N(time.Duration(c.attempts) * 200 * time.Microsecond))
		}
	case r.err != nil:
		s.fail(c, wrap("publish", r.err))
	default:
		o := &it.Opts
		prev, prevFloor := c.st.last, c.st.floor
		if c.st.leftover {
			s.purgeBelow(c.st.stream, c.channel, r.seq)
		}
		c.st = c.sent
		c.st.seq, c.st.last, c.st.time, c.st.pubs, c.st.leftover = r.seq, nil, time.Time{}, true, false
		if o.UseDelta {
			// Kept only for channels that use delta, to bound the cache.
			c.st.last = pubconv.Clone(&broker.Publication{Offset: c.st.offset, Data: it.Data, Info: o.ClientInfo, Tags: o.Tags, Time: it.Time})
			it.Prev = prev
		}
		if withHistory(o) {
			it.Position = c.st.position()
			s.trim(c, prevFloor, o.HistorySize)
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
func (s *Store) trim(c *chain, prevFloor uint64, size int) {
	st := &c.st
	if st.floor > prevFloor+1 || st.offset%uint64(max(size, trimEvery)) == 0 {
		s.purgeAsync(st.stream, c.channel, st.offset-st.floor+1)
	}
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
	c.claim = 0
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
