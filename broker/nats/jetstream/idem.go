package jetstream

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/broker"
)

// Idempotency results are messages of their own stream, one subject per
// channel and key (hashed), one message per subject: first a claim, then
// the result with its TTL. Both are written conditionally on the
// subject's last sequence, so that of two nodes publishing one key only
// one publishes; the other waits for the result and answers with it.
//
// A claim that lapsed may hide a publication that was stored: its ack
// was lost, or its node died before writing the result. The claim that
// takes over carries the lapsed one's origin (the sequence of the first
// claim of the series), and the publication goes with a message id made
// of the key and that origin, so JetStream's duplicate window recognises
// a publication stored by any attempt of the series.
const (
	hdrKeyTTL   = "Gyre-TTL"    // ms the result is remembered
	hdrOrigin   = "Gyre-Origin" // on a claim that took over a lapsed one
	hdrMsgID    = "Nats-Msg-Id"
	keyClaimed  = "claimed"
	keyDone     = "done"
	claimPause  = 5 * time.Millisecond
	keyHashSize = 16
)

// keyToken is the subject token of an idempotency key of a channel.
func keyToken(channel, key string) string {
	h := sha256.New()
	h.Write([]byte(channel))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil)[:keyHashSize])
}

// msgID is the message id of a keyed publication: the same for every
// attempt of one claim series (origin), another once a result expired.
func msgID(channel, key string, origin uint64) string {
	return keyToken(channel, key) + "." + strconv.FormatUint(origin, 10)
}

func (s *Store) keyTTL(o *broker.PublishOptions) time.Duration {
	return min(orDefault(o.IdempotentResultTTL, s.cfg.IdempotentResultTTL), s.cfg.MaxIdempotentResultTTL)
}

// claimKey settles the item (Suppressed, at the first result's position)
// when its key's result is remembered, and otherwise claims the key for
// it (c.claim). A claim of another node that is in flight is waited for
// at most Config.Timeout, after which it counts as lapsed (its node
// failed).
func (s *Store) claimKey(c *chain, it *broker.StoreItem) (settled bool, err error) {
	r, err := s.idemStream()
	if err != nil {
		return false, err
	}
	subj := r.base + keyToken(c.channel, it.Opts.IdempotencyKey)
	deadline := time.Now().Add(s.cfg.Timeout)
	for {
		raw, err := s.lastKeyMsg(r, subj)
		if err != nil {
			return false, err
		}
		var prev, origin uint64
		if raw != nil {
			prev = raw.Sequence
			now := time.Now()
			switch raw.Header.Get(hdrState) {
			case keyDone:
				ttl, _ := strconv.ParseInt(raw.Header.Get(hdrKeyTTL), 10, 64)
				if raw.Time.Add(time.Duration(ttl) * time.Millisecond).After(now) {
					var st chanState
					if err := parsePos(raw.Header.Get(hdrPos), &st); err != nil {
						return false, wrap("read idempotency result", err)
					}
					it.Position, it.Suppressed = st.position(), true
					return true, nil
				}
			case keyClaimed:
				if raw.Time.Add(s.cfg.Timeout).After(now) && now.Before(deadline) {
					time.Sleep(claimPause)
					continue
				}
				origin, _ = strconv.ParseUint(raw.Header.Get(hdrOrigin), 10, 64)
				if origin == 0 {
					origin = raw.Sequence
				}
			}
		}
		m := &nats.Msg{Subject: subj, Header: nats.Header{hdrState: {keyClaimed}}}
		if origin != 0 {
			m.Header.Set(hdrOrigin, strconv.FormatUint(origin, 10))
		}
		seq, err := s.publishIfLast("claim idempotency key", m, prev)
		if err != nil {
			return false, err
		}
		if seq != 0 {
			c.claim, c.origin = seq, origin
			if origin == 0 {
				c.origin = seq
			}
			return false, nil
		}
	}
}

func (s *Store) lastKeyMsg(r *streamRef, subj string) (*js.RawStreamMsg, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	raw, err := r.s.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, js.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("read idempotency result", err)
	}
	return raw, nil
}

// finishKey replaces the item's claim with its result. Should that fail,
// the claim lapses after Config.Timeout and the key is free again.
func (s *Store) finishKey(c *chain, it *broker.StoreItem) {
	r, err := s.idemStream()
	if err == nil {
		st := chanState{offset: it.Position.Offset, epoch: it.Position.Epoch}
		h := nats.Header{hdrState: {keyDone}, hdrKeyTTL: {strconv.FormatInt(s.keyTTL(&it.Opts).Milliseconds(), 10)}}
		setHeaders(h, &st, "")
		subj := r.base + keyToken(c.channel, it.Opts.IdempotencyKey)
		var seq uint64
		seq, err = s.publishIfLast("store idempotency result", &nats.Msg{Subject: subj, Header: h}, c.claim)
		if err == nil && seq == 0 {
			err = errors.New("the claim lapsed")
		}
	}
	if err != nil {
		s.log.Warn("jetstream: idempotency result not stored", "channel", c.channel, "error", err)
	}
}
