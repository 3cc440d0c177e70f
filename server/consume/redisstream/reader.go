package redisstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/gyrehq/gyre/server/consume"
)

// reader reads one stream on one Redis as one consumer of the group.
type reader struct {
	c      *Consumer
	client rueidis.Client
	s      *stream
	name   string

	// own asks for the entries pending under this name (ID 0) before new
	// ones: at start, and after a failure, which may have lost a reply
	// that carried entries.
	own bool
	// grouped tells that the group is known to exist.
	grouped bool
	// acks are the IDs of entries done and not acknowledged yet.
	acks []string
	// reclaimAt is when to look next for entries that dead consumers
	// left; cursor is where the look under way goes on ("0-0" begins).
	reclaimAt time.Time
	cursor    string
	// claimAll has the look under way take every pending entry, however
	// long idle: the lease was just taken, their holder is gone.
	claimAll bool
	// lease, with num_workers 1, makes this reader the stream's only one
	// in the group; nil otherwise.
	lease *lease
}

// run reads until ctx ends, riding out failures of Redis, then
// acknowledges what it has done.
func (r *reader) run(ctx context.Context) {
	r.own, r.cursor = true, "0-0"
	for attempt := 0; ctx.Err() == nil; {
		if err := r.step(ctx); err != nil {
			r.own = true
			r.c.d.SourceFailed(r.s.what, err)
			if !r.c.d.Backoff(ctx, attempt) {
				break
			}
			attempt++
			continue
		}
		attempt = 0
	}
	if err := r.ack(); err != nil {
		r.c.d.Logger().Warn("consumed entries done but not acknowledged at shutdown: the group runs them again after visibility_timeout",
			"stream", r.s.what, "count", len(r.acks), "error", err)
	}
	r.releaseLease()
}

// step takes one batch of entries, runs it and acknowledges it.
func (r *reader) step(ctx context.Context) error {
	if !r.grouped {
		if err := r.makeGroup(); err != nil {
			return err
		}
	}
	// Entries done are acknowledged before any read, so that a read of
	// this consumer's pending entries finds only those not done.
	if err := r.ack(); err != nil {
		return err
	}
	if r.lease != nil {
		held, err := r.holdLease()
		if err != nil {
			return fmt.Errorf("lease: %w", err)
		}
		if !held {
			// Another reader has the stream: try again soon, to take
			// over quickly from a node that stops.
			r.c.d.SourceOK()
			pause(ctx, min(r.lease.period(), blockFor))
			return nil
		}
	}
	entries, err := r.next()
	if isNoGroup(err) {
		r.grouped = false
		return nil
	}
	if err != nil {
		return err
	}
	r.c.d.SourceOK()
	if len(entries) == 0 {
		return nil
	}
	msgs, ids := r.messages(entries)
	if len(msgs) > 0 {
		done := r.dispatch(ctx, msgs, ids)
		r.acks = append(r.acks, ids[:done]...)
	}
	return r.ack()
}

// next reads the next entries to run: this consumer's own pending ones
// first, then those dead consumers left, then new ones.
func (r *reader) next() ([]rueidis.XRangeSlice, error) {
	switch {
	case r.own:
		entries, err := r.read("0", false)
		if err == nil && len(entries) == 0 {
			r.own = false
		}
		return entries, err
	case !time.Now().Before(r.reclaimAt):
		return r.reclaim()
	default:
		entries, err := r.read(">", true)
		if len(entries) > 0 {
			r.s.delivered(entries[len(entries)-1].ID)
		}
		return entries, err
	}
}

// read reads entries after id ("0": this consumer's pending ones; ">":
// new ones, waiting up to blockFor for them).
func (r *reader) read(id string, block bool) ([]rueidis.XRangeSlice, error) {
	b := r.client.B().Xreadgroup().Group(r.c.cfg.ConsumerGroup, r.name).Count(int64(readCount))
	var cmd rueidis.Completed
	wait := time.Duration(0)
	if block {
		wait = blockFor
		if r.lease != nil {
			// Back in time to renew the lease.
			wait = min(wait, r.lease.period())
		}
		cmd = b.Block(max(wait.Milliseconds(), 1)).Streams().Key(r.s.key).Id(id).Build()
	} else {
		cmd = b.Streams().Key(r.s.key).Id(id).Build()
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+r.c.ioTimeout)
	defer cancel()
	res, err := r.client.Do(ctx, cmd).AsXReadSlices()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return res[r.s.key], nil
}

// reclaim takes over entries that other consumers of the group have held
// unacknowledged for visibility_timeout, in ID order.
func (r *reader) reclaim() ([]rueidis.XRangeSlice, error) {
	ctx, cancel := r.c.timeout()
	defer cancel()
	idle := r.c.cfg.VisibilityTimeout
	if r.claimAll {
		idle = 0
	}
	cmd := r.client.B().Xautoclaim().Key(r.s.key).Group(r.c.cfg.ConsumerGroup).Consumer(r.name).
		MinIdleTime(strconv.FormatInt(idle.Milliseconds(), 10)).
		Start(r.cursor).Count(int64(readCount)).Build()
	reply, err := r.client.Do(ctx, cmd).ToArray()
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	if len(reply) < 2 {
		return nil, fmt.Errorf("reclaim: XAUTOCLAIM answered %d elements", len(reply))
	}
	cursor, err := reply[0].ToString()
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	entries, err := reply[1].AsXRangeSlices()
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	r.cursor = cursor
	if cursor == "0-0" {
		r.reclaimAt = time.Now().Add(min(r.c.cfg.VisibilityTimeout, reclaimEvery))
		r.claimAll = false
	}
	if len(entries) > 0 {
		r.c.d.Logger().Info("claimed consumed entries that another consumer of the group left unacknowledged",
			"stream", r.s.what, "count", len(entries), "first", entries[0].ID)
	}
	return entries, nil
}

// messages are the messages of entries and their IDs. An entry deleted
// from the stream while pending (no fields) has nothing to run: it is
// only acknowledged.
func (r *reader) messages(entries []rueidis.XRangeSlice) ([]consume.Message, []string) {
	msgs := make([]consume.Message, 0, len(entries))
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.FieldValues == nil {
			r.acks = append(r.acks, e.ID)
			continue
		}
		msgs = append(msgs, r.c.message(r.s, e))
		ids = append(ids, e.ID)
	}
	return msgs, ids
}

// dispatch runs msgs, whose entries are ids, and returns how many are
// done. While they run it renews this consumer's claim on them, and its
// lease, every quarter of visibility_timeout, so that a batch retried
// while the broker is down is not taken by another consumer as left by
// a dead one.
func (r *reader) dispatch(ctx context.Context, msgs []consume.Message, ids []string) int {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(max(r.c.cfg.VisibilityTimeout/4, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				r.renew(ids)
				if r.lease != nil && r.lease.held {
					if err := r.renewLease(); err != nil {
						r.c.d.Logger().Warn("could not renew the lease of the stream", "stream", r.s.what, "error", err)
					}
				}
			}
		}
	})
	done, _ := r.c.d.Dispatch(ctx, msgs)
	close(stop)
	wg.Wait()
	return done
}

// renew resets the idle time of those of ids still pending under this
// consumer. Failing is harmless: another consumer may then run them too,
// as at least once allows.
func (r *reader) renew(ids []string) {
	ctx, cancel := r.c.timeout()
	defer cancel()
	args := append([]string{r.c.cfg.ConsumerGroup, r.name}, ids...)
	if err := renewScript.Exec(ctx, r.client, []string{r.s.key}, args).Error(); err != nil {
		r.c.d.Logger().Warn("could not renew the claim on consumed entries being run", "stream", r.s.what, "error", err)
	}
}

// ack acknowledges the entries done.
func (r *reader) ack() error {
	if len(r.acks) == 0 {
		return nil
	}
	ctx, cancel := r.c.timeout()
	defer cancel()
	err := r.client.Do(ctx, r.client.B().Xack().Key(r.s.key).Group(r.c.cfg.ConsumerGroup).Id(r.acks...).Build()).Error()
	if isNoGroup(err) {
		// The group and its pending entries are gone: there is nothing
		// left to acknowledge.
		r.acks = r.acks[:0]
		r.grouped = false
		return nil
	}
	if err != nil {
		return fmt.Errorf("acknowledge: %w", err)
	}
	r.acks = r.acks[:0]
	return nil
}

// makeGroup makes the group when it is missing: at the end of the stream
// at first, after the last entry delivered when it went missing since.
func (r *reader) makeGroup() error {
	from := r.s.since()
	ctx, cancel := r.c.timeout()
	defer cancel()
	err := r.client.Do(ctx, r.client.B().XgroupCreate().Key(r.s.key).Group(r.c.cfg.ConsumerGroup).Id(from).Mkstream().Build()).Error()
	switch {
	case rueidis.IsRedisBusyGroup(err):
	case err != nil:
		return fmt.Errorf("make consumer group %s: %w", r.c.cfg.ConsumerGroup, err)
	case from == "$":
		r.c.d.Logger().Info("consumer group made at the end of the stream", "stream", r.s.what, "group", r.c.cfg.ConsumerGroup)
	default:
		r.c.d.Logger().Warn("consumer group went missing (Redis lost it): made again after the last entry delivered",
			"stream", r.s.what, "group", r.c.cfg.ConsumerGroup, "after", from)
	}
	r.grouped = true
	return nil
}

// isNoGroup tells whether err is Redis saying that the stream or its
// group does not exist (NOGROUP), or that they went away during a read
// (UNBLOCKED).
func isNoGroup(err error) bool {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "NOGROUP") || strings.HasPrefix(msg, "UNBLOCKED")
}

// renewScript resets the idle time of the entries ARGV[3..] of group
// ARGV[1] on stream KEYS[1] that are pending under consumer ARGV[2],
// leaving alone those another consumer took meanwhile.
var renewScript = rueidis.NewLuaScript(`
local claim = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    claim[#claim + 1] = ARGV[i]
  end
end
if #claim == 5 then
  return 0
end
claim[#claim + 1] = 'JUSTID'
return #redis.call(unpack(claim))
`)
