package gyre

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
)

const hubShards = 64

// hub knows which local connections are subscribed to which channel and
// which connections each user has. Broadcast readers take no lock a writer
// holds for long: each channel's subscriber list is a copy-on-write slice
// behind an atomic pointer.
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
	list atomic.Pointer[[]*subscription]
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
// subscriber of the channel on this node.
func (h *hub) addSubscription(s *subscription) (first bool) {
	sh := &h.channels[h.shard(s.channel)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cs, ok := sh.subs[s.channel]
	if !ok {
		cs = &channelSubs{}
		sh.subs[s.channel] = cs
	}
	var old []*subscription
	if p := cs.list.Load(); p != nil {
		old = *p
	}
	next := make([]*subscription, len(old), len(old)+1)
	copy(next, old)
	next = append(next, s)
	cs.list.Store(&next)
	return len(old) == 0
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
	old := *cs.list.Load()
	i := -1
	for j, x := range old {
		if x == s {
			i = j
			break
		}
	}
	if i < 0 {
		return false
	}
	if len(old) == 1 {
		delete(sh.subs, s.channel)
		cs.list.Store(&[]*subscription{})
		return true
	}
	next := make([]*subscription, 0, len(old)-1)
	next = append(next, old[:i]...)
	next = append(next, old[i+1:]...)
	cs.list.Store(&next)
	return false
}

// subscribers returns the channel's current subscribers. The slice must
// not be modified.
func (h *hub) subscribers(channel string) []*subscription {
	sh := &h.channels[h.shard(channel)]
	sh.mu.RLock()
	cs := sh.subs[channel]
	sh.mu.RUnlock()
	if cs == nil {
		return nil
	}
	return *cs.list.Load()
}

// numSubscribers returns the channel's subscriber count on this node.
func (h *hub) numSubscribers(channel string) int {
	return len(h.subscribers(channel))
}

// channels calls fn for every channel with subscribers on this node.
func (h *hub) eachChannel(fn func(channel string, numSubs int)) {
	for i := range h.channels {
		sh := &h.channels[i]
		sh.mu.RLock()
		for ch, cs := range sh.subs {
			fn(ch, len(*cs.list.Load()))
		}
		sh.mu.RUnlock()
	}
}

func (h *hub) addClient(c *Client) (userConns int) {
	h.numConns.Add(1)
	sh := &h.users[h.shard(c.user)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	conns := append(sh.users[c.user], c)
	sh.users[c.user] = conns
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
