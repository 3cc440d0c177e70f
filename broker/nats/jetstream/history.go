package jetstream

import (
	"errors"
	"fmt"
	"slices"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/broker"
)

// History returns publications of the channel and its top, as
// broker.Broker's History says. A channel with nothing stored anywhere
// gets an epoch (pending until its first publication takes it) and
// offset 0.
func (s *Store) History(channel string, opts broker.HistoryOptions) ([]*broker.Publication, broker.StreamPosition, error) {
	if err := s.ready(); err != nil {
		return nil, broker.StreamPosition{}, err
	}
	top, found, err := s.top(channel)
	if err != nil {
		return nil, broker.StreamPosition{}, err
	}
	sp := top.position()
	f := opts.Filter
	if since := f.Since; since != nil && (since.Epoch != sp.Epoch || since.Offset > sp.Offset) {
		return nil, sp, broker.ErrUnrecoverablePosition
	}
	if f.Limit == 0 || !found {
		return nil, sp, nil
	}
	from, to := span(f, top.offset)
	if from > to {
		return nil, sp, nil
	}
	var pubs []*broker.Publication
	if to == top.offset && (from == to || f.Limit == 1 && f.Reverse) && top.last != nil {
		// The top message was read already: the newest one alone needs
		// no other round trip.
		pubs = []*broker.Publication{top.last}
	} else if pubs, err = s.read(top, channel, from, to, f); err != nil {
		return nil, sp, err
	}
	if f.Reverse {
		slices.Reverse(pubs)
	}
	return pubs, sp, nil
}

// top reads the channel's last message: in the stream the cache names,
// else where its epoch record points.
func (s *Store) top(channel string) (chanState, bool, error) {
	if c, ok := s.cache.get(channel); ok {
		st, found, err := s.lastState(c.stream, channel)
		if err != nil || found {
			return st, found, err
		}
	}
	st, found, err := s.pendingTop(channel)
	if err != nil || !found {
		return st, found, err
	}
	c := st
	c.last = nil // the cache keeps delta bases only for appenders that use delta
	s.cache.put(channel, c)
	return st, true, nil
}

// span returns the offsets [from, to] the filter asks for, given the top.
// Offsets stored are consecutive, so the span is exact but for its start,
// which may have been evicted: the read then begins at the oldest kept.
func span(f broker.HistoryFilter, top uint64) (from, to uint64) {
	if !f.Reverse {
		from, to = 1, top
		if f.Since != nil {
			from = f.Since.Offset + 1
		}
		if f.Limit > 0 {
			to = min(to, from+uint64(f.Limit)-1)
		}
		return from, to
	}
	from, to = 1, top
	if f.Since != nil {
		if f.Since.Offset == 0 {
			return 1, 0
		}
		to = f.Since.Offset - 1
	}
	if f.Limit > 0 && to >= uint64(f.Limit) {
		from = to - uint64(f.Limit) + 1
	}
	return from, to
}

// read returns the channel's publications with offsets from..to, oldest
// first. Forward reads whose start was evicted take up to the limit from
// the oldest kept on.
func (s *Store) read(top chanState, channel string, from, to uint64, f broker.HistoryFilter) ([]*broker.Publication, error) {
	r := top.stream
	subj := r.subject(channel)
	start, first, err := s.seek(r, subj, from, top)
	if err != nil || start == 0 {
		return nil, err
	}
	if first > from && !f.Reverse && f.Limit > 0 {
		to = min(top.offset, first+uint64(f.Limit)-1)
	}
	from = max(from, first)
	if from > to {
		return nil, nil
	}
	return s.fetch(r, subj, start, from, to)
}

// seek returns the stream sequence of the channel's message with offset
// from, or of its oldest kept message (first, its offset) when from is
// older. It searches between the oldest and the top, guessing by
// interpolation, which on a stream where channels interleave evenly lands
// in a couple of direct gets, and bisecting every other step, which bounds
// it to twice the bits of the sequence range.
func (s *Store) seek(r *streamRef, subj string, from uint64, top chanState) (start, first uint64, err error) {
	lo, err := s.nextFrom(r, subj, 1)
	if err != nil || lo.seq == 0 {
		return 0, 0, err
	}
	if from <= lo.state.offset {
		return lo.seq, lo.state.offset, nil
	}
	if from >= top.offset {
		return top.seq, lo.state.offset, nil
	}
	loSeq, loOff, hiSeq, hiOff := lo.seq, lo.state.offset, top.seq, top.offset
	for step := 0; hiSeq-loSeq > 1; step++ {
		// Invariant: loOff < from < hiOff, the target lies in (loSeq, hiSeq).
		var guess uint64
		if step%2 == 0 {
			guess = loSeq + (hiSeq-loSeq)*(from-loOff)/(hiOff-loOff)
		} else {
			guess = loSeq + (hiSeq-loSeq)/2
		}
		guess = min(max(guess, loSeq+1), hiSeq-1)
		m, err := s.nextFrom(r, subj, guess)
		if err != nil {
			return 0, 0, err
		}
		switch {
		case m.seq == 0 || m.state.offset > from:
			// Nothing of the channel between guess and the message found
			// (or the top): the target is before guess.
			hiSeq = guess
			if m.seq != 0 {
				hiOff = m.state.offset
			}
		case m.state.offset == from:
			return m.seq, lo.state.offset, nil
		default:
			loSeq, loOff = m.seq, m.state.offset
		}
	}
	// Only evictions in between can leave the target unfound: start past
	// the lower bound.
	return loSeq + 1, lo.state.offset, nil
}

// nextFrom reads the channel's first message at or after seq; seq 0 in
// the result means none.
func (s *Store) nextFrom(r *streamRef, subj string, seq uint64) (stored, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	raw, err := r.s.GetMsg(ctx, seq, js.WithGetMsgSubject(subj))
	if errors.Is(err, js.ErrMsgNotFound) {
		return stored{}, nil
	}
	if err != nil {
		return stored{}, wrap("read history", err)
	}
	return decodeStored(raw.Sequence, raw.Header, raw.Data)
}

// consumerIdle is how long a history reader's consumer outlives a store
// that died before deleting it.
const consumerIdle = 30 * time.Second

// fetch reads the channel's publications with offsets from..to, starting
// at stream sequence start, through an ephemeral consumer: JetStream 2.9
// has no batched direct get, and a consumer streams the whole span in one
// pull.
func (s *Store) fetch(r *streamRef, subj string, start, from, to uint64) ([]*broker.Publication, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	cons, err := r.s.CreateConsumer(ctx, js.ConsumerConfig{
		FilterSubject:     subj,
		DeliverPolicy:     js.DeliverByStartSequencePolicy,
		OptStartSeq:       start,
		AckPolicy:         js.AckNonePolicy,
		InactiveThreshold: consumerIdle,
		MemoryStorage:     true,
		Replicas:          1,
	})
	if err != nil {
		return nil, wrap("read history", err)
	}
	defer s.dropConsumer(r, cons.CachedInfo().Name)
	// One more than the span: a marker may come first.
	n := int(to-from) + 2
	batch, err := cons.FetchNoWait(n)
	if err != nil {
		return nil, wrap("read history", err)
	}
	pubs := make([]*broker.Publication, 0, n-1)
	for msg := range batch.Messages() {
		md, err := msg.Metadata()
		if err != nil {
			return nil, fmt.Errorf("jetstream: read history: %w", err)
		}
		m, err := decodeStored(md.Sequence.Stream, msg.Headers(), msg.Data())
		if err != nil {
			return nil, err
		}
		if !m.marker && m.state.offset >= from && m.state.offset <= to {
			pubs = append(pubs, m.pub)
		}
	}
	if err := batch.Error(); err != nil && !errors.Is(err, js.ErrNoMessages) {
		return nil, wrap("read history", err)
	}
	return pubs, nil
}

// dropConsumer deletes a reader's consumer without waiting for the
// answer; the idle threshold removes it should this be lost.
func (s *Store) dropConsumer(r *streamRef, name string) {
	_ = s.nc.Publish("$JS.API.CONSUMER.DELETE."+r.name+"."+name, nil)
}

// RemoveHistory drops the channel's publications and keeps its position:
// a marker carrying the top goes in first, then everything before it is
// purged. A channel with nothing stored has nothing to remove.
func (s *Store) RemoveHistory(channel string) error {
	if err := s.ready(); err != nil {
		return err
	}
	unlock := s.locks.lock([]string{channel})
	defer unlock()
	for range maxAttempts {
		top, found, err := s.top(channel)
		if err != nil || !found {
			return err
		}
		r := top.stream
		m, err := newMsg(r.subject(channel), &top, nil)
		if err != nil {
			return err
		}
		ctx, cancel := s.ctx()
		ack, err := s.js.PublishMsg(ctx, m, js.WithExpectLastSequencePerSubject(top.seq))
		if isWrongLastSeq(err) {
			cancel()
			continue
		}
		if err == nil {
			err = r.s.Purge(ctx, js.WithPurgeSubject(m.Subject), js.WithPurgeKeep(1))
		}
		cancel()
		if err != nil {
			s.cache.del(channel)
			return wrap("remove history", err)
		}
		top.seq, top.last, top.lastTime = ack.Sequence, nil, 0
		s.cache.put(channel, top)
		return nil
	}
	return fmt.Errorf("jetstream: remove history of %q: the channel keeps changing", channel)
}
