package memory

import (
	"bytes"
	"maps"
	"sync"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/same"
)

// Publish is PublishMany with one item.
func (b *Broker) Publish(channel string, data []byte, opts broker.PublishOptions) (broker.StreamPosition, bool, error) {
	item := [1]broker.PublishItem{{Channel: channel, Data: data, Opts: opts}}
	b.PublishMany(item[:])
	return item[0].Position, item[0].Suppressed, item[0].Err
}

// PublishMany publishes items and hands them to the handler given to Run
// before returning, as PublishManyTo does.
func (b *Broker) PublishMany(items []broker.PublishItem) {
	var h broker.RunHandler
	if eh := b.eventHandler(); eh != nil {
		h = eh
	}
	b.PublishManyTo(h, items)
}

// PublishManyTo publishes each stretch of consecutive items of one
// channel under one hold of the channel's lock and hands it to h (nothing
// is handed over when h is nil) in one HandleRuns call, still under the
// lock: the channel's run, then, for the items that have a pattern scope,
// one run per stretch of items with the same scope. An error from the
// handler is logged, not returned: the publications are already part of
// the stream, and a caller retrying them would publish them twice.
func (b *Broker) PublishManyTo(h broker.RunHandler, items []broker.PublishItem) {
	if err := b.checkOpen(); err != nil {
		for i := range items {
			items[i].Position, items[i].Suppressed, items[i].Err = broker.StreamPosition{}, false, err
		}
		return
	}
	sc := scratchPool.Get().(*scratch)
	// One time for the call: its publications are published together,
	// and a broadcast's then share one publication (sharedPub) and one
	// encoding, where a clock read per channel also split them at each
	// millisecond.
	now := time.Now()
	for len(items) > 0 {
		k := 1
		for k < len(items) && items[k].Channel == items[0].Channel {
			k++
		}
		b.publishStretch(h, items[:k], sc, now)
		items = items[k:]
	}
	sc.shared = sharedPub{} // the pool must not keep the caller's data alive
	scratchPool.Put(sc)
}

// scratch holds what PublishManyTo hands to a handler, kept between calls,
// and the publication its items may share.
type scratch struct {
	pubs   []broker.RunPublication
	runs   []broker.Run
	shared sharedPub
}

// sharedPub is the last publication of a PublishManyTo call that no
// stream keeps (no history, no delta base), with what it was made of. The
// next such item made of the same data slice, client info, tags and time
// is handed the same one (handed-over publications are read-only): a
// broadcast's items then share one copy of the payload instead of one
// per channel.
type sharedPub struct {
	data []byte
	info *broker.ClientInfo
	tags map[string]string
	time int64
	pub  *broker.Publication
}

// get returns the shared publication for data and opts at now, made anew
// when the last one was made of something else.
func (s *sharedPub) get(data []byte, opts *broker.PublishOptions, now time.Time) *broker.Publication {
	ms := now.UnixMilli()
	if s.pub != nil && s.time == ms && s.info == opts.ClientInfo && same.Bytes(s.data, data) && same.Map(s.tags, opts.Tags) {
		return s.pub
	}
	*s = sharedPub{data: data, info: opts.ClientInfo, tags: opts.Tags, time: ms, pub: newPublication(data, *opts, now)}
	return s.pub
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// publishStretch publishes items, all of one channel, at now, and hands
// them over.
func (b *Broker) publishStretch(h broker.RunHandler, items []broker.PublishItem, sc *scratch, now time.Time) {
	channel := items[0].Channel
	st := b.streams.lock(channel, true)
	defer st.mu.Unlock()
	st.expire(now.UnixNano())

	pubs := sc.pubs[:0]
	for i := range items {
		it := &items[i]
		var rp broker.RunPublication
		rp, it.Position, it.Suppressed = b.append(st, it.Data, &it.Opts, now, &sc.shared)
		it.Err = nil
		if !it.Suppressed {
			pubs = append(pubs, rp)
		}
	}
	if len(pubs) > 0 && h != nil {
		runs := append(sc.runs[:0], broker.Run{Channel: channel, Pubs: pubs})
		runs = appendPatternRuns(runs, channel, items, pubs)
		if err := h.HandleRuns(runs); err != nil {
			b.log.Error("memory: handle runs", "channel", channel, "publications", len(pubs), "error", err)
		}
		clear(runs)
		sc.runs = runs[:0]
	}
	clear(pubs) // the scratch must not keep the publications alive
	sc.pubs = pubs[:0]
}

// appendPatternRuns appends to runs the pattern runs of a stretch: its
// publications that have a pattern scope, one run per stretch of items
// with the same scope. pubs are the items that were not suppressed. With
// one node every scope is delivered, subscribed or not.
func appendPatternRuns(runs []broker.Run, channel string, items []broker.PublishItem, pubs []broker.RunPublication) []broker.Run {
	j, from, scope := 0, 0, "" // pubs[from:j] share scope, not in runs yet
	for i := range items {
		if items[i].Suppressed {
			continue
		}
		if s := items[i].Opts.PatternScope; s != scope {
			if j > from && scope != "" {
				runs = append(runs, broker.Run{Channel: channel, Scope: scope, Pubs: pubs[from:j]})
			}
			from, scope = j, s
		}
		j++
	}
	if j > from && scope != "" {
		runs = append(runs, broker.Run{Channel: channel, Scope: scope, Pubs: pubs[from:j]})
	}
	return runs
}

// append adds one publication to the locked stream st: history, the delta
// base and the idempotency key. It returns what a handler is given for it,
// or suppressed when the idempotency key was seen before. A publication
// the stream keeps nothing of comes from shared.
func (b *Broker) append(st *stream, data []byte, opts *broker.PublishOptions, now time.Time, shared *sharedPub) (rp broker.RunPublication, sp broker.StreamPosition, suppressed bool) {
	nowNano := now.UnixNano()
	if opts.IdempotencyKey != "" {
		if sp, ok := st.idemLookup(opts.IdempotencyKey, nowNano); ok {
			return rp, sp, true
		}
	}

	withHistory := opts.HistorySize > 0 && opts.HistoryTTL > 0
	versioned := withHistory && opts.Version > 0
	if versioned && st.stale(opts.Version, opts.VersionEpoch) {
		return rp, st.position(), true
	}
	var pub *broker.Publication
	if withHistory || opts.UseDelta {
		pub = newPublication(data, *opts, now)
	} else {
		pub = shared.get(data, opts, now)
	}
	metaTTL := orDefault(opts.HistoryMetaTTL, b.cfg.HistoryMetaTTL)
	if withHistory {
		st.ensureMeta(nowNano + int64(metaTTL))
		if versioned {
			st.version, st.versionEpoch = opts.Version, opts.VersionEpoch
		}
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
	return broker.RunPublication{Pub: traced(pub, opts.Trace), Position: sp, Delta: opts.UseDelta, Prev: prev}, sp, false
}

// traced is pub as handed over with trace: pub itself without one, else a
// copy carrying a copy of it, so that what the stream keeps (history, the
// delta base) never holds a trace.
func traced(pub *broker.Publication, trace []byte) *broker.Publication {
	if len(trace) == 0 {
		return pub
	}
	t := new(tracedPublication)
	t.pub = *pub
	t.pub.Trace = append(t.trace[:0], trace...)
	return &t.pub
}

// tracedPublication holds a publication and the bytes of its trace in one
// allocation when the trace is of the usual size.
type tracedPublication struct {
	pub   broker.Publication
	trace [25]byte
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
