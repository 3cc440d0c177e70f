package jetstream

import (
	"sync"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// chanState is what a store last saw of a channel in a stream: enough to
// send the next publication with the right offset and the expected last
// sequence in one round trip.
type chanState struct {
	stream *streamRef
	// seq is the stream sequence of the channel's last message in stream,
	// 0 when the subject is empty there: the next publication's expected
	// last subject sequence.
	seq          uint64
	offset       uint64
	epoch        string
	floor        uint64 // the oldest offset History returns
	version      uint64
	versionEpoch string
	// metaTTL is how long the position outlives its message.
	metaTTL time.Duration
	// last is the channel's last publication when the store has it at
	// hand (it wrote it, or read it), kept as the next delta's base. Read
	// from a stream, nil means the last message is a marker.
	last *broker.Publication
	// first is the first offset the message at seq holds (offset but for
	// a run), and run its publications, when read from the stream (never
	// cached).
	first uint64
	run   []*broker.Publication
	// recent is the channel's messages just before the one at seq, newest
	// last, as far as this store wrote them one after the other (zero:
	// unknown), for trimming.
	recent [2]mark
	// time is when the stream stored the message the state was read from
	// (server clock), zero when not read back.
	time time.Time
	// moved names the stream the channel moved to, when the message read
	// is the marker of a move.
	moved string
	// leftover: stream's subject holds messages of before the channel
	// came (back) to it, which go once it published there.
	leftover bool
	// pubs: stream's subject holds the channel's publications up to this
	// position (it was read there, or written).
	pubs bool
}

// mark is where a message of a channel is: its sequence and the first
// offset it holds.
type mark struct{ seq, first uint64 }

// alive reports whether a position read from a copy or a record still
// stands at now.
func (c *chanState) alive(now time.Time) bool {
	return c.time.Add(c.metaTTL).After(now)
}

func (c *chanState) position() broker.StreamPosition {
	return broker.StreamPosition{Offset: c.offset, Epoch: c.epoch}
}

// cache holds chanStates of recently used channels. Past its size it
// forgets arbitrary entries: a forgotten channel costs one more round trip
// on its next publish, never a wrong offset, since every publish is checked
// by JetStream against the last sequence.
type cache struct {
	mu   sync.Mutex
	size int
	m    map[string]chanState
}

func newCache(size int) *cache {
	return &cache{size: size, m: make(map[string]chanState)}
}

func (c *cache) get(channel string) (chanState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[channel]
	return st, ok
}

func (c *cache) put(channel string, st chanState) {
	st.run = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[channel]; !ok && len(c.m) >= c.size {
		// Map iteration order is random enough to spread evictions.
		n := max(1, c.size/8)
		for k := range c.m {
			delete(c.m, k)
			if n--; n == 0 {
				break
			}
		}
	}
	c.m[channel] = st
}

func (c *cache) del(channel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, channel)
}

// chanLocks serialises one node's appends to a channel: without it,
// goroutines publishing to one hot channel would mostly fail JetStream's
// last-sequence check and retry. Appends lock their channels in sorted
// order, so two appends never wait for each other in a cycle.
type chanLocks struct {
	mu sync.Mutex
	m  map[string]*chanLock
}

type chanLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks every channel of sorted (no duplicates) and returns the
// function that unlocks them.
func (l *chanLocks) lock(sorted []string) func() {
	held := make([]*chanLock, len(sorted))
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[string]*chanLock)
	}
	for i, ch := range sorted {
		cl := l.m[ch]
		if cl == nil {
			cl = new(chanLock)
			l.m[ch] = cl
		}
		cl.refs++
		held[i] = cl
	}
	l.mu.Unlock()
	for _, cl := range held {
		cl.mu.Lock()
	}
	return func() {
		for _, cl := range held {
			cl.mu.Unlock()
		}
		l.mu.Lock()
		for i, cl := range held {
			if cl.refs--; cl.refs == 0 {
				delete(l.m, sorted[i])
			}
		}
		l.mu.Unlock()
	}
}
