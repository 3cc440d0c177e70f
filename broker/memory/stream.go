package memory

import "github.com/gyrehq/gyre/broker"

// stream is the state of one channel: its lock, which serializes publishes
// and their delivery, the stream meta and history, the publication kept for
// delta compression and the remembered idempotency results. All fields but
// channel are guarded by mu.
type stream struct {
	entryBase

	epoch       string // "" while the channel has no stream
	top         uint64
	metaExpires int64 // Unix nanoseconds
	hist        ring
	// version and versionEpoch are those of the last versioned
	// publication; part of the meta.
	version      uint64
	versionEpoch string

	last        *broker.Publication // previous publication for delta, nil when unknown
	lastExpires int64

	idemCache
}

func newStream(channel string, _ int) *stream {
	return &stream{entryBase: entryBase{channel: channel}}
}

// expire drops whatever has expired at now. Work is proportional to what
// is dropped, so it is paid once per stored item.
func (s *stream) expire(now int64) {
	if s.epoch != "" && s.metaExpires <= now {
		s.epoch, s.top = "", 0
		s.version, s.versionEpoch = 0, ""
		s.hist.reset()
	}
	s.hist.dropExpired(now)
	if s.last != nil && s.lastExpires <= now {
		s.last = nil
	}
	s.expireIdem(now)
}

// sweep drops what has expired at now and reports whether nothing is
// left worth keeping.
func (s *stream) sweep(now int64) bool {
	s.expire(now)
	return s.epoch == "" && s.last == nil && len(s.idem) == 0
}

// ensureMeta creates the stream if the channel has none and keeps its meta
// at least until metaExpires.
func (s *stream) ensureMeta(metaExpires int64) {
	if s.epoch == "" {
		s.epoch, s.top = newEpoch(), 0
		s.version, s.versionEpoch = 0, ""
		s.hist.reset()
	}
	s.metaExpires = max(s.metaExpires, metaExpires)
}

// stale reports whether a publication of this version and epoch is not
// newer than the stream's last versioned one.
func (s *stream) stale(version uint64, epoch string) bool {
	return s.epoch != "" && (epoch == "" || epoch == s.versionEpoch) && version <= s.version
}

func (s *stream) position() broker.StreamPosition {
	return broker.StreamPosition{Offset: s.top, Epoch: s.epoch}
}
