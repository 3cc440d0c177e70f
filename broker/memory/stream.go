package memory

import (
	"sync"

	"github.com/gyrehq/gyre/broker"
)

// stream is the state of one channel: its lock, which serializes publishes
// and their delivery, the stream meta and history, the publication kept for
// delta compression and the remembered idempotency results. All fields but
// channel and idx are guarded by mu; idx is guarded by the shard's lock.
type stream struct {
	mu      sync.Mutex
	channel string
	removed bool // out of the shard map: callers holding it look it up again

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

	idem      map[string]idemResult
	idemQueue []idemKey // keys in insertion order, for expiry without scanning the map
	idemHead  int
}

type idemResult struct {
	sp      broker.StreamPosition
	expires int64
}

type idemKey struct {
	key     string
	expires int64
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

// idle reports whether nothing is left worth keeping, after expire.
func (s *stream) idle() bool {
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

func (s *stream) idemLookup(key string, now int64) (broker.StreamPosition, bool) {
	r, ok := s.idem[key]
	if !ok || r.expires <= now {
		return broker.StreamPosition{}, false
	}
	return r.sp, true
}

func (s *stream) idemStore(key string, sp broker.StreamPosition, expires int64) {
	if s.idem == nil {
		s.idem = make(map[string]idemResult)
	}
	s.idem[key] = idemResult{sp: sp, expires: expires}
	s.idemQueue = append(s.idemQueue, idemKey{key: key, expires: expires})
}

// expireIdem drops keys from the front of the insertion queue while they
// have expired. A key stored again after expiring has a newer entry in the
// map, which the older queue item must not remove.
func (s *stream) expireIdem(now int64) {
	for s.idemHead < len(s.idemQueue) && s.idemQueue[s.idemHead].expires <= now {
		k := s.idemQueue[s.idemHead]
		if r, ok := s.idem[k.key]; ok && r.expires == k.expires {
			delete(s.idem, k.key)
		}
		s.idemQueue[s.idemHead] = idemKey{}
		s.idemHead++
	}
	switch {
	case s.idemHead == len(s.idemQueue):
		s.idemQueue, s.idemHead = s.idemQueue[:0], 0
		if len(s.idem) == 0 {
			s.idem, s.idemQueue = nil, nil
		}
	case s.idemHead > len(s.idemQueue)/2:
		n := copy(s.idemQueue, s.idemQueue[s.idemHead:])
		clear(s.idemQueue[n:])
		s.idemQueue, s.idemHead = s.idemQueue[:n], 0
	}
}
