package jetstream

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// A channel's epoch lives in the headers of its messages, which expire
// with them. The meta stream keeps one record per channel besides, so
// that an epoch handed out before the channel's first publication (by
// History) is the one that publication gets, and so that History finds
// the stream a channel lives in. See the package documentation.
const (
	hdrState  = "Gyre-State"
	hdrStream = "Gyre-Stream"

	// statePending: Epoch was handed out by History; no publication has
	// it yet. stateUsed: a life of the channel in Stream started with
	// Epoch; it may have expired since.
	statePending = "pending"
	stateUsed    = "used"
)

type record struct {
	seq    uint64 // 0: no record
	state  string
	epoch  string
	stream string
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
	return record{seq: raw.Sequence, state: raw.Header.Get(hdrState), epoch: raw.Header.Get(hdrEpoch), stream: raw.Header.Get(hdrStream)}, nil
}

// writeRecord replaces the channel's record if it is still the one at
// prev (0: none); ok is false when another node changed it first.
func (s *Store) writeRecord(meta *streamRef, channel string, prev uint64, r record) (ok bool, err error) {
	h := nats.Header{hdrState: {r.state}, hdrEpoch: {r.epoch}}
	if r.stream != "" {
		h[hdrStream] = []string{r.stream}
	}
	ctx, cancel := s.ctx()
	defer cancel()
	_, err = s.js.PublishMsg(ctx, &nats.Msg{Subject: meta.subject(channel), Header: h}, js.WithExpectLastSequencePerSubject(prev))
	if isWrongLastSeq(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap("write epoch record", err)
	}
	return true, nil
}

func isWrongLastSeq(err error) bool {
	var apiErr *js.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == js.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == js.JSErrCodeStreamWrongLastSequenceConstant)
}

// startLife returns the epoch of a new life of the channel in r, whose
// subject there is empty: the epoch History handed out if there is one
// pending, else a new one. The record moves to "used" before anything is
// published with the epoch, and only one node can make that move, so an
// epoch names at most one life: offsets are never handed out twice in
// one epoch, whatever expires and whoever crashes.
func (s *Store) startLife(r *streamRef, channel string) (string, error) {
	meta, err := s.metaStream()
	if err != nil {
		return "", err
	}
	for range maxAttempts {
		rec, err := s.readRecord(meta, channel)
		if err != nil {
			return "", err
		}
		epoch := newEpoch()
		if rec.state == statePending && rec.epoch != "" {
			epoch = rec.epoch
		}
		ok, err := s.writeRecord(meta, channel, rec.seq, record{state: stateUsed, epoch: epoch, stream: r.name})
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		if rec.state == stateUsed && rec.stream != "" && rec.stream != r.name {
			s.dropMoved(rec.stream, channel)
		}
		return epoch, nil
	}
	return "", fmt.Errorf("jetstream: channel %q: epoch record keeps changing", channel)
}

// dropMoved purges what a channel left in the stream it lived in before
// its namespace's history settings changed, so that no node finds the old
// life there. Failing only costs the old life lingering until it expires.
func (s *Store) dropMoved(stream, channel string) {
	r, err := s.streamNamed(stream)
	if err != nil || r == nil {
		return
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if err := r.s.Purge(ctx, js.WithPurgeSubject(r.subject(channel))); err != nil {
		s.log.Warn("jetstream: purge the old stream of a moved channel", "channel", channel, "stream", stream, "error", err)
	}
}

// pendingTop finds the top of a channel its cached stream did not hold:
// through its record (the stream it lives in), or, with no record, in
// every stream of the store. A channel found nowhere gets a pending epoch
// that its first publication will take.
func (s *Store) pendingTop(channel string) (chanState, bool, error) {
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
			return chanState{epoch: rec.epoch}, false, nil
		case stateUsed:
			st, found, err := s.findIn(rec.stream, channel)
			if err != nil || found {
				return st, found, err
			}
		default:
			st, found, err := s.findAnywhere(channel)
			if err != nil || found {
				return st, found, err
			}
		}
		epoch := newEpoch()
		ok, err := s.writeRecord(meta, channel, rec.seq, record{state: statePending, epoch: epoch})
		if err != nil {
			return chanState{}, false, err
		}
		if ok {
			return chanState{epoch: epoch}, false, nil
		}
	}
	return chanState{}, false, fmt.Errorf("jetstream: channel %q: epoch record keeps changing", channel)
}

func (s *Store) findIn(stream, channel string) (chanState, bool, error) {
	r, err := s.streamNamed(stream)
	if err != nil || r == nil {
		return chanState{}, false, err
	}
	return s.lastState(r, channel)
}

// findAnywhere looks for the channel in every history stream; when a
// channel is in two (its settings changed and the old life was not
// purged), the newer life wins.
func (s *Store) findAnywhere(channel string) (chanState, bool, error) {
	streams, err := s.historyStreams()
	if err != nil {
		return chanState{}, false, err
	}
	var best chanState
	var bestTime int64
	found := false
	for _, r := range streams {
		st, ok, err := s.lastState(r, channel)
		if err != nil {
			return chanState{}, false, err
		}
		if ok && (!found || st.lastTime > bestTime) {
			best, bestTime, found = st, st.lastTime, true
		}
	}
	return best, found, nil
}
