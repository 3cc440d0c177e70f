package memory

import (
	"hash/maphash"
	"sync"
)

// entryBase is what every channel held in shards has: its lock, its name,
// and whether the sweep took it out of the map.
type entryBase struct {
	mu      sync.Mutex
	channel string
	removed bool // out of the shard map: callers holding it look it up again
}

func (e *entryBase) base() *entryBase { return e }

// shardEntry is a channel held in shards: a pointer to E that embeds
// entryBase. sweep, called with its lock held, drops what has expired at
// now and reports whether nothing is left worth keeping, so the sweep may
// remove it.
type shardEntry[E any] interface {
	*E
	base() *entryBase
	sweep(now int64) bool
}

// shard is one independently locked part of a channel map. list holds
// the same entries as the map so that the sweeper can resume where it
// stopped; Go maps have no cursor.
type shard[E any, P shardEntry[E]] struct {
	mu      sync.RWMutex
	entries map[string]P
	list    []P
	cursor  int
	// newEntry makes the entry of a channel held by this shard.
	newEntry func(channel string) P
}

// shards is a channel map split into independently locked parts.
type shards[E any, P shardEntry[E]] struct {
	seed maphash.Seed
	all  []shard[E, P]
}

// newShards returns n shards whose entries newEntry makes, given the
// channel and the index of the shard that holds it.
func newShards[E any, P shardEntry[E]](n int, newEntry func(channel string, shard int) P) shards[E, P] {
	s := shards[E, P]{seed: maphash.MakeSeed(), all: make([]shard[E, P], n)}
	for i := range s.all {
		s.all[i].entries = make(map[string]P)
		s.all[i].newEntry = func(channel string) P { return newEntry(channel, i) }
	}
	return s
}

func (s *shards[E, P]) of(channel string) *shard[E, P] {
	return &s.all[maphash.String(s.seed, channel)%uint64(len(s.all))]
}

// lock returns the channel's entry with its lock held, creating it when
// create is set; without create it returns nil for an unknown channel. The
// shard lock is released before the entry lock is taken, so a slow
// handler holding one channel never blocks lookups of its neighbours.
func (s *shards[E, P]) lock(channel string, create bool) P {
	sh := s.of(channel)
	for {
		sh.mu.RLock()
		e := sh.entries[channel]
		sh.mu.RUnlock()
		if e == nil {
			if !create {
				return nil
			}
			e = sh.getOrAdd(channel)
		}
		b := e.base()
		b.mu.Lock()
		if !b.removed {
			return e
		}
		// The sweeper removed it between the lookup and the lock.
		b.mu.Unlock()
	}
}

// sweep sweeps up to budget entries of every shard.
func (s *shards[E, P]) sweep(now int64, batch int) {
	budget := sweepBudget(batch, len(s.all))
	for i := range s.all {
		s.all[i].sweep(now, budget)
	}
}

func (sh *shard[E, P]) getOrAdd(channel string) P {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.entries[channel]; e != nil {
		return e
	}
	e := sh.newEntry(channel)
	sh.entries[channel] = e
	sh.list = append(sh.list, e)
	return e
}

// sweep examines up to budget entries from the cursor on, dropping their
// expired state and removing those left idle. Entries whose lock is held
// are busy, hence alive, and skipped rather than waited for.
func (sh *shard[E, P]) sweep(now int64, budget int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for range budget {
		if len(sh.list) == 0 {
			return
		}
		if sh.cursor >= len(sh.list) {
			sh.cursor = 0
		}
		e := sh.list[sh.cursor]
		b := e.base()
		if !b.mu.TryLock() {
			sh.cursor++
			continue
		}
		idle := e.sweep(now)
		if idle {
			b.removed = true
		}
		b.mu.Unlock()
		if idle {
			sh.removeAt(sh.cursor) // the last entry moves here; examine it next
		} else {
			sh.cursor++
		}
	}
}

func (sh *shard[E, P]) removeAt(i int) {
	e := sh.list[i]
	delete(sh.entries, e.base().channel)
	last := len(sh.list) - 1
	sh.list[i] = sh.list[last]
	sh.list[last] = nil
	sh.list = sh.list[:last]
	if cap(sh.list) > 1024 && len(sh.list) < cap(sh.list)/4 {
		sh.list = append([]P(nil), sh.list...)
	}
}

// len returns the number of channels held, for tests.
func (sh *shard[E, P]) len() int {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return len(sh.entries)
}
