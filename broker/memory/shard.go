package memory

import (
	"hash/maphash"
	"sync"
)

// shard is one independently locked part of the channel map. list holds
// the same streams as the map so that the sweeper can resume where it
// stopped; Go maps have no cursor.
type shard struct {
	mu      sync.RWMutex
	streams map[string]*stream
	list    []*stream
	cursor  int
}

type shards struct {
	seed maphash.Seed
	all  []shard
}

func newShards(n int) shards {
	s := shards{seed: maphash.MakeSeed(), all: make([]shard, n)}
	for i := range s.all {
		s.all[i].streams = make(map[string]*stream)
	}
	return s
}

func (s *shards) of(channel string) *shard {
	return &s.all[maphash.String(s.seed, channel)%uint64(len(s.all))]
}

// lock returns the channel's stream with its lock held, creating it when
// create is set; without create it returns nil for an unknown channel. The
// shard lock is released before the stream lock is taken, so a slow
// handler holding one channel never blocks lookups of its neighbours.
func (s *shards) lock(channel string, create bool) *stream {
	sh := s.of(channel)
	for {
		sh.mu.RLock()
		st := sh.streams[channel]
		sh.mu.RUnlock()
		if st == nil {
			if !create {
				return nil
			}
			st = sh.getOrAdd(channel)
		}
		st.mu.Lock()
		if !st.removed {
			return st
		}
		// The sweeper removed it between the lookup and the lock.
		st.mu.Unlock()
	}
}

func (sh *shard) getOrAdd(channel string) *stream {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if st := sh.streams[channel]; st != nil {
		return st
	}
	st := &stream{channel: channel}
	sh.streams[channel] = st
	sh.list = append(sh.list, st)
	return st
}

// sweep examines up to budget streams from the cursor on, dropping their
// expired state and removing those left idle. Streams whose lock is held
// are busy, hence alive, and skipped rather than waited for.
func (sh *shard) sweep(now int64, budget int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for range budget {
		if len(sh.list) == 0 {
			return
		}
		if sh.cursor >= len(sh.list) {
			sh.cursor = 0
		}
		st := sh.list[sh.cursor]
		if !st.mu.TryLock() {
			sh.cursor++
			continue
		}
		st.expire(now)
		idle := st.idle()
		if idle {
			st.removed = true
		}
		st.mu.Unlock()
		if idle {
			sh.removeAt(sh.cursor) // the last stream moves here; examine it next
		} else {
			sh.cursor++
		}
	}
}

func (sh *shard) removeAt(i int) {
	st := sh.list[i]
	delete(sh.streams, st.channel)
	last := len(sh.list) - 1
	sh.list[i] = sh.list[last]
	sh.list[last] = nil
	sh.list = sh.list[:last]
	if cap(sh.list) > 1024 && len(sh.list) < cap(sh.list)/4 {
		sh.list = append([]*stream(nil), sh.list...)
	}
}

// len returns the number of channels held, for tests.
func (sh *shard) len() int {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return len(sh.streams)
}
