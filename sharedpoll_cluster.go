package gyre

import (
	"bytes"
	"context"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/gyrehq/gyre/internal/controlpb"
)

// Polling once per cluster. Each tracked key of a shared-poll channel has
// one owner among the live nodes (rendezvous hashing over the nodes that
// announced themselves, NodeInfoInterval): the node that polls it. A node
// whose clients track a key tells the key's owner (PollInterest, with the
// version it has); the owner polls its keys in batches each
// RefreshInterval and sends what changed to the nodes interested
// (PollUpdate), which push to their trackers.
//
// Nothing is lost for good when a message is: every node repeats its
// interest every pollInterestRenew with the versions it has, and the owner
// answers with the values it has newer, so a lost update reaches the
// clients within that time. An owner that forgets a node's interest for
// pollInterestTTL stops polling for it. When nodes come or go, owners
// change: each node sends its keys to their new owners at the next
// renewal (and tells the old ones to drop them), and for a moment a key
// may be polled by two nodes, never by none for longer than the registry
// takes to drop a dead node (3 × NodeInfoInterval).

const (
	pollInterestRenew = 5 * time.Second
	pollInterestTTL   = 4 * pollInterestRenew
	// pollMessageBytes bounds the values carried by one control message
	// (NATS refuses messages over 1 MiB by default).
	pollMessageBytes = 256 << 10
	// pollCallTimeout bounds one backend call.
	pollCallTimeout = 30 * time.Second
	// pollMaxBackoff bounds the wait after failed cycles.
	pollMaxBackoff = time.Minute
)

// ownedKey is a key this node polls for the cluster.
type ownedKey struct {
	version uint64
	data    []byte
	known   bool
	// floor is the highest version an interested node reported: a
	// versionless value this node numbers goes above it.
	floor uint64
	// interest: the nodes tracking the key, and until when.
	interest map[string]time.Time
	// polling: a first poll of the key is in flight.
	polling bool
}

// pollOwner is the node that polls key: the highest score of
// rendezvous hashing among nodes.
func pollOwner(nodes []string, channel, key string) string {
	var best string
	var bestScore uint64
	for _, id := range nodes {
		h := fnv.New64a()
		_, _ = h.Write([]byte(id))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(channel))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(key))
		score := mix64(h.Sum64())
		if best == "" || score > bestScore {
			best, bestScore = id, score
		}
	}
	return best
}

// mix64 spreads FNV's output, whose high bits barely move with the last
// bytes of the input (splitmix64's finalizer).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// liveNodes is this node and the nodes heard of recently, sorted.
func (m *pollManager) liveNodes() []string {
	out := []string{m.n.id}
	for _, ni := range m.n.nodes.live(m.n.id) {
		out = append(out, ni.ID)
	}
	sort.Strings(out)
	return out
}

// sendInterestLocked tells the owners of items that this node tracks
// them, with the versions given. ch.mu is held: the commands are queued
// under it, so that an owner gets a key's interest and drops in the
// order of the changes to ch.keys, whichever goroutines made them
// (queuing does not block).
func (m *pollManager) sendInterestLocked(ch *pollChannel, items []*controlpb.PollKey) {
	if len(items) == 0 {
		return
	}
	nodes := m.liveNodes()
	by := make(map[string][]*controlpb.PollKey)
	var moved map[string][]string
	for _, it := range items {
		if _, ok := ch.keys[it.Key]; !ok {
			continue
		}
		owner := pollOwner(nodes, ch.name, it.Key)
		if old, ok := ch.sentTo[it.Key]; ok && old != owner {
			if moved == nil {
				moved = make(map[string][]string)
			}
			moved[old] = append(moved[old], it.Key)
		}
		ch.sentTo[it.Key] = owner
		by[owner] = append(by[owner], it)
	}
	for owner, keys := range moved {
		m.postDrops(owner, ch.name, keys)
	}
	epoch, known := ch.epoch, ch.opts.Versioned && ch.epochKnown
	for owner, its := range by {
		for len(its) > 0 {
			n, size := 0, 0
			for n < len(its) && size < pollMessageBytes {
				size += len(its[n].Key) + 12
				n++
			}
			m.post(owner, &controlpb.Command{PollInterest: &controlpb.PollInterest{Channel: ch.name, Items: its[:n], Epoch: epoch, EpochKnown: known}})
			its = its[n:]
		}
	}
}

// postDrops tells owner that this node no longer tracks keys, in
// messages of bounded size.
func (m *pollManager) postDrops(owner, channel string, keys []string) {
	for len(keys) > 0 {
		n, size := 0, 0
		for n < len(keys) && size < pollMessageBytes {
			size += len(keys[n]) + 3
			n++
		}
		m.post(owner, &controlpb.Command{PollInterest: &controlpb.PollInterest{Channel: channel, Drop: keys[:n]}})
		keys = keys[n:]
	}
}

// sendDropsLocked tells the owners of keys, which the caller removed
// from ch.keys, that this node no longer tracks them. ch.mu is held (see
// sendInterestLocked).
func (m *pollManager) sendDropsLocked(ch *pollChannel, keys []string) {
	if len(keys) == 0 {
		return
	}
	by := make(map[string][]string)
	for _, k := range keys {
		if owner, ok := ch.sentTo[k]; ok {
			by[owner] = append(by[owner], k)
			delete(ch.sentTo, k)
		}
	}
	for owner, ks := range by {
		m.postDrops(owner, ch.name, ks)
	}
}

// renewInterest repeats every channel's interest to the keys' owners
// (moving keys whose owner changed), with the versions this node has.
func (m *pollManager) renewInterest() {
	m.mu.Lock()
	chans := make([]*pollChannel, 0, len(m.channels))
	for _, ch := range m.channels {
		chans = append(chans, ch)
	}
	m.mu.Unlock()
	for _, ch := range chans {
		ch.mu.Lock()
		items := make([]*controlpb.PollKey, 0, len(ch.keys))
		for k, pk := range ch.keys {
			items = append(items, &controlpb.PollKey{Key: k, Version: max(pk.version, pk.claimed)})
		}
		m.sendInterestLocked(ch, items)
		ch.mu.Unlock()
	}
}

// onInterest is an owner's side of PollInterest from node from.
func (m *pollManager) onInterest(from string, pi *controlpb.PollInterest) {
	if m.ctx.Err() != nil {
		return // shutting down: the others move the keys at once
	}
	opts, err := m.n.rules.Load().lookup(pi.Channel)
	if err != nil || opts.SubscriptionType != SubscriptionTypeSharedPoll {
		m.n.log.Warn("shared-poll interest for a channel that is not shared-poll here (configs differ between nodes?)", "channel", pi.Channel, "from", from)
		return
	}
	ch := m.openChannel(pi.Channel, opts.SharedPoll)
	now := time.Now()
	var answer []*controlpb.PollItem
	fresh := false
	// A node whose values are of another epoch than this owner's gets
	// every value this owner has, whatever versions it reports: it then
	// learns the epoch (and starts over) as from any update.
	otherEpoch := ch.opts.Versioned && ch.ownedEpochKnown && pi.EpochKnown && pi.Epoch != ch.ownedEpoch
	for _, k := range pi.Drop {
		if ok := ch.owned[k]; ok != nil {
			delete(ok.interest, from)
			if len(ok.interest) == 0 {
				delete(ch.owned, k)
			}
		}
	}
	for _, it := range pi.Items {
		ok := ch.owned[it.Key]
		if ok == nil {
			ok = &ownedKey{interest: make(map[string]time.Time)}
			ch.owned[it.Key] = ok
		}
		ok.interest[from] = now.Add(pollInterestTTL)
		ok.floor = max(ok.floor, it.Version)
		switch {
		case !ok.known:
			fresh = true
		case ok.version > it.Version || otherEpoch:
			answer = append(answer, &controlpb.PollItem{Key: it.Key, Data: ok.data, Version: ok.version})
		}
	}
	epoch := ch.ownedEpoch
	if len(ch.owned) > 0 && ch.worker == nil {
		ch.worker = newPollWorker(ch)
	}
	w := ch.worker
	if len(ch.owned) == 0 && ch.live == 0 {
		ch.scheduleShutdown()
	}
	ch.mu.Unlock()
	if fresh && w != nil {
		w.wake()
	}
	if len(answer) > 0 {
		m.deliver(ch.name, epoch, answer, []string{from}, false)
	}
}

// deliver sends values to the nodes interested, split into messages of
// bounded size: to one node by name, to several by broadcast (the others
// ignore keys they do not track).
func (m *pollManager) deliver(channel, epoch string, items []*controlpb.PollItem, nodes []string, publish bool) {
	to := ""
	if len(nodes) == 1 {
		to = nodes[0]
	}
	for len(items) > 0 {
		n, size := 0, 0
		for n < len(items) && (n == 0 || size+len(items[n].Data) < pollMessageBytes) {
			size += len(items[n].Data) + len(items[n].Key)
			n++
		}
		m.post(to, &controlpb.Command{PollUpdate: &controlpb.PollUpdate{Channel: channel, Epoch: epoch, Items: items[:n], Publish: publish}})
		items = items[n:]
	}
}

// post queues a control command for node to ("": every node). The outbox
// sends them in order, never from the caller's goroutine (which may hold
// a channel's lock, or be the broker's); those for this node alone it
// applies itself.
func (m *pollManager) post(to string, cmd *controlpb.Command) {
	cmd.To = to
	m.out.push(cmd)
}

// handle applies a shared-poll control command.
func (m *pollManager) handle(from string, cmd *controlpb.Command) {
	switch {
	case cmd.PollInterest != nil:
		m.onInterest(from, cmd.PollInterest)
	case cmd.PollUpdate != nil:
		m.apply(cmd.PollUpdate)
	}
}

// outbox sends control commands in order from one goroutine.
type outbox struct {
	mu    sync.Mutex
	queue []*controlpb.Command
	ready chan struct{}
}

func (o *outbox) push(cmd *controlpb.Command) {
	o.mu.Lock()
	o.queue = append(o.queue, cmd)
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// run sends the queued commands until done closes.
func (m *pollManager) runOutbox(done <-chan struct{}) {
	o := &m.out
	for {
		select {
		case <-done:
			return
		case <-o.ready:
		}
		o.mu.Lock()
		q := o.queue
		o.queue = nil
		o.mu.Unlock()
		for _, cmd := range q {
			if cmd.To == m.n.id {
				m.handle(m.n.id, cmd)
				continue
			}
			if err := m.n.sendControl(cmd); err != nil {
				// The next renewal repeats interest, and answers it
				// with the values this one carried.
				m.n.logBrokerFailure("publish", slog.LevelWarn, "send shared-poll command", "error", err)
			}
		}
	}
}

// pollWorker polls a channel's owned keys.
type pollWorker struct {
	ch     *pollChannel
	wakeC  chan struct{}
	stopC  chan struct{}
	cancel context.CancelFunc
	ctx    context.Context
	// purged is when the lapsed interest was last removed.
	purged time.Time
}

// newPollWorker starts ch's worker; nil once the node is stopping.
func newPollWorker(ch *pollChannel) *pollWorker {
	ctx, cancel := context.WithCancel(ch.m.ctx)
	w := &pollWorker{ch: ch, wakeC: make(chan struct{}, 1), stopC: make(chan struct{}), ctx: ctx, cancel: cancel}
	if !ch.m.start(w.run) {
		cancel()
		return nil
	}
	return w
}

func (w *pollWorker) wake() {
	select {
	case w.wakeC <- struct{}{}:
	default:
	}
}

func (w *pollWorker) stop() {
	w.cancel()
	close(w.stopC)
}

func (w *pollWorker) run() {
	interval := w.ch.opts.interval()
	timer := time.NewTimer(interval)
	defer timer.Stop()
	fails := 0
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.stopC:
			return
		case <-w.wakeC:
			// Let a burst of tracks gather into one call.
			time.Sleep(5 * time.Millisecond)
			w.cycle(false)
			continue
		case <-timer.C:
		}
		// Cycles start every interval, however long one takes (up to
		// an interval: a longer one is followed at once).
		started := time.Now()
		if w.cycle(true) {
			fails = 0
			timer.Reset(max(interval-time.Since(started), 0))
			continue
		}
		// After failures, the wait doubles up to a minute (or the
		// interval, when longer), with jitter, never below the interval.
		fails++
		backoff := min(interval<<min(fails, 6), max(pollMaxBackoff, interval))
		timer.Reset(max(backoff/2+rand.N(backoff/2+1), interval))
	}
}

// cycle polls the owned keys (all, or those never polled yet) and
// delivers what changed; it reports whether every call succeeded.
func (w *pollWorker) cycle(all bool) bool {
	ch := w.ch
	now := time.Now()
	// Interest lapses in pollInterestTTL: looking for it at each
	// renewal is soon enough, and spares short cycles a walk of every
	// key's interest.
	purge := all && now.Sub(w.purged) >= pollInterestRenew
	if purge {
		w.purged = now
	}
	ch.mu.Lock()
	items := make([]SharedPollKey, 0, len(ch.owned))
	for k, ok := range ch.owned {
		if purge {
			for node, until := range ok.interest {
				if now.After(until) {
					delete(ok.interest, node)
				}
			}
			if len(ok.interest) == 0 {
				delete(ch.owned, k)
				continue
			}
		}
		if !all && (ok.known || ok.polling) {
			continue
		}
		if !ok.known {
			ok.polling = true
		}
		v := uint64(0)
		if ch.opts.Versioned && ok.known {
			v = ok.version
		}
		items = append(items, SharedPollKey{Key: k, Version: v})
	}
	if len(ch.owned) == 0 && ch.live == 0 {
		ch.scheduleShutdown()
	}
	ch.mu.Unlock()
	if len(items) == 0 {
		return true
	}
	size := ch.opts.batchSize()
	var wg sync.WaitGroup
	var mu sync.Mutex
	okAll := true
	for start := 0; start < len(items); start += size {
		batch := items[start:min(start+size, len(items))]
		select {
		case ch.m.sem <- struct{}{}:
		case <-w.ctx.Done():
			wg.Wait()
			return true
		}
		wg.Go(func() {
			defer func() { <-ch.m.sem }()
			if !w.call(batch) {
				mu.Lock()
				okAll = false
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return okAll
}

// call asks the backend for one batch and takes its answer.
func (w *pollWorker) call(batch []SharedPollKey) bool {
	ch := w.ch
	n := ch.m.n
	h := n.handlers.sharedPollRefresh
	if h == nil {
		n.fails.Add("shared-poll: no refresh handler", slog.LevelError, "shared-poll channel polled without a refresh handler (OnSharedPollRefresh)", "channel", ch.name)
		ch.settleFailed(batch)
		return false
	}
	ctx, cancel := context.WithTimeout(w.ctx, pollCallTimeout)
	rep, err := h(ctx, SharedPollRefreshEvent{Channel: ch.name, Route: ch.opts.Route, Items: batch})
	cancel()
	if err != nil {
		if w.ctx.Err() == nil {
			n.fails.Add("shared-poll refresh failed", slog.LevelWarn, "shared-poll refresh failed", "channel", ch.name, "route", ch.opts.Route, "keys", len(batch), "error", err)
		}
		ch.settleFailed(batch)
		return false
	}
	ch.take(rep)
	return true
}

// settleFailed lets keys whose first poll failed be polled again.
func (ch *pollChannel) settleFailed(batch []SharedPollKey) {
	ch.mu.Lock()
	for _, it := range batch {
		if ok := ch.owned[it.Key]; ok != nil {
			ok.polling = false
		}
	}
	ch.mu.Unlock()
}

// take applies the backend's answer to the owned keys and delivers what
// changed to the nodes interested in it.
func (ch *pollChannel) take(rep SharedPollRefreshReply) {
	var changed []*controlpb.PollItem
	nodes := make(map[string]struct{})
	now := time.Now()
	ch.mu.Lock()
	// An answer without values nor epoch says nothing of the epoch (a
	// backend answering {} has nothing new); one that names an epoch
	// does, even without values (a backend that answers only versions
	// above those asked, once its versions started over).
	if ch.opts.Versioned && (len(rep.Items) > 0 || rep.Epoch != "") {
		if ch.ownedEpochKnown && rep.Epoch != ch.ownedEpoch {
			for _, ok := range ch.owned {
				ok.version, ok.data, ok.known, ok.floor = 0, nil, false, 0
			}
		}
		ch.ownedEpoch, ch.ownedEpochKnown = rep.Epoch, true
	}
	for _, it := range rep.Items {
		ok := ch.owned[it.Key]
		if ok == nil {
			continue
		}
		ok.polling = false
		switch {
		case it.Removed:
			delete(ch.owned, it.Key)
			changed = append(changed, &controlpb.PollItem{Key: it.Key, Removed: true})
		case ch.opts.Versioned || it.Version > 0:
			// A versionless backend that gives versions anyway is taken
			// at its word, as in versioned namespaces.
			if ok.known && it.Version <= ok.version {
				continue
			}
			ok.version, ok.data, ok.known = it.Version, it.Data, true
			changed = append(changed, &controlpb.PollItem{Key: it.Key, Data: it.Data, Version: it.Version})
		default:
			if ok.known && bytes.Equal(ok.data, it.Data) {
				continue
			}
			// Versions of versionless values are this node's clock in
			// milliseconds: they keep growing when the key moves to
			// another node or the cluster restarts, so that clients
			// never mistake a new value for one they have.
			v := max(uint64(now.UnixMilli()), ok.version+1, ok.floor+1)
			ok.version, ok.data, ok.known = v, it.Data, true
			changed = append(changed, &controlpb.PollItem{Key: it.Key, Data: it.Data, Version: v})
		}
		for node := range ok.interest {
			nodes[node] = struct{}{}
		}
	}
	epoch := ch.ownedEpoch
	ch.mu.Unlock()
	if len(changed) == 0 {
		return
	}
	list := make([]string, 0, len(nodes))
	for node := range nodes {
		list = append(list, node)
	}
	ch.m.deliver(ch.name, epoch, changed, list, false)
}

// takePublishedLocked is an owner's side of SharedPollPublish: the value
// counts as polled, so the next poll does not deliver it again.
func (ch *pollChannel) takePublishedLocked(epoch string, items []*controlpb.PollItem) {
	if ch.ownedEpochKnown && epoch != ch.ownedEpoch {
		// A published epoch is a new epoch, as for the nodes that
		// apply it: the owned versions start over.
		for _, ok := range ch.owned {
			ok.version, ok.data, ok.known, ok.floor = 0, nil, false, 0
		}
	}
	ch.ownedEpoch, ch.ownedEpochKnown = epoch, true
	for _, it := range items {
		if ok := ch.owned[it.Key]; ok != nil && (!ok.known || it.Version > ok.version) {
			ok.version, ok.data, ok.known = it.Version, it.Data, true
		}
	}
}
