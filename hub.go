package gyre

import (
	"hash/maphash"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
)

const hubShards = 64

// hub knows which local connections are subscribed to which channel and
// which connections each user has. Broadcast readers take no lock a writer
// holds for long: each channel's subscriber list is a copy-on-write
// snapshot behind an atomic pointer.
type hub struct {
	seed     maphash.Seed
	channels [hubShards]channelShard
	users    [hubShards]userShard
	numConns atomic.Int64
	// subLocks serialize, per channel, the arrival and departure of
	// subscribers with the broker subscription they start or end, so that
	// a last unsubscribe and a first subscribe racing on one channel cannot
	// reach the broker in the opposite order, and no subscriber reads the
	// stream position before the broker subscription is confirmed.
	subLocks [hubShards]sync.Mutex
	// lastChannelID numbers channels as they get their first subscriber
	// here (subList.id). A number is never given twice, so within one
	// connection it names one channel, whatever came and went before; and
	// every subscriber of a fan-out shares it, so a compacted push is
	// encoded once for all of them.
	lastChannelID atomic.Int64
	// patterns holds the pattern subscriptions, apart from the channels.
	patterns patternHub
	// onUser, when set, is told of a user's first connection here
	// (online, with its connection info) and its last (not online). It
	// runs under the user's shard lock and must not block.
	onUser func(user string, online bool, info []byte)
}

// subLock returns the lock that serializes broker subscription changes of
// channel.
func (h *hub) subLock(channel string) *sync.Mutex {
	return &h.subLocks[h.shard(channel)]
}

type channelShard struct {
	mu   sync.RWMutex
	subs map[string]*channelSubs
}

// channelSubs is one channel's subscribers on this node.
type channelSubs struct {
	list atomic.Pointer[subList]
}

// subChunk is how many subscribers one chunk of a subList holds. A
// subscribe or unsubscribe copies at most two chunks and the chunk index,
// so joining a channel of N subscribers costs O(subChunk + N/subChunk)
// instead of a copy of all N (which made N clients joining one channel
// O(N²)).
const subChunk = 256

// subList is an immutable snapshot of a channel's subscribers, in chunks
// that are all full but the last. A subscriber's place in it is its
// hubPos; the order means nothing.
type subList struct {
	chunks [][]*subscription
	n      int
	// id is the channel's number (channelSubs.id) in the pushes of
	// subscribers with channel compaction.
	id int64
}

var emptySubs = &subList{}

// len is the number of subscribers.
func (l *subList) len() int { return l.n }

// all yields every subscriber. Broadcasts range over the chunks
// themselves, which keeps their loop plain.
func (l *subList) all() iter.Seq[*subscription] {
	return func(yield func(*subscription) bool) {
		for _, chunk := range l.chunks {
			for _, s := range chunk {
				if !yield(s) {
					return
				}
			}
		}
	}
}

// at returns the subscriber at position i.
func (l *subList) at(i int) *subscription { return l.chunks[i/subChunk][i%subChunk] }

// with returns a copy of l with s added at the end, and s's position.
func (l *subList) with(s *subscription) (*subList, int) {
	pos := l.n
	last := len(l.chunks) - 1
	var chunks [][]*subscription
	if pos%subChunk == 0 {
		chunks = make([][]*subscription, last+2)
		copy(chunks, l.chunks)
		chunks[last+1] = []*subscription{s}
	} else {
		chunks = slices.Clone(l.chunks)
		chunks[last] = append(slices.Clip(l.chunks[last]), s)
	}
	return &subList{chunks: chunks, n: pos + 1, id: l.id}, pos
}

// without returns a copy of l without the subscriber at position i: the
// last subscriber takes its place and is returned (nil when i was last).
func (l *subList) without(i int) (*subList, *subscription) {
	end := l.n - 1
	last := len(l.chunks) - 1
	chunks := l.chunks[:last:last]
	if end%subChunk != 0 {
		// The last chunk stays, one shorter.
		chunks = append(slices.Clone(chunks), l.chunks[last][:end%subChunk:end%subChunk])
	} else {
		chunks = slices.Clone(chunks)
	}
	if i == end {
		return &subList{chunks: chunks, n: end, id: l.id}, nil
	}
	moved := l.at(end)
	c := i / subChunk
	chunks[c] = slices.Clone(chunks[c])
	chunks[c][i%subChunk] = moved
	return &subList{chunks: chunks, n: end, id: l.id}, moved
}

// withSub returns a copy of l with s added, and records s's position.
func (l *subList) withSub(s *subscription) *subList {
	next, pos := l.with(s)
	s.hubPos = int32(pos)
	return next
}

// withoutSub returns a copy of l without s, emptySubs when s was its
// last subscriber, and records the new position of the subscriber that
// took s's place. ok is false when s is not in l.
func (l *subList) withoutSub(s *subscription) (next *subList, ok bool) {
	i := int(s.hubPos)
	if i < 0 || i >= l.n || l.at(i) != s {
		return l, false
	}
	if l.n == 1 {
		return emptySubs, true
	}
	next, moved := l.without(i)
	if moved != nil {
		moved.hubPos = int32(i)
	}
	return next, true
}

// userShard maps users to their connections. A slice, not a set: most
// users have one or a few connections, and a map per user would cost
// hundreds of bytes per connection. Removal is linear in the user's
// connections, which only matters for the anonymous user.
type userShard struct {
	mu    sync.RWMutex
	users map[string][]*Client
}

func newHub() *hub {
	h := &hub{seed: maphash.MakeSeed()}
	for i := range h.channels {
		h.channels[i].subs = make(map[string]*channelSubs)
		h.users[i].users = make(map[string][]*Client)
	}
	return h
}

func (h *hub) shard(key string) int {
	return int(maphash.String(h.seed, key) % hubShards)
}

// addSubscription adds s to its channel and reports whether it is the first
// subscriber of the channel on this node. A subscription with channel
// compaction is given the channel's id.
func (h *hub) addSubscription(s *subscription) (first bool) {
	sh := &h.channels[h.shard(s.channel)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cs, ok := sh.subs[s.channel]
	if !ok {
		cs = &channelSubs{}
		cs.list.Store(&subList{id: h.lastChannelID.Add(1)})
		sh.subs[s.channel] = cs
	}
	old := cs.list.Load()
	if s.shape == shapeCompact {
		s.channelID = old.id
	}
	cs.list.Store(old.withSub(s))
	return old.n == 0
}

// removeSubscription removes s and reports whether the channel has no
// subscribers left on this node.
func (h *hub) removeSubscription(s *subscription) (last bool) {
	sh := &h.channels[h.shard(s.channel)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cs, ok := sh.subs[s.channel]
	if !ok {
		return false
	}
	next, ok := cs.list.Load().withoutSub(s)
	if !ok {
		return false
	}
	cs.list.Store(next)
	if next.n > 0 {
		return false
	}
	delete(sh.subs, s.channel)
	return true
}

// subscribers returns the channel's current subscribers, a snapshot that
// must not be modified.
func (h *hub) subscribers(channel string) *subList {
	sh := &h.channels[h.shard(channel)]
	sh.mu.RLock()
	cs := sh.subs[channel]
	sh.mu.RUnlock()
	if cs == nil {
		return emptySubs
	}
	return cs.list.Load()
}

// numSubscribers returns the channel's subscriber count on this node.
func (h *hub) numSubscribers(channel string) int {
	return h.subscribers(channel).len()
}

// eachChannel calls fn for every channel with subscribers on this node,
// and for every pattern with subscribers: the node's statistics and the
// channels API count a pattern subscribed to as a channel, with its
// subscribers.
func (h *hub) eachChannel(fn func(channel string, numSubs int)) {
	h.patterns.each(fn)
	for i := range h.channels {
		sh := &h.channels[i]
		sh.mu.RLock()
		for ch, cs := range sh.subs {
			fn(ch, cs.list.Load().len())
		}
		sh.mu.RUnlock()
	}
}

// addClient registers c, whose connection info is info, and tells
// onUser under the user's shard lock when c is its user's first
// connection here (anonymous connections excepted), so that the first
// and last connection of a user reach it in the order they happened.
func (h *hub) addClient(c *Client, info []byte) (userConns int) {
	h.numConns.Add(1)
	sh := &h.users[h.shard(c.user)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	conns := append(sh.users[c.user], c)
	sh.users[c.user] = conns
	if len(conns) == 1 && c.user != "" && h.onUser != nil {
		h.onUser(c.user, true, info)
	}
	return len(conns)
}

func (h *hub) removeClient(c *Client) {
	sh := &h.users[h.shard(c.user)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	conns := sh.users[c.user]
	i := slices.Index(conns, c)
	if i < 0 {
		return
	}
	h.numConns.Add(-1)
	last := len(conns) - 1
	conns[i] = conns[last]
	conns[last] = nil
	if last == 0 {
		delete(sh.users, c.user)
		if c.user != "" && h.onUser != nil {
			h.onUser(c.user, false, nil)
		}
		return
	}
	sh.users[c.user] = conns[:last]
}

// userClients returns the connections of a user on this node.
func (h *hub) userClients(user string) []*Client {
	sh := &h.users[h.shard(user)]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return slices.Clone(sh.users[user])
}

func (h *hub) userConnectionCount(user string) int {
	sh := &h.users[h.shard(user)]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return len(sh.users[user])
}

// allClients calls fn for every connected client.
func (h *hub) allClients(fn func(c *Client)) {
	for i := range h.users {
		sh := &h.users[i]
		sh.mu.RLock()
		clients := make([]*Client, 0, 16)
		for _, conns := range sh.users {
			clients = append(clients, conns...)
		}
		sh.mu.RUnlock()
		for _, c := range clients {
			fn(c)
		}
	}
}

// stats counts users and subscriptions on this node.
func (h *hub) stats() (numUsers, numChannels, numSubs int) {
	for i := range h.users {
		sh := &h.users[i]
		sh.mu.RLock()
		numUsers += len(sh.users)
		sh.mu.RUnlock()
	}
	h.eachChannel(func(_ string, n int) {
		numChannels++
		numSubs += n
	})
	return numUsers, numChannels, numSubs
}
