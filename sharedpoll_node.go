package gyre

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/gyrehq/gyre/internal/controlpb"
	"github.com/gyrehq/gyre/protocol"
)

// A node's side of shared-poll channels: the keys its clients track, the
// last value of each (to give a client that tracks a key late), and the
// pushes of new values to the clients tracking them. Which node polls a
// key, and how values reach the trackers' nodes, is in
// sharedpoll_cluster.go.

// pollManager holds the node's shared-poll channels.
type pollManager struct {
	n *Node
	// sem bounds the backend calls in flight from this node.
	sem chan struct{}

	mu       sync.Mutex
	channels map[string]*pollChannel
	// expiring holds the subscriptions with keys whose signatures expire.
	expiring map[*subscription]struct{}
	// lastEpoch keeps the epoch of versioned channels whose state ended
	// here, so that a client subscribing again is told the epoch of the
	// versions it has (see pollSub.epoch).
	lastEpoch map[string]seenEpoch
	pruned    time.Time
	out       outbox

	// ctx ends the backend calls in flight when the node shuts down;
	// wg waits for the goroutines start ran, which stopped refuses once
	// set.
	ctx     context.Context
	cancel  context.CancelFunc
	runMu   sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

type seenEpoch struct {
	epoch string
	at    time.Time
}

// lastEpochTTL is how long an ended channel's epoch is remembered.
const lastEpochTTL = time.Hour

func newPollManager(n *Node, concurrency int) *pollManager {
	if concurrency <= 0 {
		concurrency = 64
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &pollManager{
		n:         n,
		sem:       make(chan struct{}, concurrency),
		channels:  make(map[string]*pollChannel),
		expiring:  make(map[*subscription]struct{}),
		lastEpoch: make(map[string]seenEpoch),
		out:       outbox{ready: make(chan struct{}, 1)},
		ctx:       ctx,
		cancel:    cancel,
	}
}

// start runs fn in a goroutine that stop waits for; it reports false,
// running nothing, once the node is stopping.
func (m *pollManager) start(fn func()) bool {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	if m.stopped {
		return false
	}
	m.wg.Go(fn)
	return true
}

// stop ends the workers and the backend calls in flight, and waits for
// them.
func (m *pollManager) stop() {
	m.runMu.Lock()
	m.stopped = true
	m.runMu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// pollChannel is one shared-poll channel on this node: the keys tracked
// here (keys) and the keys this node polls for the cluster (owned, see
// sharedpoll_cluster.go). mu guards everything but the worker's own state.
type pollChannel struct {
	m    *pollManager
	name string
	opts SharedPollOptions

	mu sync.Mutex
	// epoch of versioned namespaces: the backend's, once a value came
	// (epochKnown); versionless ones have a fixed epoch (versionlessEpoch).
	epoch      string
	epochKnown bool
	keys       map[string]*pollKey
	// live counts the keys with trackers; the others linger, polled and
	// kept, until the shutdown timer (ShutdownDelay) drops them.
	live  int
	owned map[string]*ownedKey
	// sentTo is the node each tracked key's interest went to.
	sentTo   map[string]string
	shutdown *time.Timer
	closed   bool
	worker   *pollWorker
	// ownedEpoch is the epoch of the owned keys' versions: the one of the
	// backend's last answer to this node.
	ownedEpoch      string
	ownedEpochKnown bool
}

// pollKey is a key tracked on this node.
type pollKey struct {
	version uint64
	data    []byte
	known   bool
	// claimed is the highest version clients said they have: the key's
	// owner numbers versionless values above it.
	claimed uint64
	// jsonOK: data can be embedded in a JSON frame.
	jsonOK   bool
	trackers map[*subscription]struct{}
}

// pollSub is a shared-poll subscription's tracked keys: the version of
// each the client has and when its signature expires (0: never).
type pollSub struct {
	// epoch is the one the subscribe reply told the client: the versions
	// it has are of that epoch, and a value of another is not pushed to
	// it (it is told to subscribe again, and learns the new one).
	epoch string

	mu   sync.Mutex
	keys map[string]trackedKey
	// nextExpiry is the earliest expireAt of keys (0: none).
	nextExpiry int64
	// closed: the subscription ended; it tracks nothing more.
	closed bool
}

type trackedKey struct {
	version  uint64
	expireAt int64
}

// versionlessEpoch is the epoch every node gives a versionless channel:
// its versions are the polling node's clock in milliseconds (see
// pollChannel.take), which do not start over, so the epoch never has to
// change; derived from the name, so that all nodes agree.
func versionlessEpoch(channel string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(channel))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	v := uint64(h.Sum32())<<16 | uint64(len(channel))
	var b [8]byte
	for i := range b {
		b[i] = letters[v%uint64(len(letters))]
		v = v/uint64(len(letters)) + uint64(i)*7919
	}
	return string(b[:])
}

// channel returns the channel's state, made if create.
func (m *pollManager) channel(name string, opts SharedPollOptions, create bool) *pollChannel {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.channels[name]
	if ch == nil && create {
		ch = &pollChannel{
			m: m, name: name, opts: opts,
			keys:   make(map[string]*pollKey),
			owned:  make(map[string]*ownedKey),
			sentTo: make(map[string]string),
		}
		switch e, ok := m.lastEpoch[name]; {
		case !opts.Versioned:
			ch.epoch, ch.epochKnown = versionlessEpoch(name), true
		case ok:
			ch.epoch, ch.epochKnown = e.epoch, true
		}
		m.channels[name] = ch
	}
	return ch
}

// openChannel returns the channel's state, made if need be, with its
// lock held.
func (m *pollManager) openChannel(name string, opts SharedPollOptions) *pollChannel {
	for {
		ch := m.channel(name, opts, true)
		ch.mu.Lock()
		if !ch.closed {
			return ch
		}
		// It ended between the lookup and the lock: end removed it
		// from the map, so the next lookup makes a new one.
		ch.mu.Unlock()
	}
}

// epochOf is the epoch a subscribe reply carries.
func (m *pollManager) epochOf(name string, opts SharedPollOptions) string {
	if !opts.Versioned {
		return versionlessEpoch(name)
	}
	if ch := m.channel(name, opts, false); ch != nil {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return ch.epoch
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastEpoch[name].epoch
}

// trackItem is a key a client asks to track.
type trackItem struct {
	key      string
	version  uint64
	expireAt int64
}

// track adds items to s's tracked keys (after dropping untrack) and
// pushes the values this node has that s is behind on: pushed, not put
// in the track reply, so that they are in order with the values the
// node's other pushes bring meanwhile. It fails with ErrorLimitExceeded
// when s would track more keys than its namespace allows.
func (m *pollManager) track(s *subscription, items []trackItem, untrack []string) error {
	opts := s.opts.SharedPoll
	ps := s.poll
	ps.mu.Lock()
	n := len(ps.keys)
	for _, k := range untrack {
		if _, ok := ps.keys[k]; ok {
			n--
		}
	}
	for _, it := range items {
		if _, ok := ps.keys[it.key]; !ok {
			n++
		}
	}
	ps.mu.Unlock()
	if n > opts.maxKeys() {
		return ErrorLimitExceeded
	}
	m.untrack(s, untrack)
	ch := m.openChannel(s.channel, opts)
	defer ch.mu.Unlock()
	var pushes []pollPush
	var interest []*controlpb.PollKey
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return ErrorBadRequest
	}
	for _, it := range items {
		pk := ch.keys[it.key]
		if pk == nil {
			pk = &pollKey{trackers: make(map[*subscription]struct{})}
			ch.keys[it.key] = pk
			interest = append(interest, &controlpb.PollKey{Key: it.key, Version: it.version})
		}
		if len(pk.trackers) == 0 {
			ch.live++
		}
		pk.trackers[s] = struct{}{}
		pk.claimed = max(pk.claimed, it.version)
		// A client that tracks a key again (a new signature) may say it
		// has less than it was sent meanwhile; what it was sent counts,
		// so that no version reaches it twice.
		have := it.version
		if cur, ok := ps.keys[it.key]; ok {
			have = max(have, cur.version)
		}
		ps.keys[it.key] = trackedKey{version: have, expireAt: it.expireAt}
		if pk.known && pk.version > have && s.client.canTake(pk) {
			pushes = append(pushes, pollPush{s, &protocol.Publication{Key: it.key, Data: pk.data, Version: pk.version}})
		}
		if it.expireAt > 0 && (ps.nextExpiry == 0 || it.expireAt < ps.nextExpiry) {
			ps.nextExpiry = it.expireAt
		}
	}
	expiring := ps.nextExpiry > 0
	ps.mu.Unlock()
	if ch.live == 0 {
		ch.scheduleShutdown()
	}
	m.sendInterestLocked(ch, interest)
	if expiring {
		m.mu.Lock()
		m.expiring[s] = struct{}{}
		m.mu.Unlock()
	}
	m.push(ch, ch.epoch, pushes)
	return nil
}

// canTake reports whether the client can be sent pk's data: a JSON
// client only takes JSON.
func (c *Client) canTake(pk *pollKey) bool {
	return c.proto != protocol.TypeJSON || pk.jsonOK
}

// untrack drops keys from s's tracked keys.
func (m *pollManager) untrack(s *subscription, keys []string) {
	if len(keys) == 0 {
		return
	}
	ch := m.channel(s.channel, s.opts.SharedPoll, false)
	if ch == nil {
		ps := s.poll
		ps.mu.Lock()
		for _, k := range keys {
			delete(ps.keys, k)
		}
		ps.mu.Unlock()
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ps := s.poll
	ps.mu.Lock()
	for _, k := range keys {
		delete(ps.keys, k)
	}
	ps.mu.Unlock()
	ch.dropTrackerLocked(s, keys)
}

// dropTrackerLocked removes s from the trackers of keys. Keys nobody here
// tracks any more are dropped (their owners told), unless the channel
// has no tracked key left: then they linger, polled and kept, for the
// channel's shutdown delay, so that a client coming straight back (a
// page reload) finds their values.
func (ch *pollChannel) dropTrackerLocked(s *subscription, keys []string) {
	var orphaned []string
	for _, k := range keys {
		pk := ch.keys[k]
		if pk == nil {
			continue
		}
		if _, ok := pk.trackers[s]; !ok {
			continue
		}
		delete(pk.trackers, s)
		if len(pk.trackers) == 0 {
			ch.live--
			orphaned = append(orphaned, k)
		}
	}
	if ch.live == 0 {
		ch.scheduleShutdown()
		if ch.opts.shutdownDelay() > 0 {
			return
		}
	}
	for _, k := range orphaned {
		delete(ch.keys, k)
	}
	ch.m.sendDropsLocked(ch, orphaned)
}

// leave drops every key of a shared-poll subscription that ended.
func (m *pollManager) leave(s *subscription) {
	m.mu.Lock()
	delete(m.expiring, s)
	m.mu.Unlock()
	ch := m.channel(s.channel, s.opts.SharedPoll, false)
	var keys []string
	take := func() {
		ps := s.poll
		ps.mu.Lock()
		keys = make([]string, 0, len(ps.keys))
		for k := range ps.keys {
			keys = append(keys, k)
		}
		ps.keys = map[string]trackedKey{}
		ps.closed = true
		ps.mu.Unlock()
	}
	if ch == nil {
		take()
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	take()
	ch.dropTrackerLocked(s, keys)
}

// scheduleShutdown runs end after the channel's shutdown delay, unless it
// is scheduled already. ch.mu is held.
func (ch *pollChannel) scheduleShutdown() {
	if ch.shutdown != nil || ch.closed {
		return
	}
	ch.shutdown = time.AfterFunc(ch.opts.shutdownDelay(), ch.end)
}

// end drops the keys nobody here tracks (lingering since the channel's
// last tracker left), and removes the channel from the node when nothing
// is tracked nor polled here any more.
func (ch *pollChannel) end() {
	m := ch.m
	m.mu.Lock()
	defer m.mu.Unlock()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.shutdown = nil
	if ch.closed {
		return
	}
	var lingering []string
	for k, pk := range ch.keys {
		if len(pk.trackers) == 0 {
			lingering = append(lingering, k)
			delete(ch.keys, k)
		}
	}
	m.sendDropsLocked(ch, lingering)
	if len(ch.keys) > 0 || len(ch.owned) > 0 {
		return
	}
	ch.closed = true
	if ch.worker != nil {
		ch.worker.stop()
		ch.worker = nil
	}
	if ch.opts.Versioned && ch.epochKnown {
		m.lastEpoch[ch.name] = seenEpoch{ch.epoch, time.Now()}
	}
	if m.channels[ch.name] == ch {
		delete(m.channels, ch.name)
	}
}

// sweepExpired drops the keys whose signatures expired longer ago than
// their namespace's grace; the client was told their expiry (the track
// reply's ttl) and did not renew them. It also forgets old epochs.
func (m *pollManager) sweepExpired() {
	now := time.Now()
	m.mu.Lock()
	subs := make([]*subscription, 0, len(m.expiring))
	for s := range m.expiring {
		subs = append(subs, s)
	}
	if now.Sub(m.pruned) > time.Minute {
		m.pruned = now
		for name, e := range m.lastEpoch {
			if now.Sub(e.at) > lastEpochTTL {
				delete(m.lastEpoch, name)
			}
		}
	}
	m.mu.Unlock()
	for _, s := range subs {
		if !m.sweepSub(s, now.Unix()) {
			m.mu.Lock()
			delete(m.expiring, s)
			m.mu.Unlock()
		}
	}
}

// sweepSub drops s's expired keys and reports whether it still has keys
// that expire.
func (m *pollManager) sweepSub(s *subscription, now int64) bool {
	grace := int64(s.opts.SharedPoll.trackGrace() / time.Second)
	ps := s.poll
	ps.mu.Lock()
	due := ps.nextExpiry > 0 && ps.nextExpiry+grace < now
	closed, pending := ps.closed, ps.nextExpiry > 0
	ps.mu.Unlock()
	if closed || !pending {
		return false
	}
	if !due {
		return true
	}
	ch := m.channel(s.channel, s.opts.SharedPoll, false)
	if ch != nil {
		// Under the channel's lock, so that a key the client tracks
		// again meanwhile (a new signature) is not taken for an expired
		// one.
		ch.mu.Lock()
		defer ch.mu.Unlock()
	}
	var expired []string
	next := int64(0)
	ps.mu.Lock()
	for k, tk := range ps.keys {
		switch {
		case tk.expireAt == 0:
		case tk.expireAt+grace < now:
			expired = append(expired, k)
			delete(ps.keys, k)
		case next == 0 || tk.expireAt < next:
			next = tk.expireAt
		}
	}
	ps.nextExpiry = next
	ps.mu.Unlock()
	if len(expired) > 0 {
		m.n.log.Info("shared-poll keys dropped: signature expired", "client", s.client.id, "channel", s.channel, "keys", len(expired))
		if ch != nil {
			ch.dropTrackerLocked(s, expired)
		}
	}
	return next > 0
}

// pollPush is a value to push to one subscriber.
type pollPush struct {
	s   *subscription
	pub *protocol.Publication
}

// apply takes new values of keys tracked here (from their poller or from
// SharedPollPublish) and pushes them to the trackers that are behind.
func (m *pollManager) apply(u *controlpb.PollUpdate) {
	ch := m.channel(u.Channel, SharedPollOptions{}, false)
	if ch == nil {
		if u.Epoch != "" {
			// Not tracked here: the epoch is still worth knowing, for
			// the first subscriber here to be told it (see pollSub.epoch).
			m.mu.Lock()
			m.lastEpoch[u.Channel] = seenEpoch{u.Epoch, time.Now()}
			m.mu.Unlock()
		}
		return
	}
	var pushes []pollPush
	var flipped []*subscription
	ch.mu.Lock()
	defer func() {
		epoch := ch.epoch
		ch.mu.Unlock()
		m.push(ch, epoch, pushes)
		for _, s := range flipped {
			s.client.unsubscribeSub(s, UnsubscribeCodeInsufficientState, "insufficient state")
		}
	}()
	if ch.closed {
		return
	}
	if ch.opts.Versioned {
		if ch.epochKnown && u.Epoch != ch.epoch {
			flipped = ch.flipLocked()
		}
		ch.epoch, ch.epochKnown = u.Epoch, true
	}
	if u.Publish {
		ch.takePublishedLocked(u.Epoch, u.Items)
	}
	var removed []string
	for _, it := range u.Items {
		pk := ch.keys[it.Key]
		if pk == nil {
			continue
		}
		if it.Removed {
			for s := range pk.trackers {
				pushes = append(pushes, pollPush{s, &protocol.Publication{Key: it.Key, Removed: true}})
				s.poll.mu.Lock()
				delete(s.poll.keys, it.Key)
				s.poll.mu.Unlock()
			}
			if len(pk.trackers) > 0 {
				ch.live--
			}
			delete(ch.keys, it.Key)
			removed = append(removed, it.Key)
			continue
		}
		if pk.known && it.Version <= pk.version {
			continue
		}
		same := pk.known && string(pk.data) == string(it.Data)
		pk.version, pk.data, pk.known = it.Version, it.Data, true
		pk.jsonOK = len(it.Data) == 0 || json.Valid(it.Data)
		if same && !ch.opts.Versioned {
			// A new poller numbered an unchanged value: clients keep
			// theirs (a client behind gets it when it tracks again).
			continue
		}
		pub := &protocol.Publication{Key: it.Key, Data: pk.data, Version: pk.version}
		for s := range pk.trackers {
			if !s.client.canTake(pk) {
				m.n.fails.Add("shared-poll value is not JSON", slog.LevelWarn, "shared-poll value is not JSON: not sent to JSON clients", "channel", ch.name, "key", it.Key)
				continue
			}
			pushes = append(pushes, pollPush{s, pub})
		}
	}
	// The owner forgot the removed keys already; only this node's
	// record of its interest goes.
	for _, k := range removed {
		delete(ch.sentTo, k)
	}
	if ch.live == 0 {
		ch.scheduleShutdown()
	}
}

// flipLocked starts a new epoch of a versioned channel here: the values
// and versions the node and its clients have mean nothing in it, so every
// tracker is told to subscribe again (and track from scratch).
func (ch *pollChannel) flipLocked() []*subscription {
	seen := make(map[*subscription]struct{})
	for _, pk := range ch.keys {
		pk.version, pk.data, pk.known, pk.claimed = 0, nil, false, 0
		for s := range pk.trackers {
			seen[s] = struct{}{}
		}
	}
	out := make([]*subscription, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	return out
}

// push sends each value (of the channel's epoch) to its subscriber,
// unless the subscriber has it (or a newer one) already; a removal always
// goes. A subscriber told another epoch is told to subscribe again
// instead: its versions are not of this epoch. Encoded once per client
// protocol and framing. The version check and the enqueue are one step
// under the subscription's lock, so that two pushes of a key racing each
// other still reach the client with growing versions.
func (m *pollManager) push(ch *pollChannel, epoch string, pushes []pollPush) {
	type form struct {
		pub   *protocol.Publication
		proto protocol.Type
		uni   bool
	}
	var encoded map[form][]byte
	var stale map[*subscription]struct{}
	for _, p := range pushes {
		s, pub := p.s, p.pub
		if s.state.Load() != subActive {
			continue
		}
		if ch.opts.Versioned && s.poll.epoch != epoch {
			if stale == nil {
				stale = make(map[*subscription]struct{})
			}
			stale[s] = struct{}{}
			continue
		}
		c := s.client
		f := form{pub, c.proto, c.uni}
		msg, ok := encoded[f]
		if !ok {
			var err error
			push := &protocol.Push{Channel: ch.name, Pub: pub}
			if c.uni {
				msg, err = protocol.AppendPush(nil, c.proto, push)
			} else {
				msg, err = protocol.AppendReply(nil, c.proto, &protocol.Reply{Push: push})
			}
			if err != nil {
				m.n.log.Error("encode shared-poll push", "channel", ch.name, "error", err)
				continue
			}
			if encoded == nil {
				encoded = make(map[form][]byte)
			}
			encoded[f] = msg
		}
		if pub.Removed {
			c.enqueue("push_publication", msg)
			continue
		}
		ps := s.poll
		ps.mu.Lock()
		if tk, ok := ps.keys[pub.Key]; ok && tk.version < pub.Version {
			tk.version = pub.Version
			ps.keys[pub.Key] = tk
			c.enqueue("push_publication", msg)
		}
		ps.mu.Unlock()
	}
	if len(stale) > 0 {
		// Not here under the caller's lock: leaving takes it.
		go func() {
			for s := range stale {
				s.client.unsubscribeSub(s, UnsubscribeCodeInsufficientState, "insufficient state")
			}
		}()
	}
}
