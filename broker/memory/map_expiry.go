package memory

import (
	"container/heap"
	"slices"
	"strings"
	"sync"
	"time"
)

// expiryQueue orders the expiring keys of a shard's channels by expiry
// time: a heap that holds each key at most once and lets go of it when it
// is removed, so that it never holds more than the live keys. A refreshed
// TTL does not move a key in it: the key comes due at its earlier time,
// and the sweep queues it again for the later one, so that a key written
// again and again costs the heap one step per TTL rather than one per
// write. Its lock is taken last, after a channel's, and nothing is called
// while holding it.
type expiryQueue struct {
	mu   sync.Mutex
	heap entryHeap
}

// set makes e, an entry of a locked channel, expire at expires.
func (q *expiryQueue) set(e *mapEntry, expires int64) {
	e.expires = expires
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case e.heapIdx < 0:
		e.queuedAt = expires
		heap.Push(&q.heap, e)
	case expires < e.queuedAt: // the TTL shrank
		e.queuedAt = expires
		heap.Fix(&q.heap, e.heapIdx)
	}
}

// drop makes e, an entry of a locked channel, never expire.
func (q *expiryQueue) drop(e *mapEntry) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.dropLocked(e)
}

func (q *expiryQueue) dropLocked(e *mapEntry) {
	e.expires = 0
	if e.heapIdx >= 0 {
		heap.Remove(&q.heap, e.heapIdx)
	}
}

// dropAll drops every entry of state, the state of a locked channel.
func (q *expiryQueue) dropAll(state map[string]*mapEntry) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range state {
		q.dropLocked(e)
	}
}

// due takes out of the queue the entries that come due by now and appends
// them to out, earliest first. An entry taken out stays in its channel's
// state until the sweep, holding the channel's lock, removes it there or
// queues it again.
func (q *expiryQueue) due(now int64, out []*mapEntry) []*mapEntry {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.heap) > 0 && q.heap[0].queuedAt <= now {
		out = append(out, heap.Pop(&q.heap).(*mapEntry))
	}
	return out
}

// entryHeap is a min-heap of entries by expiry time, keeping each
// entry's index up to date.
type entryHeap []*mapEntry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].queuedAt < h[j].queuedAt }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}

func (h *entryHeap) Push(x any) {
	e := x.(*mapEntry)
	e.heapIdx = len(*h)
	*h = append(*h, e)
}

func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heapIdx = -1
	return e
}

// expireDue removes the entries of due that still expire by now, each as
// a change of its channel, and delivers them: per channel in one run, in
// the order they expired.
func (b *MapBroker) expireDue(due []*mapEntry, now time.Time) {
	slices.SortStableFunc(due, func(x, y *mapEntry) int { return strings.Compare(x.ch.channel, y.ch.channel) })
	for len(due) > 0 {
		k := 1
		for k < len(due) && due[k].ch == due[0].ch {
			k++
		}
		b.expireEntries(due[0].ch, due[:k], now)
		due = due[k:]
	}
}

// expireEntries removes the entries of c that expire by now, and queues
// again those whose TTL was refreshed; an entry removed since it was
// taken out of the queue, or written without expiry, is left as it is.
func (b *MapBroker) expireEntries(c *mapChannel, entries []*mapEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nowNano := now.UnixNano()
	c.expire(nowNano)
	sc := scratchPool.Get().(*scratch)
	pubs := sc.pubs[:0]
	for _, e := range entries {
		switch {
		case c.state[e.key] != e || e.expires == 0:
		case e.expires > nowNano:
			c.queue.set(e, e.expires)
		default:
			pubs = append(pubs, c.remove(e, nil, now))
		}
	}
	if h := b.receiver(c); h != nil && len(pubs) > 0 {
		b.handOver(h, c, pubs, sc)
	}
	clear(pubs)
	sc.pubs = pubs[:0]
	scratchPool.Put(sc)
}
