package jetstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
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
	top, found, err := s.top(channel, opts.Peek)
	if err != nil {
		return nil, broker.StreamPosition{}, err
	}
	sp := top.position()
	if opts.Peek {
		return nil, sp, nil
	}
	f := opts.Filter
	if since := f.Since; since != nil && (since.Epoch != sp.Epoch || since.Offset > sp.Offset) {
		return nil, sp, broker.ErrUnrecoverablePosition
	}
	if f.Limit == 0 || !found || !top.pubs || top.last == nil {
		// Nothing stored (expired, or the channel is moving), or a marker
		// on top: RemoveHistory dropped everything before it.
		return nil, sp, nil
	}
	from, to := span(f, top.offset, top.floor)
	if from > to {
		return nil, sp, nil
	}
	var pubs []*broker.Publication
	if from >= top.first && len(top.run) == int(top.offset-top.first+1) {
		// The top message, read already, holds the span: it needs no
		// other round trip.
		pubs = slices.Clone(top.run[from-top.first : to-top.first+1])
	} else if to == top.offset && (from == to || f.Limit == 1 && f.Reverse) && top.last != nil {
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
// else where its epoch record points. With peek, a channel found nowhere
// is the zero position, and no pending epoch is recorded for it.
func (s *Store) top(channel string, peek bool) (chanState, bool, error) {
	if c, ok := s.cache.get(channel); ok && c.stream.copies != nil {
		st, found, err := s.subjectTop(c.stream, channel)
		if err != nil || found && st.moved == "" {
			return st, found, err
		}
	}
	st, found, err := s.recordedTop(channel, peek)
	if err != nil || !found {
		return st, found, err
	}
	if st.pubs {
		// Only a position read from its stream may spare Append the
		// record (a move under way is not).
		c := st
		c.last = nil // the cache keeps delta bases only for appenders that use delta
		s.cache.put(channel, c)
	}
	return st, true, nil
}

// span returns the offsets [from, to] the filter asks for, given the top
// and the floor (the oldest offset History returns). Offsets stored are
// consecutive, so the span is exact but for its start, which may have
// expired: the read then begins at the oldest kept.
func span(f broker.HistoryFilter, top, floor uint64) (from, to uint64) {
	floor = max(floor, 1)
	if !f.Reverse {
		from, to = floor, top
		if f.Since != nil {
			from = max(f.Since.Offset+1, floor)
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
	return max(from, floor), to
}

// read returns the channel's publications with offsets from..to, oldest
// first. Forward reads whose start was evicted take up to the limit from
// the oldest kept on.
func (s *Store) read(top chanState, channel string, from, to uint64, f broker.HistoryFilter) ([]*broker.Publication, error) {
	r := top.stream
	subj := r.subject(channel)
	start, first, err := s.seek(r, subj, from, top)
	if err != nil || start.seq == 0 {
		return nil, err
	}
	if first > from && !f.Reverse && f.Limit > 0 {
		to = min(top.offset, first+uint64(f.Limit)-1)
	}
	from = max(from, first)
	if from > to {
		return nil, nil
	}
	if start.has(from) {
		if pubs, ok, err := s.gather(r, subj, start, top, from, to); err != nil || ok {
			return pubs, err
		}
	}
	return s.fetch(r, subj, start.seq, from, to)
}

// seek returns the channel's message holding offset from, or its oldest
// kept message (first, its first offset) when from is older. It searches
// between the oldest and the top, guessing by interpolation, which on a
// stream where channels interleave evenly lands in a couple of direct
// gets, and bisecting every other step, which bounds it to twice the bits
// of the sequence range. Should evictions meanwhile hide the target, the
// result has only a sequence to start reading at.
func (s *Store) seek(r *streamRef, subj string, from uint64, top chanState) (start stored, first uint64, err error) {
	lo, err := s.nextFrom(r, subj, 1)
	for err == nil && lo.seq != 0 && lo.seq < top.seq && (lo.marker || lo.state.epoch != top.epoch) {
		// Left by an earlier life or stay in the stream, before the
		// channel's publications since (and gone soon).
		lo, err = s.nextFrom(r, subj, lo.seq+1)
	}
	if err != nil || lo.seq == 0 {
		return stored{}, 0, err
	}
	first = lo.first
	if from <= lo.state.offset {
		return lo, first, nil
	}
	if from >= top.first {
		return topStored(top), first, nil
	}
	// The messages between hold offsets loOff+1 .. hiOff-1.
	loSeq, loOff, hiSeq, hiOff := lo.seq, lo.state.offset, top.seq, top.first
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
			return stored{}, 0, err
		}
		switch {
		case m.seq == 0 || m.first > from:
			// Nothing of the channel between guess and the message found
			// (or the top): the target is before guess.
			hiSeq = guess
			if m.seq != 0 {
				hiOff = m.first
			}
		case m.has(from):
			return m, first, nil
		default:
			loSeq, loOff = m.seq, m.state.offset
		}
	}
	return stored{seq: loSeq + 1}, first, nil
}

// topStored is the channel's top message as read.
func topStored(top chanState) stored {
	m := stored{seq: top.seq, state: top, first: top.first, pub: top.last, pubs: top.run, marker: top.last == nil}
	if !m.marker && len(m.pubs) != int(top.offset-top.first+1) {
		// Not read whole: only its last publication is known.
		m.first, m.pubs = top.offset, []*broker.Publication{top.last}
	}
	return m
}

// maxGatherRounds bounds gather before it leaves the read to a consumer.
const maxGatherRounds = 8

// gather reads the channel's publications from..to, from being in start,
// reading the messages after start up to offset to by
// direct gets sent together, one per missing offset (per run, where the
// message before a gap is one), at the sequence interpolated between the nearest messages known around it (the first
// guess of each gap right after its lower neighbour, so that every round
// fills at least one offset per gap). A consumer would cost its creation,
// some milliseconds on nats-server 2.9, per read. ok is false when the
// messages are spread too unevenly to find in a few rounds.
func (s *Store) gather(r *streamRef, subj string, start stored, top chanState, from, to uint64) (pubs []*broker.Publication, ok bool, err error) {
	known := map[uint64]*stored{}
	learn := func(m *stored) {
		for o := m.first; o <= m.state.offset; o++ {
			if _, had := known[o]; !had || !m.marker {
				known[o] = m
			}
		}
	}
	ts := topStored(top)
	learn(&start)
	learn(&ts)
	for range maxGatherRounds {
		guesses := gaps(known, from, to, top.offset)
		if len(guesses) == 0 {
			break
		}
		got, err := s.getAll(r, subj, guesses)
		if err != nil {
			return nil, false, err
		}
		for i := range got {
			if got[i].seq != 0 {
				learn(&got[i])
			}
		}
	}
	pubs = make([]*broker.Publication, 0, to-from+1)
	for o := from; o <= to; o++ {
		m, found := known[o]
		if !found {
			return nil, false, nil
		}
		if !m.marker {
			pubs = append(pubs, m.at(o))
		}
	}
	return pubs, true, nil
}

// gaps returns the sequences to try for the offsets of from..to missing
// from known, in which from and topOff are.
func gaps(known map[uint64]*stored, from, to, topOff uint64) []uint64 {
	var out []uint64
	for o := from + 1; o <= to; o++ {
		if _, ok := known[o]; ok {
			continue
		}
		// o-1 ends a message known, hi starts one.
		lo := known[o-1]
		hi := o + 1
		for ; hi < topOff; hi++ {
			if _, ok := known[hi]; ok {
				break
			}
		}
		up := known[hi]
		end := min(hi-1, to)
		last := uint64(0)
		// Messages around are likely runs as long as lo: one guess per
		// such run, the next round fills what that missed.
		step := lo.state.offset - lo.first + 1
		for g := o; g <= end; g += step {
			guess := lo.seq + (g-(o-1))*(up.seq-lo.seq)/(hi-(o-1))
			if g == o {
				guess = lo.seq + 1
			}
			guess = min(max(guess, lo.seq+1), up.seq)
			if guess > last {
				out, last = append(out, guess), guess
			}
		}
		o = end
	}
	return out
}

// getAll reads the channel's first message at or after each of seqs
// (seq 0 in a result: none). The direct gets go out in one write and their
// answers come back to one inbox, so that a round costs one round trip.
func (s *Store) getAll(r *streamRef, subj string, seqs []uint64) ([]stored, error) {
	inbox := s.nc.NewRespInbox()
	replies := make(chan *nats.Msg, len(seqs))
	sub, err := s.nc.ChanSubscribe(inbox+".*", replies)
	if err != nil {
		return nil, wrap("read history", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	subject := "$JS.API.DIRECT.GET." + r.name
	for i, seq := range seqs {
		body, err := json.Marshal(directGet{Seq: seq, NextBySubj: subj})
		if err != nil {
			return nil, fmt.Errorf("jetstream: read history: %w", err)
		}
		if err := s.nc.PublishRequest(subject, inbox+"."+strconv.Itoa(i), body); err != nil {
			return nil, wrap("read history", err)
		}
	}
	out := make([]stored, len(seqs))
	timeout := time.NewTimer(s.cfg.Timeout)
	defer timeout.Stop()
	for range seqs {
		select {
		case m := <-replies:
			i, err := strconv.Atoi(m.Subject[len(inbox)+1:])
			if err != nil || i < 0 || i >= len(out) {
				return nil, fmt.Errorf("jetstream: read history: unexpected reply %q", m.Subject)
			}
			if out[i], err = decodeDirect(m); err != nil {
				return nil, err
			}
		case <-timeout.C:
			return nil, wrap("read history", nats.ErrTimeout)
		}
	}
	return out, nil
}

type directGet struct {
	Seq        uint64 `json:"seq"`
	NextBySubj string `json:"next_by_subj"`
}

// decodeDirect reads a direct get's answer: a stored message, or a status
// (404: none).
func decodeDirect(m *nats.Msg) (stored, error) {
	if len(m.Data) == 0 {
		switch status := m.Header.Get("Status"); status {
		case "404":
			return stored{}, nil
		case "":
		default:
			return stored{}, fmt.Errorf("jetstream: read history: status %s %s", status, m.Header.Get("Description"))
		}
	}
	seq, err := strconv.ParseUint(m.Header.Get(js.SequenceHeader), 10, 64)
	if err != nil {
		return stored{}, fmt.Errorf("jetstream: read history: bad sequence header: %w", err)
	}
	return decodeStored(seq, m.Header, m.Data)
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
		if m.marker {
			continue
		}
		for o := max(from, m.first); o <= min(to, m.state.offset); o++ {
			pubs = append(pubs, m.at(o))
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
		top, found, err := s.top(channel, false)
		if err != nil || !found || !top.pubs {
			return err
		}
		r := top.stream
		top.floor = top.offset + 1
		m, err := newMsg(r.subject(channel), &top, nil, markRemoved)
		if err != nil {
			return err
		}
		seq, err := s.publishIfLast("remove history", m, top.seq)
		if err == nil && seq == 0 {
			continue
		}
		if err == nil {
			err = s.purge(r, channel, 1)
		}
		if err != nil {
			s.cache.del(channel)
			return err
		}
		top.seq, top.last, top.time, top.first, top.recent = seq, nil, time.Time{}, top.offset, [2]mark{}
		s.cache.put(channel, top)
		return nil
	}
	return fmt.Errorf("jetstream: remove history of %q: the channel keeps changing", channel)
}
