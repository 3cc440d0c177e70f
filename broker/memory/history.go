package memory

import (
	"time"

	"github.com/gyrehq/gyre/broker"
)

// History returns publications of the channel and its stream top,
// following the rules in the package documentation. It creates the stream
// when the channel has none and keeps its meta alive for opts.MetaTTL (or
// Config.HistoryMetaTTL).
func (b *Broker) History(channel string, opts broker.HistoryOptions) ([]*broker.Publication, broker.StreamPosition, error) {
	if err := b.checkOpen(); err != nil {
		return nil, broker.StreamPosition{}, err
	}
	now := time.Now().UnixNano()
	st := b.streams.lock(channel, true)
	defer st.mu.Unlock()
	st.expire(now)
	st.ensureMeta(now + int64(orDefault(opts.MetaTTL, b.cfg.HistoryMetaTTL)))
	top := st.position()

	f := opts.Filter
	if since := f.Since; since != nil && (since.Epoch != top.Epoch || since.Offset > top.Offset) {
		return nil, top, broker.ErrUnrecoverablePosition
	}
	if f.Limit == 0 || st.hist.len() == 0 {
		return nil, top, nil
	}
	return clonePublications(selectHistory(&st.hist, f, now)), top, nil
}

// selectHistory returns the stored publications that f selects, in the
// order it asks for. Offsets in the ring are consecutive, so the start
// index follows from Since without a search.
func selectHistory(r *ring, f broker.HistoryFilter, now int64) []*broker.Publication {
	first := r.at(0).pub.Offset
	// Indexes lo..hi (inclusive) hold the candidates.
	lo, hi := 0, r.len()-1
	if f.Since != nil {
		if f.Reverse {
			if f.Since.Offset <= first {
				return nil
			}
			hi = min(hi, int(f.Since.Offset-1-first))
		} else if f.Since.Offset >= first {
			lo = int(f.Since.Offset + 1 - first)
		}
	}
	limit := hi - lo + 1
	if f.Limit > 0 && f.Limit < limit {
		limit = f.Limit
	}
	if limit <= 0 {
		return nil
	}
	out := make([]*broker.Publication, 0, limit)
	take := func(i int) bool {
		if e := r.at(i); e.expires > now {
			out = append(out, e.pub)
		}
		return len(out) < limit
	}
	if f.Reverse {
		for i := hi; i >= lo && take(i); i-- {
		}
	} else {
		for i := lo; i <= hi && take(i); i++ {
		}
	}
	return out
}

// RemoveHistory drops the channel's stored publications. The stream's
// offset and epoch stay, so the next publish continues the stream.
func (b *Broker) RemoveHistory(channel string) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	st := b.streams.lock(channel, false)
	if st == nil {
		return nil
	}
	defer st.mu.Unlock()
	st.hist.reset()
	return nil
}
