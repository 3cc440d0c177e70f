package jetstream

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// A channel's position lives in the headers of its messages, which
// expire with them, and in their copies, which outlive them. The meta
// stream keeps one record per channel besides: the epoch History handed
// out before the channel's first publication, or the stream the channel
// lives in with the position it started there (a new life, or one carried
// over from another stream). See the package documentation.
const (
	hdrState  = "Gyre-State"
	hdrStream = "Gyre-Stream"

	// statePending: Epoch was handed out by History; no publication has
	// it yet. stateUsed: the channel lives in Stream, where it started
	// at the record's position; it may have ended since.
	statePending = "pending"
	stateUsed    = "used"
)

type record struct {
	seq    uint64 // 0: no record
	state  string
	stream string
	pos    chanState // offset, epoch, floor, version, meta TTL, time
}

// newEpoch returns a short random epoch: 48 random bits, eight characters.
func newEpoch() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *Store) readRecord(meta *streamRef, channel string) (record, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	raw, err := meta.s.GetLastMsgForSubject(ctx, meta.subject(channel))
	if errors.Is(err, js.ErrMsgNotFound) {
		return record{}, nil
	}
	if err != nil {
		return record{}, wrap("read epoch record", err)
	}
	r := record{seq: raw.Sequence, state: raw.Header.Get(hdrState), stream: raw.Header.Get(hdrStream)}
	if err := parsePos(raw.Header.Get(hdrPos), &r.pos); err != nil {
		return record{}, fmt.Errorf("jetstream: epoch record of %q: %w", channel, err)
	}
	r.pos.time = raw.Time
	return r, nil
}

// writeRecord replaces the channel's record if it is still the one at
// prev (0: none); ok is false when another node changed it first.
func (s *Store) writeRecord(meta *streamRef, channel string, prev uint64, r record) (ok bool, err error) {
	h := nats.Header{hdrState: {r.state}}
	setHeaders(h, &r.pos, "")
	if r.stream != "" {
		h[hdrStream] = []string{r.stream}
	}
	seq, err := s.publishIfLast("write epoch record", &nats.Msg{Subject: meta.subject(channel), Header: h}, prev)
	return seq != 0, err
}

// publishIfLast publishes m if the last message of its subject is still
// at sequence prev (0: none), and returns its sequence; 0 when the
// subject had moved on.
func (s *Store) publishIfLast(what string, m *nats.Msg, prev uint64) (uint64, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	ack, err := s.js.PublishMsg(ctx, m, js.WithExpectLastSequencePerSubject(prev))
	if isWrongLastSeq(err) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap(what, err)
	}
	return ack.Sequence, nil
}

func isWrongLastSeq(err error) bool {
	if err == nil {
		return false
	}
	var apiErr *js.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == js.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == js.JSErrCodeStreamWrongLastSequenceConstant)
}

// subjectTop reads the channel's last message in r.
func (s *Store) subjectTop(r *streamRef, channel string) (chanState, bool, error) {
	return s.lastOf(r, r.s, channel, true)
}

// copyTop reads the copy of the channel's last message in r, which
// outlives the message (seq is 0: it says nothing of r's subject).
func (s *Store) copyTop(r *streamRef, channel string) (chanState, bool, error) {
	return s.lastOf(r, r.copies, channel, false)
}

func (s *Store) lastOf(r *streamRef, st js.Stream, channel string, own bool) (chanState, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	raw, err := st.GetLastMsgForSubject(ctx, r.subject(channel))
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
	c := m.state
	c.stream, c.last, c.time = r, m.pub, raw.Time
	c.first, c.run = m.first, m.pubs
	if own {
		c.seq, c.pubs = raw.Sequence, c.moved == ""
	}
	return c, true, nil
}

// liveTop returns the channel's position in r, if one still stands: its
// last message there, else the newest of the copy of that message and of
// rec's position when rec names r, if its meta TTL has not passed. The
// state's seq is r's subject's last sequence, whatever the position came
// from.
func (s *Store) liveTop(r *streamRef, channel string, rec *record) (chanState, bool, error) {
	sub, ok, err := s.subjectTop(r, channel)
	if err != nil || ok && sub.moved == "" {
		return sub, ok, err
	}
	var best chanState
	found, standing := false, false
	if ok {
		// The marker of a move whose record was not written (the mover is
		// at it, or died): its position stands, as its message does.
		best, found, standing = sub, true, true
	} else {
		cp, cok, err := s.copyTop(r, channel)
		if err != nil {
			return chanState{}, false, err
		}
		best, found = cp, cok
	}
	if rec != nil && rec.state == stateUsed && rec.stream == r.name && rec.pos.epoch != "" {
		if !found || newer(&rec.pos, &best) {
			best, found, standing = rec.pos, true, false
		}
	}
	if !found || !standing && !best.alive(time.Now()) {
		return chanState{stream: r, seq: sub.seq}, false, nil
	}
	best.stream, best.seq, best.pubs = r, sub.seq, false
	if best.moved != "" {
		best.last = nil
	}
	best.moved = ""
	return best, true, nil
}

// newer reports whether a is a later position than b: the greater offset
// in one epoch, else the later write.
func newer(a, b *chanState) bool {
	if a.epoch == b.epoch {
		return a.offset > b.offset
	}
	return a.time.After(b.time)
}

// carry returns the state a publication of the channel into d starts
// from, when d holds no standing position of it (nothing, or the marker
// of a move away). The record names where the channel lives: when its
// position stands there, it is carried over into d (same epoch, the next
// offset); else the channel starts a new life in d, with the epoch History
// handed out if one is pending, else a new one.
//
// A move first fences the old stream, writing there, conditionally on
// its last sequence, a marker that holds the position and names d: an
// appender there fails its own condition from then on, reads the marker
// and comes through here. Then the record turns to d, conditionally on
// its own last sequence, so that of two nodes moving the channel (or
// starting a life) one goes on and the other reads again. Only then is
// anything published in d, so an offset is never handed out twice in an
// epoch, whatever moves, expires or crashes.
func (s *Store) carry(d *streamRef, channel string, metaTTL time.Duration) (chanState, error) {
	meta, err := s.metaStream()
	if err != nil {
		return chanState{}, err
	}
	for range maxAttempts {
		rec, err := s.readRecord(meta, channel)
		if err != nil {
			return chanState{}, err
		}
		subD, okD, err := s.subjectTop(d, channel)
		if err != nil {
			return chanState{}, err
		}
		if okD && subD.moved == "" {
			return subD, nil // another node started it in d meanwhile
		}
		var src *streamRef
		var top chanState
		found := false
		if rec.state == stateUsed && rec.stream != "" {
			if src, err = s.streamNamed(rec.stream); err != nil {
				return chanState{}, err
			}
			if src != nil {
				if top, found, err = s.liveTop(src, channel, &rec); err != nil {
					return chanState{}, err
				}
			}
		}
		next := chanState{stream: d, seq: subD.seq, metaTTL: metaTTL, leftover: okD}
		move := found && src != d
		var fenced uint64
		switch {
		case found:
			next.offset, next.epoch, next.floor = top.offset, top.epoch, top.floor
			next.version, next.versionEpoch, next.last = top.version, top.versionEpoch, top.last
			if move {
				// History does not follow a channel into its old stream.
				next.floor = top.offset + 1
				if fenced, err = s.fence(src, channel, top, d.name); err != nil || fenced == 0 {
					if err != nil {
						return chanState{}, err
					}
					continue
				}
			}
		case rec.state == statePending && rec.pos.epoch != "":
			next.epoch = rec.pos.epoch
		default:
			next.epoch = newEpoch()
		}
		ok, err := s.writeRecord(meta, channel, rec.seq, record{state: stateUsed, stream: d.name, pos: next})
		if err != nil {
			return chanState{}, err
		}
		if !ok {
			continue
		}
		if move {
			// What the channel left behind goes; the marker stays, as the
			// last message an appender there finds.
			s.purgeBelow(src, channel, fenced)
		}
		return next, nil
	}
	return chanState{}, fmt.Errorf("jetstream: channel %q: epoch record keeps changing", channel)
}

// fence writes into r the marker of the channel's move to the stream
// named to, if the channel's last message in r is still at top.seq, and
// returns its sequence (0: r moved on).
func (s *Store) fence(r *streamRef, channel string, top chanState, to string) (uint64, error) {
	m, err := newMsg(r.subject(channel), &top, nil, markMoved+to)
	if err != nil {
		return 0, err
	}
	return s.publishIfLast("fence the old stream of a moved channel", m, top.seq)
}

// purge drops the channel's messages in r but for the last keep.
func (s *Store) purge(r *streamRef, channel string, keep uint64) error {
	ctx, cancel := s.ctx()
	defer cancel()
	opts := []js.StreamPurgeOpt{js.WithPurgeSubject(r.subject(channel))}
	if keep > 0 {
		opts = append(opts, js.WithPurgeKeep(keep))
	}
	return wrap("purge "+r.name, r.s.Purge(ctx, opts...))
}

// purgeAsync is purge without waiting for the answer: for trimming, which
// the next trim or HistoryTTL makes up for when it is lost.
func (s *Store) purgeAsync(r *streamRef, channel string, keep uint64) {
	s.purgeRequest(r, fmt.Appendf(nil, `{"filter":%q,"keep":%d}`, r.subject(channel), keep))
}

// purgeBelow drops, without waiting, the channel's messages in r before
// sequence seq: what it left in a stream, never what came after.
func (s *Store) purgeBelow(r *streamRef, channel string, seq uint64) {
	s.purgeRequest(r, fmt.Appendf(nil, `{"filter":%q,"seq":%d}`, r.subject(channel), seq))
}

func (s *Store) purgeRequest(r *streamRef, body []byte) {
	_ = s.nc.PublishRequest("$JS.API.STREAM.PURGE."+r.name, s.acks.noReply(), body)
}

// recordedTop finds the channel's top when the stream the cache names
// does not hold it: through its record (the stream it lives in), or, with
// no record, in every stream of the store. A channel found nowhere gets
// a pending epoch that its first publication will take.
func (s *Store) recordedTop(channel string, peek bool) (chanState, bool, error) {
	meta, err := s.metaStream()
	if err != nil {
		return chanState{}, false, err
	}
	for range maxAttempts {
		rec, err := s.readRecord(meta, channel)
		if err != nil {
			return chanState{}, false, err
		}
		switch rec.state {
		case statePending:
			return chanState{epoch: rec.pos.epoch}, false, nil
		case stateUsed:
			r, err := s.streamNamed(rec.stream)
			if err != nil {
				return chanState{}, false, err
			}
			if r != nil {
				st, found, err := s.liveTop(r, channel, &rec)
				if err != nil || found {
					return st, found, err
				}
			}
		default:
			st, found, err := s.findAnywhere(channel)
			if err != nil || found {
				return st, found, err
			}
		}
		if peek {
			return chanState{}, false, nil
		}
		pending := record{state: statePending, pos: chanState{epoch: newEpoch(), metaTTL: s.cfg.MetaTTL}}
		ok, err := s.writeRecord(meta, channel, rec.seq, pending)
		if err != nil {
			return chanState{}, false, err
		}
		if ok {
			return chanState{epoch: pending.pos.epoch}, false, nil
		}
	}
	return chanState{}, false, fmt.Errorf("jetstream: channel %q: epoch record keeps changing", channel)
}

// findAnywhere looks for the channel in every history stream (its record
// expired); when it stands in two, the later write wins.
func (s *Store) findAnywhere(channel string) (chanState, bool, error) {
	streams, err := s.historyStreams()
	if err != nil {
		return chanState{}, false, err
	}
	var best chanState
	found := false
	for _, r := range streams {
		st, ok, err := s.liveTop(r, channel, nil)
		if err != nil {
			return chanState{}, false, err
		}
		if ok && (!found || st.time.After(best.time)) {
			best, found = st, true
		}
	}
	return best, found, nil
}
