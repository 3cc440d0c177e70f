package redis

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/redis/rueidis"
)

// readState is the reading side of a tracker. owned, until and tried
// belong to pollLoop.
type readState struct {
	owned [occupancyPartitions]bool
	// until is when this node's reader lease of a partition ends at the
	// earliest: the lease's length after the look that renewed it was
	// sent.
	until [occupancyPartitions]time.Time
	tried time.Time // the last look at the partitions this node does not read
	// drops counts, per partition, the transitions found dropped since
	// the last look that found its stream empty; not zero, an episode
	// of drops is logged as started.
	drops [occupancyPartitions]uint64
	// missed: the last look did not read everything there may be (the
	// handler was busy, or was handed a batch), so the look that the
	// handler's end wakes reads every partition.
	missed bool

	// busy is set by pollLoop when it hands a batch to deliverLoop, and
	// cleared by deliverLoop once done with it: one batch at a time.
	busy    atomic.Bool
	batches chan occupancyBatch

	mu     sync.Mutex
	flight *occupancyFlight // the handler call in progress
}

func (r *readState) init() { r.batches = make(chan occupancyBatch, 1) }

// occupancyBatch is one handler call's events, from the partitions parts
// read under leases that end at until at the earliest, and what forgets
// them once handed over.
type occupancyBatch struct {
	events []broker.OccupancyEvent
	acks   []occupancyCall
	parts  []int
	until  time.Time
}

// occupancyFlight is a handler call in progress: its ctx ends (cancel)
// when a reader lease of its partitions is lost or may have run out.
type occupancyFlight struct {
	parts  []int
	cancel context.CancelFunc
	timer  *time.Timer
}

// pollLoop looks at the partitions this node reads at every tick, and
// at the others now and then to take those nobody reads. Woken between
// ticks, it looks only where this node made events, if it reads there,
// or everywhere it reads when the handler became free.
func (t *OccupancyTracker) pollLoop() {
	tick := time.NewTicker(min(occupancyPollEvery, t.reader/4))
	defer tick.Stop()
	all := true
	for {
		t.poll(all)
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
			all = true
		case <-t.pollKick:
			all = false
			// Let the events of a burst gather: one look, one handler
			// call and one trim for all of them.
			select {
			case <-t.ctx.Done():
				return
			case <-time.After(occupancyLinger):
			}
		}
	}
}

func (t *OccupancyTracker) poll(all bool) {
	r := &t.reading
	sent := time.Now()
	read := !r.busy.Load()
	if !all && !read {
		return // the handler's end wakes the loop again
	}
	made := t.made.Swap(0)
	if r.missed {
		made = ^uint32(0)
	}
	r.missed = !read
	take := all && sent.Sub(r.tried) >= t.reader/3
	if take {
		r.tried = sent
	}
	count := "0"
	if read {
		count = strconv.Itoa(occupancyRead)
	}
	var calls []occupancyCall
	for _, p := range t.parts {
		if take || r.owned[p.n] && (all || made&(1<<p.n) != 0) {
			calls = append(calls, t.pollCall(p, take, count))
		}
	}
	if len(calls) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.e.cfg.IOTimeout)
	results := doAll(ctx, calls)
	cancel()
	var b occupancyBatch
	for i, res := range results {
		p := calls[i].p
		arr, err := res.ToArray()
		var owner int64
		if err == nil && len(arr) > 0 {
			owner, err = arr[0].AsInt64()
		}
		if err != nil {
			// Whether this node still reads p is unknown: its lease ends
			// as until says, unless a later look renews it.
			if !t.stopped() {
				t.logFailure("occupancy poll", p, "redis: occupancy: looking at a partition failed", err)
			}
			continue
		}
		if owner != 1 {
			r.owned[p.n] = false
			if r.drops[p.n] > 0 {
				t.log.Info("redis: occupancy: another node reads a partition that dropped transitions", "partition", p.n, "dropped", r.drops[p.n])
				r.drops[p.n] = 0
			}
			continue
		}
		r.owned[p.n], r.until[p.n] = true, sent.Add(t.reader)
		look, err := parsePoll(p, arr)
		t.countDrops(p, look)
		if err != nil {
			t.logFailure("occupancy poll", p, "redis: occupancy: a partition's transitions could not be read", err)
			continue
		}
		if len(look.events) > 0 {
			b.events = append(b.events, look.events...)
			b.acks = append(b.acks, look.ack)
			b.parts = append(b.parts, p.n)
		}
	}
	t.watchFlight()
	if read && len(b.events) > 0 {
		b.until = r.until[b.parts[0]]
		for _, n := range b.parts[1:] {
			if r.until[n].Before(b.until) {
				b.until = r.until[n]
			}
		}
		r.busy.Store(true)
		r.missed = true
		r.batches <- b
	}
}

func (t *OccupancyTracker) pollCall(p *occupancyPartition, take bool, count string) occupancyCall {
	takeArg := "0"
	if take {
		takeArg = "1"
	}
	keys := append(p.keys[:4:4], p.reader)
	return occupancyCall{p, occupancyPollScript, keys, []string{
		t.epoch(), t.node, millisString(t.reader), takeArg, count,
		millisString(t.opts.ChannelDelay), millisString(t.opts.UserDelay),
		p.base, strconv.Itoa(occupancySweep), t.backlogArg,
	}}
}

// occupancyLook is what the reader's look at a partition found.
type occupancyLook struct {
	// dropped is how many transitions were dropped past the backlog
	// since the last look; length is the stream's length, -1 unknown.
	dropped, length int64
	events          []broker.OccupancyEvent
	ack             occupancyCall // forgets events once handed over
}

// pollHead is the number of values before the poll script's transitions.
const pollHead = 4

// parsePoll reads the poll script's answer. The drop count and the
// length are set even when the transitions could not be read: the script
// reset the count.
func parsePoll(p *occupancyPartition, arr []rueidis.RedisMessage) (occupancyLook, error) {
	look := occupancyLook{length: -1}
	if len(arr) < pollHead {
		return look, fmt.Errorf("redis: occupancy poll returned %d values", len(arr))
	}
	dropped, err := arr[2].AsInt64()
	if err != nil {
		return look, fmt.Errorf("redis: occupancy poll drops: %w", err)
	}
	look.dropped = dropped
	if look.length, err = arr[3].AsInt64(); err != nil {
		look.length = -1
		return look, fmt.Errorf("redis: occupancy poll length: %w", err)
	}
	if (len(arr)-pollHead)%5 != 0 {
		return look, fmt.Errorf("redis: occupancy poll returned %d values", len(arr))
	}
	epoch, err := arr[1].ToString()
	if err != nil {
		return look, fmt.Errorf("redis: occupancy poll epoch: %w", err)
	}
	n := (len(arr) - pollHead) / 5
	if n == 0 {
		return look, nil
	}
	events := make([]broker.OccupancyEvent, n)
	prefix := strconv.Itoa(p.n) + "." + epoch + "."
	var last string
	for i := range events {
		var f [5]string
		for j := range f {
			if f[j], err = arr[pollHead+5*i+j].ToString(); err != nil {
				return look, fmt.Errorf("redis: occupancy transition: %w", err)
			}
		}
		ms, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil || len(f[1]) < 2 {
			return look, fmt.Errorf("redis: occupancy transition %q of %q at %q", f[0], f[1], f[3])
		}
		ev := broker.OccupancyEvent{
			ID: prefix + f[0], Kind: broker.OccupancyChannel, Key: f[1][1:],
			Occupied: f[2] == "o", TimeMs: ms,
		}
		if f[1][0] == 'u' {
			ev.Kind = broker.OccupancyUser
		}
		if f[4] != "" {
			ev.Info = []byte(f[4])
		}
		events[i], last = ev, f[0]
	}
	next, err := nextStreamID(last)
	if err != nil {
		return look, err
	}
	look.events = events
	look.ack = occupancyCall{p, occupancyAckScript, p.keys, []string{"", epoch, next}}
	return look, nil
}

// countDrops adds the drops a look at p found, and logs an episode of
// drops: a Warn line at the first look that finds some, an Info line
// with the episode's total at the first look after it that finds the
// stream empty, everything handed over. pollLoop calls it.
func (t *OccupancyTracker) countDrops(p *occupancyPartition, look occupancyLook) {
	r := &t.reading
	if look.dropped > 0 {
		t.dropped.Add(uint64(look.dropped))
		if r.drops[p.n] == 0 {
			t.log.Warn("redis: occupancy transitions dropped: the handler does not keep up",
				"partition", p.n, "dropped", look.dropped, "backlog", t.backlog)
		}
		r.drops[p.n] += uint64(look.dropped)
		return
	}
	if look.length == 0 && r.drops[p.n] > 0 {
		t.log.Info("redis: occupancy handler caught up", "partition", p.n, "dropped", r.drops[p.n])
		r.drops[p.n] = 0
	}
}

// nextStreamID returns the stream ID right after id ("<ms>-<seq>").
func nextStreamID(id string) (string, error) {
	ms, seq, ok := strings.Cut(id, "-")
	n, err := strconv.ParseUint(seq, 10, 64)
	if !ok || err != nil {
		return "", fmt.Errorf("redis: occupancy stream ID %q", id)
	}
	return ms + "-" + strconv.FormatUint(n+1, 10), nil
}

// watchFlight ends the handler call in progress when this node lost the
// reader lease of one of its partitions, or moves the end of its ctx to
// the earliest end of their leases.
func (t *OccupancyTracker) watchFlight() {
	r := &t.reading
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.flight
	if f == nil {
		return
	}
	var until time.Time
	for _, n := range f.parts {
		if !r.owned[n] {
			f.cancel()
			return
		}
		if until.IsZero() || r.until[n].Before(until) {
			until = r.until[n]
		}
	}
	f.timer.Reset(time.Until(until))
}

// deliverLoop hands each batch to the handler, forgets the batch's
// transitions once it returned nil, and waits before the next after an
// error.
func (t *OccupancyTracker) deliverLoop() {
	r := &t.reading
	retry := occupancyRetryMin
	for {
		var b occupancyBatch
		select {
		case <-t.ctx.Done():
			return
		case b = <-r.batches:
		}
		if err := t.handOver(b); err == nil {
			t.forget(b.acks)
			retry = occupancyRetryMin
		} else if !t.stopped() {
			t.e.broker.fails.Add("occupancy handler", slog.LevelWarn, "redis: occupancy handler failed; the events come again", "events", len(b.events), "retry_in", retry, "error", err)
			select {
			case <-t.ctx.Done():
				return
			case <-time.After(retry):
			}
			retry = min(2*retry, occupancyRetryMax)
		}
		r.busy.Store(false)
		signal(t.pollKick)
	}
}

func (t *OccupancyTracker) handOver(b occupancyBatch) error {
	r := &t.reading
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	f := &occupancyFlight{parts: b.parts, cancel: cancel, timer: time.AfterFunc(time.Until(b.until), cancel)}
	defer f.timer.Stop()
	r.mu.Lock()
	r.flight = f
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.flight = nil
		r.mu.Unlock()
	}()
	return t.handler.HandleOccupancy(ctx, b.events)
}

// forget trims what the handler took from the streams. A failure leaves
// them to be handed over again.
func (t *OccupancyTracker) forget(acks []occupancyCall) {
	for i := range acks {
		acks[i].args[0] = t.epoch()
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.e.cfg.IOTimeout)
	defer cancel()
	for i, r := range doAll(ctx, acks) {
		if err := r.Error(); err != nil && !t.stopped() {
			t.logFailure("occupancy ack", acks[i].p, "redis: occupancy: forgetting handed-over transitions failed; they come again", err)
		}
	}
}
