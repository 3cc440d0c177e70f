package memory

import (
	"bytes"
	"maps"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// Publish stores the publication when history is on and hands it to the
// handler before returning, under the channel's lock; with
// opts.PatternScope, then to the handler's HandlePatternPublication too
// when it implements broker.PatternHandler. An error from the handler is
// logged, not returned: the publication is already part of the stream,
// and a caller retrying it would publish it twice.
func (b *Broker) Publish(channel string, data []byte, opts broker.PublishOptions) (broker.StreamPosition, bool, error) {
	var h broker.PublicationHandler
	if eh := b.eventHandler(); eh != nil {
		h = eh
	}
	return b.PublishTo(h, channel, data, opts)
}

// PublishTo is Publish handing the publication to h instead of the handler
// given to Run (nothing is handed over when h is nil); the pattern
// delivery goes to h too.
func (b *Broker) PublishTo(h broker.PublicationHandler, channel string, data []byte, opts broker.PublishOptions) (broker.StreamPosition, bool, error) {
	if err := b.checkOpen(); err != nil {
		return broker.StreamPosition{}, false, err
	}
	now := time.Now()
	st := b.streams.lock(channel, true)
	defer st.mu.Unlock()
	st.expire(now.UnixNano())

	rp, sp, suppressed := b.append(st, data, opts, now)
	if h != nil && !suppressed {
		if err := h.HandlePublication(channel, rp.Pub, sp, rp.Delta, rp.Prev); err != nil {
			b.log.Error("memory: handle publication", "channel", channel, "offset", sp.Offset, "error", err)
		}
		if opts.PatternScope != "" {
			if ph, ok := h.(broker.PatternHandler); ok {
				b.handlePattern(ph, opts.PatternScope, channel, rp.Pub)
			}
		}
	}
	return sp, suppressed, nil
}

// handlePattern hands a publication to the pattern handler, under the
// channel's lock like HandlePublication. With one node every scope is
// delivered, subscribed or not.
func (b *Broker) handlePattern(ph broker.PatternHandler, scope, channel string, pub *broker.Publication) {
	if err := ph.HandlePatternPublication(scope, channel, pub); err != nil {
		b.log.Error("memory: handle pattern publication", "scope", scope, "channel", channel, "offset", pub.Offset, "error", err)
	}
}

// PublishRunTo publishes the run in order under one hold of the channel's
// lock and hands it to h in one call, before any other publication of the
// channel can come between. When h implements broker.PatternHandler, the
// run's publications that have a pattern scope then go to its
// HandlePatternPublication one by one, in order, still under the lock.
func (b *Broker) PublishRunTo(h broker.RunHandler, channel string, run []broker.RunItem) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	now := time.Now()
	st := b.streams.lock(channel, true)
	defer st.mu.Unlock()
	st.expire(now.UnixNano())

	pubs := make([]broker.RunPublication, 0, len(run))
	for i := range run {
		it := &run[i]
		var rp broker.RunPublication
		rp, it.Position, it.Suppressed = b.append(st, it.Data, it.Opts, now)
		if !it.Suppressed {
			pubs = append(pubs, rp)
		}
	}
	if len(pubs) > 0 && h != nil {
		if err := h.HandleRun(channel, pubs); err != nil {
			b.log.Error("memory: handle run", "channel", channel, "publications", len(pubs), "error", err)
		}
		if ph, ok := h.(broker.PatternHandler); ok {
			b.handleRunPatterns(ph, channel, run, pubs)
		}
	}
	return nil
}

// handleRunPatterns hands the run's publications that have a pattern
// scope to the pattern handler, in order; pubs are the run's publications
// that were not suppressed.
// A handler that takes runs (broker.PatternRunHandler) is given each
// stretch of publications with one scope in one call.
func (b *Broker) handleRunPatterns(ph broker.PatternHandler, channel string, run []broker.RunItem, pubs []broker.RunPublication) {
	rh, runs := ph.(broker.PatternRunHandler)
	j, from := 0, 0 // pubs[from:j] share a scope, not handed over yet
	flush := func(scope string) {
		if j > from && scope != "" {
			if err := rh.HandlePatternRun(scope, channel, pubs[from:j]); err != nil {
				b.log.Error("memory: handle pattern run", "scope", scope, "channel", channel, "publications", j-from, "error", err)
			}
		}
		from = j
	}
	scope := ""
	for i := range run {
		if run[i].Suppressed {
			continue
		}
		s := run[i].Opts.PatternScope
		switch {
		case !runs:
			if s != "" {
				b.handlePattern(ph, s, channel, pubs[j].Pub)
			}
		case s != scope:
			flush(scope)
			scope = s
		}
		j++
	}
	if runs {
		flush(scope)
	}
}

// append adds one publication to the locked stream st: history, the delta
// base and the idempotency key. It returns what a handler is given for it,
// or suppressed when the idempotency key was seen before.
func (b *Broker) append(st *stream, data []byte, opts broker.PublishOptions, now time.Time) (rp broker.RunPublication, sp broker.StreamPosition, suppressed bool) {
	nowNano := now.UnixNano()
	if opts.IdempotencyKey != "" {
		if sp, ok := st.idemLookup(opts.IdempotencyKey, nowNano); ok {
			return rp, sp, true
		}
	}

	pub := newPublication(data, opts, now)
	metaTTL := orDefault(opts.HistoryMetaTTL, b.cfg.HistoryMetaTTL)
	withHistory := opts.HistorySize > 0 && opts.HistoryTTL > 0
	if withHistory {
		st.ensureMeta(nowNano + int64(metaTTL))
		st.top++
		pub.Offset = st.top
		st.hist.push(histEntry{pub: pub, expires: nowNano + int64(opts.HistoryTTL)}, opts.HistorySize)
		sp = st.position()
	}

	prev := st.last
	if withHistory || opts.UseDelta {
		st.last, st.lastExpires = pub, nowNano+int64(metaTTL)
	} else {
		// Subscribers get this one in full; a later delta must not be
		// computed against an older base.
		st.last = nil
	}
	if opts.IdempotencyKey != "" {
		ttl := orDefault(opts.IdempotentResultTTL, b.cfg.IdempotentResultTTL)
		st.idemStore(opts.IdempotencyKey, sp, nowNano+int64(ttl))
	}
	if !opts.UseDelta {
		prev = nil
	}
	return broker.RunPublication{Pub: pub, Delta: opts.UseDelta, Prev: prev}, sp, false
}

// newPublication copies everything the caller passed, so that the caller
// may reuse its buffers once Publish returns.
func newPublication(data []byte, opts broker.PublishOptions, now time.Time) *broker.Publication {
	return &broker.Publication{
		Data: bytes.Clone(data),
		Info: cloneInfo(opts.ClientInfo),
		Tags: maps.Clone(opts.Tags),
		Time: now.UnixMilli(),
	}
}

func cloneInfo(info *broker.ClientInfo) *broker.ClientInfo {
	if info == nil {
		return nil
	}
	return &broker.ClientInfo{
		ClientID: info.ClientID,
		UserID:   info.UserID,
		ConnInfo: bytes.Clone(info.ConnInfo),
		ChanInfo: bytes.Clone(info.ChanInfo),
	}
}
