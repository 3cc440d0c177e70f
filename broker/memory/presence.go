package memory

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// PresenceManager is a broker.PresenceManager for one node. Its methods are
// safe for concurrent use.
type PresenceManager struct {
	cfg    PresenceConfig
	seed   maphash.Seed
	shards []presenceShard
	sweeper
}

var _ broker.PresenceManager = (*PresenceManager)(nil)

// presenceShard is one independently locked part of the channel map; list
// holds the same sets for the sweeper's cursor.
type presenceShard struct {
	mu       sync.RWMutex
	channels map[string]*presenceSet
	list     []*presenceSet
	cursor   int
}

type presenceSet struct {
	channel string
	clients map[string]presenceEntry
}

type presenceEntry struct {
	info    broker.ClientInfo
	expires int64 // Unix nanoseconds
}

// NewPresenceManager returns a PresenceManager and starts its background
// sweep, which Close stops.
func NewPresenceManager(cfg PresenceConfig) (*PresenceManager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &PresenceManager{
		cfg:    cfg,
		seed:   maphash.MakeSeed(),
		shards: make([]presenceShard, cfg.Shards),
	}
	for i := range m.shards {
		m.shards[i].channels = make(map[string]*presenceSet)
	}
	m.startSweep(cfg.SweepInterval, func(now time.Time) { m.sweep(now.UnixNano()) })
	return m, nil
}

func (m *PresenceManager) shard(channel string) *presenceShard {
	return &m.shards[maphash.String(m.seed, channel)%uint64(len(m.shards))]
}

// Presence returns copies of the channel's live entries by client ID.
func (m *PresenceManager) Presence(channel string) (map[string]*broker.ClientInfo, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	now := time.Now().UnixNano()
	sh := m.shard(channel)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	set := sh.channels[channel]
	out := make(map[string]*broker.ClientInfo)
	if set == nil {
		return out, nil
	}
	for id, e := range set.clients {
		if e.expires > now {
			out[id] = cloneInfo(&e.info)
		}
	}
	return out, nil
}

// PresenceStats counts the channel's live entries and their distinct users.
func (m *PresenceManager) PresenceStats(channel string) (broker.PresenceStats, error) {
	if m.closed.Load() {
		return broker.PresenceStats{}, ErrClosed
	}
	now := time.Now().UnixNano()
	sh := m.shard(channel)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	set := sh.channels[channel]
	if set == nil {
		return broker.PresenceStats{}, nil
	}
	users := make(map[string]struct{}, len(set.clients))
	var st broker.PresenceStats
	for _, e := range set.clients {
		if e.expires > now {
			st.NumClients++
			users[e.info.UserID] = struct{}{}
		}
	}
	st.NumUsers = len(users)
	return st, nil
}

// AddPresence adds or refreshes the client's entry, replacing its info and
// restarting its TTL. A nil info stores an entry with only the client ID.
func (m *PresenceManager) AddPresence(channel, clientID string, info *broker.ClientInfo) error {
	if m.closed.Load() {
		return ErrClosed
	}
	e := presenceEntry{expires: time.Now().Add(m.cfg.TTL).UnixNano()}
	if info != nil {
		e.info = *cloneInfo(info)
	} else {
		e.info.ClientID = clientID
	}
	sh := m.shard(channel)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	set := sh.channels[channel]
	if set == nil {
		set = &presenceSet{channel: channel, clients: make(map[string]presenceEntry)}
		sh.channels[channel] = set
		sh.list = append(sh.list, set)
	}
	set.clients[clientID] = e
	return nil
}

// RemovePresence removes the client's entry. userID is not needed in
// memory, where entries are keyed by client alone.
func (m *PresenceManager) RemovePresence(channel, clientID, userID string) error {
	if m.closed.Load() {
		return ErrClosed
	}
	sh := m.shard(channel)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if set := sh.channels[channel]; set != nil {
		// An emptied set stays until the sweeper frees it: removing it here
		// would mean finding it in list.
		delete(set.clients, clientID)
	}
	return nil
}

// Close stops the background sweep and waits for it to end. Later calls
// return nil; other methods then return ErrClosed.
func (m *PresenceManager) Close() error {
	m.close()
	return nil
}

func (m *PresenceManager) sweep(now int64) {
	budget := sweepBudget(m.cfg.SweepBatch, len(m.shards))
	for i := range m.shards {
		m.shards[i].sweep(now, budget)
	}
}

// sweep examines up to budget channels from the cursor on, dropping
// expired entries and freeing channels left empty.
func (sh *presenceShard) sweep(now int64, budget int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for range budget {
		if len(sh.list) == 0 {
			return
		}
		if sh.cursor >= len(sh.list) {
			sh.cursor = 0
		}
		set := sh.list[sh.cursor]
		for id, e := range set.clients {
			if e.expires <= now {
				delete(set.clients, id)
			}
		}
		if len(set.clients) > 0 {
			sh.cursor++
			continue
		}
		delete(sh.channels, set.channel)
		last := len(sh.list) - 1
		sh.list[sh.cursor] = sh.list[last]
		sh.list[last] = nil
		sh.list = sh.list[:last]
	}
}

// len returns the number of channels held, for tests.
func (sh *presenceShard) len() int {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return len(sh.channels)
}
