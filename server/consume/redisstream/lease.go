package redisstream

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// lease makes one reader, among those of every node of the group, the
// only one that reads a stream, so that the stream runs in order however
// many nodes consume it. It is a key in the stream's Redis holding the
// holder's name, which expires unless renewed.
type lease struct {
	key   string
	token string
	ttl   time.Duration
	// held tells whether this reader held the lease at its last renewal,
	// sent at renewed.
	held    bool
	renewed time.Time
}

// period is how often the holder renews the lease, and how often the
// others try to take it: a quarter of its time, so that a renewal late by
// a blocked read and the start of a batch still comes in time.
func (l *lease) period() time.Duration { return l.ttl / 4 }

// leaseKey is the key of the lease of the group on a stream.
func leaseKey(prefix, group, stream string) string {
	if prefix == "" {
		prefix = "gyre"
	}
	return prefix + ".lease." + group + "." + stream
}

// holdLease takes the lease, or renews it once a period has passed, and reports whether this reader holds it. A reader that has
// just taken it first takes over every entry its group left pending
// with other consumers: those of the holder before it, which has died or
// lost the lease, run before any new entry.
func (r *reader) holdLease() (bool, error) {
	l := r.lease
	if l.held && time.Since(l.renewed) < l.period() {
		return true, nil
	}
	was := l.held
	if err := r.renewLease(); err != nil {
		return false, err
	}
	switch {
	case l.held && !was:
		r.own, r.claimAll, r.cursor, r.reclaimAt = true, true, "0-0", time.Time{}
		r.c.d.Logger().Info("reading the stream for the group, alone", "stream", r.s.what, "lease", l.key)
	case !l.held && was:
		r.c.d.Logger().Warn("another consumer took over the stream: this one could not renew its lease in time",
			"stream", r.s.what, "lease", l.key)
	}
	return l.held, nil
}

// renewLease takes or renews the lease if it is free or this reader's.
func (r *reader) renewLease() error {
	l := r.lease
	ctx, cancel := r.c.timeout()
	defer cancel()
	sent := time.Now()
	n, err := leaseScript.Exec(ctx, r.client, []string{l.key},
		[]string{l.token, strconv.FormatInt(l.ttl.Milliseconds(), 10)}).AsInt64()
	if err != nil {
		return err
	}
	l.held = n == 1
	if l.held {
		l.renewed = sent
	}
	return nil
}

// releaseLease gives the lease up, so that another node takes the stream
// over at once rather than when it expires.
func (r *reader) releaseLease() {
	l := r.lease
	if l == nil || !l.held {
		return
	}
	ctx, cancel := r.c.timeout()
	defer cancel()
	if err := releaseScript.Exec(ctx, r.client, []string{l.key}, []string{l.token}).Error(); err != nil {
		r.c.d.Logger().Debug("could not release the lease of the stream", "stream", r.s.what, "error", err)
	}
	l.held = false
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// leaseScript sets KEYS[1] to ARGV[1] for ARGV[2] ms when it is missing
// or already ARGV[1], and tells whether it did.
var leaseScript = rueidis.NewLuaScript(`
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`)

// releaseScript deletes KEYS[1] if it is ARGV[1].
var releaseScript = rueidis.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)
