package redis

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"
)

// holdLoop keeps Redis in step with what this node holds: it renews the
// leases, starts a new incarnation where one was lost, and applies the
// calls that failed.
func (t *OccupancyTracker) holdLoop() {
	// Twice per third of the lease: a renewal is due every third, and
	// comes at most a sixth late.
	tick := time.NewTicker(min(t.opts.Lease/6, occupancyHoldTick))
	defer tick.Stop()
	for {
		t.syncHolds()
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		case <-t.holdKick:
		}
	}
}

// syncHolds renews the leases that are due first, then starts the
// incarnations that are needed and applies what failed, which may take
// longer.
func (t *OccupancyTracker) syncHolds() {
	now := time.Now()
	var renew, begin []*occupancyPartition
	for _, p := range t.parts {
		p.mu.Lock()
		switch {
		case p.ready && now.Sub(p.renewed) >= t.opts.Lease/3:
			renew = append(renew, p)
		case !p.ready && len(p.held) > 0:
			begin = append(begin, p)
		case !p.ready:
			// Nothing to hold: the next hold starts an incarnation.
			clear(p.dirty)
		}
		p.mu.Unlock()
	}
	t.renew(renew, now)
	for _, p := range begin {
		if t.stopped() {
			return
		}
		if err := t.reassert(p); err != nil && !t.stopped() {
			t.logFailure("occupancy hold", p, "redis: occupancy: holding this node's keys again failed; retrying", err)
		}
	}
	t.applyDirty()
}

// reassert starts a new incarnation in p, unless p is ready, and holds
// under it everything this node holds there. The incarnation it replaces,
// if any, has lost its lease: the reader releases what it held, and the
// holds made here cancel those releases within the delay. Calls made
// meanwhile only mark their members dirty, applied once p is ready.
func (t *OccupancyTracker) reassert(p *occupancyPartition) (err error) {
	p.mu.Lock()
	seen := p.starts
	p.mu.Unlock()
	p.starting.Lock()
	defer p.starting.Unlock()
	p.mu.Lock()
	switch {
	case p.ready:
		p.mu.Unlock()
		return nil
	case p.starts != seen:
		// A start ran while this call waited, and failed: with Redis
		// away, one attempt at a time is enough.
		err := p.startErr
		p.mu.Unlock()
		return err
	}
	p.starts++
	defer func() {
		p.mu.Lock()
		p.startErr = err
		p.mu.Unlock()
	}()
	p.inc = t.node + "." + strconv.FormatUint(t.incs.Add(1), 10)
	inc := p.inc
	members := make([]string, 0, len(p.held))
	var calls []occupancyCall
	for m := range p.held {
		members = append(members, m)
	}
	clear(p.dirty)
	p.mu.Unlock()

	sent := time.Now()
	ctx, cancel := context.WithTimeout(t.ctx, t.e.cfg.IOTimeout)
	err = occupancyCall{p, occupancyLeaseScript, p.keys, []string{t.epoch(), inc, millisString(t.opts.Lease), "1"}}.do(ctx).Error()
	cancel()
	ok := err == nil
	events := false
	for i := 0; ok && i < len(members); i += occupancyPipeline {
		p.mu.Lock()
		calls = calls[:0]
		for _, m := range members[i:min(i+occupancyPipeline, len(members))] {
			if _, held := p.held[m]; held {
				calls = append(calls, t.call(p, m))
			}
		}
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(t.ctx, t.e.cfg.IOTimeout)
		results := doAll(ctx, calls)
		cancel()
		for k, r := range results {
			n, e := r.AsInt64()
			if e != nil || n < 0 {
				ok, err = false, e
			}
			events = events || n > 0
			t.settle(p, calls[k])
		}
	}
	p.mu.Lock()
	if ok && p.inc == inc {
		p.ready, p.renewed = true, sent
	}
	dirty := len(p.dirty) > 0
	p.mu.Unlock()
	if events {
		t.madeIn(p)
	}
	switch {
	case !ok && err == nil:
		return errors.New("redis: occupancy: the new lease ran out at once")
	case !ok:
		return err
	case dirty:
		signal(t.holdKick)
	}
	return nil
}

// settle ends a call of holdLoop, counted in flight by call; a member
// that another call changed meanwhile stays dirty.
func (t *OccupancyTracker) settle(p *occupancyPartition, c occupancyCall) {
	m := c.args[2]
	p.mu.Lock()
	if p.inflight[m]--; p.inflight[m] <= 0 {
		delete(p.inflight, m)
	}
	p.mu.Unlock()
}

// renew renews the leases of parts, pipelined; a lease found gone makes
// its partition start a new incarnation.
func (t *OccupancyTracker) renew(parts []*occupancyPartition, sent time.Time) {
	if len(parts) == 0 {
		return
	}
	calls := make([]occupancyCall, len(parts))
	incs := make([]string, len(parts))
	for i, p := range parts {
		p.mu.Lock()
		incs[i] = p.inc
		p.mu.Unlock()
		calls[i] = occupancyCall{p, occupancyLeaseScript, p.keys, []string{t.epoch(), incs[i], millisString(t.opts.Lease), "0"}}
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.e.cfg.IOTimeout)
	defer cancel()
	lost := false
	for i, r := range doAll(ctx, calls) {
		p := parts[i]
		n, err := r.AsInt64()
		if err != nil {
			if !t.stopped() {
				t.logFailure("occupancy lease", p, "redis: occupancy: renewing the lease failed", err)
			}
			continue
		}
		p.mu.Lock()
		if p.inc == incs[i] {
			if n == 1 {
				p.renewed = sent
			} else {
				p.ready = false
				lost = true
				t.log.Warn("redis: occupancy: this node's lease ran out; holding its keys again", "partition", p.n, "renewed_ago", sent.Sub(p.renewed).Round(time.Millisecond))
			}
		}
		p.mu.Unlock()
	}
	if lost {
		signal(t.holdKick)
	}
}

// applyDirty sends again, pipelined, what the dirty members of ready
// partitions should be, skipping those with a call in flight.
func (t *OccupancyTracker) applyDirty() {
	for {
		var calls []occupancyCall
		for _, p := range t.parts {
			p.mu.Lock()
			if p.ready {
				for m := range p.dirty {
					if len(calls) == occupancyPipeline {
						break
					}
					if p.inflight[m] > 0 {
						continue
					}
					delete(p.dirty, m)
					calls = append(calls, t.call(p, m))
				}
			}
			p.mu.Unlock()
		}
		if len(calls) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(t.ctx, t.e.cfg.IOTimeout)
		results := doAll(ctx, calls)
		cancel()
		failed := false
		for i, r := range results {
			c := calls[i]
			if err := t.applied(c.p, c.args[2], c.args[1], r); err != nil {
				failed = true
				if !t.stopped() {
					t.logFailure("occupancy apply", c.p, "redis: occupancy: applying a hold or release failed; retrying", err)
				}
			}
		}
		if failed || len(calls) < occupancyPipeline || t.stopped() {
			return
		}
	}
}

// logFailure logs a failure of a background call, a few lines a second
// per kind at most.
func (t *OccupancyTracker) logFailure(kind string, p *occupancyPartition, msg string, err error) {
	where := t.e.broker.redisName(p.n % len(t.e.clients))
	t.e.broker.logRepeated(kind, where, slog.LevelWarn, msg, "partition", p.n, "error", err)
}

func millisString(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
