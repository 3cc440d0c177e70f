package memory

import (
	"bytes"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/google/btree"

	"github.com/gyrehq/gyre/broker"
)

// mapChannel is the state of one map channel: its lock, which serializes
// changes and their delivery, the meta (epoch, top offset), the keys,
// the stream of changes and the idempotency results. All fields but
// channel and queue are guarded by mu.
type mapChannel struct {
	entryBase
	// queue holds the channel's expiring keys, with the other channels of
	// its shard; taken after mu, never before.
	queue      *expiryQueue
	subscribed bool
	// opts are the options of the latest call, kept for what happens
	// without one: expiry.
	opts broker.MapOptions

	epoch       string // "" until a call touches the channel
	top         uint64
	metaExpires int64 // Unix nanoseconds; 0: never
	idleAt      int64 // when the channel may be freed, if it holds nothing

	state map[string]*mapEntry
	index *btree.BTreeG[*mapEntry] // the entries of state, by key
	pivot mapEntry                 // a search key for index, to page without allocating
	hist  ring
	idemCache
}

// mapEntry is one key of a channel's state.
type mapEntry struct {
	key string
	pub *broker.Publication // what the key holds, as handed out: read-only
	// version and versionEpoch are the last versioned write's.
	version      uint64
	versionEpoch string
	ch           *mapChannel
	// expires is when the key expires (Unix nanoseconds, 0 for never).
	expires int64
	// queuedAt (when the queue hands the entry to the sweep, no later than
	// expires) and heapIdx (its place in the queue's heap, -1 when out)
	// are guarded by the queue's lock.
	queuedAt int64
	heapIdx  int
}

func entryLess(a, b *mapEntry) bool { return a.key < b.key }

// indexDegree is the B-tree's degree: nodes of up to 63 keys, a few cache
// lines of pointers each.
const indexDegree = 32

// touch starts every call about the channel: it drops what has expired,
// gives the channel an epoch if it has none, and keeps its meta alive.
func (c *mapChannel) touch(now int64, mo broker.MapOptions, idleTTL time.Duration) {
	c.expire(now)
	if c.epoch == "" {
		c.epoch, c.top = newEpoch(), 0
	}
	c.opts = mo
	c.keepMeta(now)
	c.idleAt = now + int64(idleTTL)
}

func (c *mapChannel) keepMeta(now int64) {
	c.metaExpires = 0
	if c.opts.MetaTTL > 0 {
		c.metaExpires = now + int64(c.opts.MetaTTL)
	}
}

// expire drops what has expired at now: the whole channel when its meta
// has, else its stream's old changes and idempotency results. Expired
// keys are not its business: the sweep removes them as changes.
func (c *mapChannel) expire(now int64) {
	if c.epoch != "" && c.metaExpires != 0 && c.metaExpires <= now {
		c.reset()
	}
	c.hist.dropExpired(now)
	c.expireIdem(now)
}

// reset drops state, stream, meta and idempotency results; the next call
// starts a new epoch.
func (c *mapChannel) reset() {
	c.queue.dropAll(c.state)
	c.state, c.index = nil, nil
	c.hist.reset()
	c.epoch, c.top, c.metaExpires = "", 0, 0
	c.idemCache = idemCache{}
}

// sweep implements shardEntry: a channel holding nothing, that this node
// is not subscribed to, goes once its meta is gone or it has been idle
// long enough.
func (c *mapChannel) sweep(now int64) bool {
	c.expire(now)
	return !c.subscribed && len(c.state) == 0 && c.hist.len() == 0 && len(c.idem) == 0 &&
		(c.epoch == "" || c.idleAt <= now)
}

func (c *mapChannel) position() broker.StreamPosition {
	return broker.StreamPosition{Offset: c.top, Epoch: c.epoch}
}

// keyTTL is how long a key lives after its last write, 0 for ever.
func (c *mapChannel) keyTTL() time.Duration {
	if c.opts.Mode.HasExpiry() {
		return max(c.opts.KeyTTL, 0)
	}
	return 0
}

// change gives pub the channel's next offset and puts it in the stream
// when the mode keeps one; it returns the change's position.
func (c *mapChannel) change(pub *broker.Publication, now int64) broker.StreamPosition {
	c.top++
	pub.Offset = c.top
	if c.opts.Mode.HasStream() && c.opts.StreamSize > 0 {
		expires := int64(math.MaxInt64)
		if c.opts.StreamTTL > 0 {
			expires = now + int64(c.opts.StreamTTL)
		}
		c.hist.push(histEntry{pub: pub, expires: expires}, c.opts.StreamSize)
	}
	c.keepMeta(now)
	return c.position()
}

// suppress returns the result of a write that changes nothing, and true,
// or false when the write goes ahead. A suppressed if_new write of a
// present key refreshes its TTL when asked to.
func (c *mapChannel) suppress(key string, opts broker.MapPublishOptions, now int64) (broker.MapUpdateResult, bool) {
	if res, ok := c.repeated(opts.IdempotencyKey, now); ok {
		return res, true
	}
	e := c.state[key]
	var reason broker.SuppressReason
	switch {
	case opts.Version > 0 && e != nil && e.stale(opts.Version, opts.VersionEpoch):
		reason = broker.SuppressVersion
	case opts.KeyMode == broker.KeyModeIfNew && e != nil:
		reason = broker.SuppressKeyExists
		if ttl := c.keyTTL(); opts.RefreshTTLOnSuppress && ttl > 0 {
			c.queue.set(e, now+int64(ttl))
		}
	case opts.KeyMode == broker.KeyModeIfExists && e == nil:
		reason = broker.SuppressKeyNotFound
	default:
		return broker.MapUpdateResult{}, false
	}
	return broker.MapUpdateResult{Position: c.position(), Suppressed: true, SuppressReason: reason}, true
}

// repeated returns the result of a call whose idempotency key was seen,
// and true, or false for an empty key or one not seen.
func (c *mapChannel) repeated(key string, now int64) (broker.MapUpdateResult, bool) {
	if key == "" {
		return broker.MapUpdateResult{}, false
	}
	sp, ok := c.idemLookup(key, now)
	return broker.MapUpdateResult{Position: sp, Suppressed: ok, SuppressReason: broker.SuppressIdempotency}, ok
}

// stale reports whether a write of version and epoch is not newer than
// the entry's last versioned write.
func (e *mapEntry) stale(version uint64, epoch string) bool {
	return e.version > 0 && (epoch == "" || e.versionEpoch == "" || epoch == e.versionEpoch) && version <= e.version
}

// write stores opts' value in key as the channel's next change and
// returns what the handler is given for it.
func (c *mapChannel) write(key string, opts broker.MapPublishOptions, now time.Time) broker.RunPublication {
	nowNano := now.UnixNano()
	e := c.state[key]
	var prev *broker.Publication
	if e == nil {
		e = c.add(key)
	} else {
		prev = e.pub
	}
	e.pub = &broker.Publication{
		Key:     e.key,
		Data:    bytes.Clone(opts.Data),
		Info:    cloneInfo(opts.ClientInfo),
		Tags:    maps.Clone(opts.Tags),
		Time:    now.UnixMilli(),
		Score:   opts.Score,
		Version: opts.Version,
	}
	if opts.Version > 0 {
		e.version, e.versionEpoch = opts.Version, opts.VersionEpoch
	}
	if ttl := c.keyTTL(); ttl > 0 {
		c.queue.set(e, nowNano+int64(ttl))
	} else if e.expires != 0 {
		c.queue.drop(e)
	}
	rp := broker.RunPublication{Pub: e.pub, Position: c.change(e.pub, nowNano), Delta: opts.UseDelta}
	if opts.UseDelta {
		rp.Prev = prev
	}
	return rp
}

// add makes a new key's entry. The key is copied: the caller's string may
// share memory with a request much larger than it.
func (c *mapChannel) add(key string) *mapEntry {
	e := &mapEntry{key: strings.Clone(key), ch: c, heapIdx: -1}
	if c.state == nil {
		c.state = make(map[string]*mapEntry)
		c.index = btree.NewG(indexDegree, entryLess)
	}
	c.state[e.key] = e
	c.index.ReplaceOrInsert(e)
	return e
}

// remove deletes e as the channel's next change, made by info (nil for
// expiry), and returns what the handler is given for it. The removal
// carries the entry's tags, so that tag filters let it through as they
// let the key through.
func (c *mapChannel) remove(e *mapEntry, info *broker.ClientInfo, now time.Time) broker.RunPublication {
	delete(c.state, e.key)
	c.index.Delete(e)
	if e.expires != 0 {
		c.queue.drop(e)
	}
	pub := &broker.Publication{Key: e.key, Removed: true, Tags: e.pub.Tags, Info: cloneInfo(info), Time: now.UnixMilli()}
	return broker.RunPublication{Pub: pub, Position: c.change(pub, now.UnixNano())}
}

// page returns up to limit entries (all for a negative limit) in key
// order, after the key after when hasAfter, and whether more follow.
func (c *mapChannel) page(after string, hasAfter bool, limit int) ([]*broker.Publication, bool) {
	if c.index == nil {
		return nil, false
	}
	n := c.index.Len()
	if limit >= 0 {
		n = min(n, limit)
	}
	pubs := make([]*broker.Publication, 0, n)
	more := false
	visit := func(e *mapEntry) bool {
		if hasAfter && e.key == after {
			return true
		}
		if limit >= 0 && len(pubs) == limit {
			more = true
			return false
		}
		pubs = append(pubs, e.pub)
		return true
	}
	if !hasAfter {
		c.index.Ascend(visit)
		return pubs, more
	}
	c.pivot.key = after
	c.index.AscendGreaterOrEqual(&c.pivot, visit)
	c.pivot.key = ""
	return pubs, more
}
