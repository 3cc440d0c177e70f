package jetstream

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

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
	for active := chains; len(active) > 0; {
		for _, c := range active {
			s.send(c)
		}
		for _, c := range active {
			s.receive(c)
		}
		active = slices.DeleteFunc(active, func(c *chain) bool {
			if c.done() {
				s.cache.put(c.channel, c.st)
				return true
			}
			return false
		})
	}
}

// chain is the items of one channel in one Append.
type chain struct {
	channel  string
	items    []*broker.StoreItem
	next     int       // index in items of the item in flight
	st       chanState // the channel's state before items[next]
	loaded   bool      // st is valid
	cached   bool      // the cache was asked already: st is read from the stream
	fresh    bool      // st was read from the stream for items[next]
	attempts int
	pending  js.PubAckFuture
	pub      *broker.Publication // items[next] as sent
}

func (c *chain) done() bool { return c.next >= len(c.items) }

// chains groups items of history-on channels by channel, sorted by
// channel name (the lock order), and settles the others: without history
// nothing is stored and the position is zero.
func (s *Store) chains(items []broker.StoreItem) []*chain {
	by := make(map[string]*chain)
	var out []*chain
	for i := range items {
		it := &items[i]
		it.Position, it.Suppressed, it.Prev, it.Err = broker.StreamPosition{}, false, nil, nil
		if it.Opts.HistorySize <= 0 || it.Opts.HistoryTTL <= 0 {
			continue
		}
		c := by[it.Channel]
		if c == nil {
			c = &chain{channel: it.Channel}
			by[it.Channel] = c
			out = append(out, c)
		}
		c.items = append(c.items, it)
	}
	slices.SortFunc(out, func(a, b *chain) int {
		switch {
		case a.channel < b.channel:
			return -1
		case a.channel > b.channel:
			return 1
		}
		return 0
	})
	return out
}

// send puts the chain's next item in flight, settling on the way the
// items that need no write (stale versions) or cannot be sent.
func (s *Store) send(c *chain) {
	for !c.done() {
		it := c.items[c.next]
		if err := s.load(c, it); err != nil {
			s.fail(c, err)
			continue
		}
		o := &it.Opts
		if o.Version > 0 && stale(&c.st, o.Version, o.VersionEpoch) {
			if !c.fresh {
				// The cache may lag behind the stream (another node
				// published, or the channel's publications expired):
				// only the stream's own top may suppress.
				c.loaded = false
				continue
			}
			it.Position, it.Suppressed = c.st.position(), true
			c.advance()
			continue
		}
		if err := s.publish(c, it); err != nil {
			s.fail(c, err)
			continue
		}
		return
	}
}

// load makes c.st the channel's state in the stream of it's settings.
func (s *Store) load(c *chain, it *broker.StoreItem) error {
	r, err := s.historyStream(it.Opts.HistorySize, it.Opts.HistoryTTL)
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
	st, found, err := s.lastState(r, c.channel)
	if err != nil {
		return err
	}
	if !found {
		epoch, err := s.startLife(r, c.channel)
		if err != nil {
			return err
		}
		st = chanState{stream: r, epoch: epoch}
	}
	c.st, c.loaded, c.fresh = st, true, true
	return nil
}

// stale applies PublishOptions.Version: the publication is dropped unless
// newer than the stream's version, or of another version epoch.
func stale(st *chanState, version uint64, epoch string) bool {
	return (epoch == "" || epoch == st.versionEpoch) && version <= st.version
}

func (s *Store) publish(c *chain, it *broker.StoreItem) error {
	next := c.st
	next.offset++
	if o := &it.Opts; o.Version > 0 {
		next.version, next.versionEpoch = o.Version, o.VersionEpoch
	}
	pub := &broker.Publication{Offset: next.offset, Data: it.Data, Info: it.Opts.ClientInfo, Tags: it.Opts.Tags, Time: it.Time}
	m, err := newMsg(c.st.stream.subject(c.channel), &next, pub)
	if err != nil {
		return err
	}
	opts := []js.PublishOpt{js.WithExpectLastSequencePerSubject(c.st.seq)}
	if k := it.Opts.IdempotencyKey; k != "" {
		opts = append(opts, js.WithMsgID(msgID(c.channel, k)))
	}
	f, err := s.js.PublishMsgAsync(m, opts...)
	if err != nil {
		return wrap("publish", err)
	}
	c.pending, c.pub = f, pub
	return nil
}

// msgID is the JetStream message id of an idempotency key: channels share
// a stream, so the channel is part of it.
func msgID(channel, key string) string {
	h := sha256.New()
	h.Write([]byte(channel))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil))
}

// receive waits for the ack of the chain's item in flight and settles it,
// or prepares it to be sent again.
func (s *Store) receive(c *chain) {
	f := c.pending
	if f == nil {
		return
	}
	c.pending = nil
	it := c.items[c.next]
	var ack *js.PubAck
	var err error
	select {
	case ack = <-f.Ok():
	case err = <-f.Err():
	}
	switch {
	case isWrongLastSeq(err):
		// Another appender wrote first, or the channel's publications
		// expired: read the top and send again.
		c.loaded = false
		if c.attempts++; c.attempts >= maxAttempts {
			s.fail(c, fmt.Errorf("jetstream: channel %q: gave up after %d conflicting appends", c.channel, c.attempts))
		} else if c.attempts > 2 {
			// A node appending back to back always beats one that must
			// read the top first; a random pause lets the loser in when
			// the winner pauses between its own appends.
			time.Sleep(rand.N(time.Duration(c.attempts) * 200 * time.Microsecond))
		}
	case err != nil:
		s.fail(c, wrap("publish", err))
	case ack.Duplicate:
		s.settleDuplicate(c, it, ack.Sequence)
	default:
		prev := c.st.last
		c.st.seq, c.st.offset, c.st.last, c.st.lastTime = ack.Sequence, c.pub.Offset, nil, 0
		if it.Opts.UseDelta {
			// Kept only for channels that use delta, to bound the cache.
			c.st.last = pubconv.Clone(c.pub)
		}
		if o := &it.Opts; o.Version > 0 {
			c.st.version, c.st.versionEpoch = o.Version, o.VersionEpoch
		}
		it.Position = c.st.position()
		if it.Opts.UseDelta {
			it.Prev = prev
		}
		c.advance()
	}
}

// settleDuplicate answers a repeated idempotency key with the position of
// the publication that first had it, read from its sequence. The stream
// gained nothing, so the chain's state stays.
func (s *Store) settleDuplicate(c *chain, it *broker.StoreItem, seq uint64) {
	it.Suppressed = true
	ctx, cancel := s.ctx()
	defer cancel()
	raw, err := c.st.stream.s.GetMsg(ctx, seq)
	switch {
	case errors.Is(err, js.ErrMsgNotFound):
		// Evicted since: its offset is gone with it; the top is the
		// nearest the store can tell.
		it.Position = c.st.position()
	case err != nil:
		it.Suppressed, it.Err = false, wrap("read the original of a duplicate", err)
	default:
		m, derr := decodeStored(raw.Sequence, raw.Header, raw.Data)
		if derr != nil {
			it.Suppressed, it.Err = false, derr
		} else {
			it.Position = m.state.position()
		}
	}
	c.advance()
}

func (c *chain) advance() {
	c.next++
	c.attempts = 0
	c.fresh = false
}

// fail settles the chain's next item with err. The state is read again
// for the item after it: a publish that timed out may have landed.
func (s *Store) fail(c *chain, err error) {
	c.items[c.next].Err = err
	c.loaded = false
	s.cache.del(c.channel)
	c.advance()
}

// lastState reads the channel's last message in r.
func (s *Store) lastState(r *streamRef, channel string) (chanState, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	raw, err := r.s.GetLastMsgForSubject(ctx, r.subject(channel))
	if errors.Is(err, js.ErrMsgNotFound) {
		return chanState{stream: r}, false, nil
	}
	if err != nil {
		return chanState{}, false, wrap("read the top of "+r.name, err)
	}
	m, err := decodeStored(raw.Sequence, raw.Header, raw.Data)
	if err != nil {
		return chanState{}, false, err
	}
	st := m.state
	st.stream, st.last, st.lastTime = r, m.pub, raw.Time.UnixNano()
	return st, true, nil
}
