package loadtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// The waits before a dropped connection's attempts to come back, as the
// SDKs space theirs: the first random in [firstWait/2, firstWait], each
// next one twice as long, up to maxWait. The randomness keeps thousands
// of connections that lost one node from dialling the next all in the
// same millisecond; the doubling keeps a node that refuses them from
// being hammered.
const (
	firstWait = 100 * time.Millisecond
	maxWait   = 5 * time.Second
)

// errPoolClosing ends a reconnect that succeeded as the pool finished.
var errPoolClosing = errors.New("loadtest: closed before it was set up again")

// reconnectWait is the wait before attempt n (from 0).
func reconnectWait(n int, rnd func(int64) int64) time.Duration {
	d := maxWait
	if n < 16 {
		d = min(firstWait<<n, maxWait)
	}
	return d/2 + time.Duration(rnd(int64(d/2)+1))
}

// reconnects counts what a pool's reconnects did.
type reconnects struct {
	back, attempts, failedAttempts atomic.Int64
	// firstDrop and lastBack are Unix ns: when the first connection saw
	// its server go, and when the last one was back.
	firstDrop, lastBack atomic.Int64
	latency             histogram
}

// reconnectSnapshot is reconnects at the end, for the parent to merge.
type reconnectSnapshot struct {
	Attempts       int64        `json:"attempts,omitempty"`
	FailedAttempts int64        `json:"failed_attempts,omitempty"`
	FirstDrop      int64        `json:"first_drop,omitempty"`
	LastBack       int64        `json:"last_back,omitempty"`
	Latency        histSnapshot `json:"latency"`
}

func (r *reconnects) snapshot() reconnectSnapshot {
	return reconnectSnapshot{
		Attempts:       r.attempts.Load(),
		FailedAttempts: r.failedAttempts.Load(),
		FirstDrop:      r.firstDrop.Load(),
		LastBack:       r.lastBack.Load(),
		Latency:        r.latency.snapshot(),
	}
}

// reconnect brings c back after its server went away: it waits, dials
// the next URL, connects and subscribes again, and goes on to the next
// URL after each failure until one works or the pool finishes. It
// reports whether c is back.
func (p *pool) reconnect(c *conn) bool {
	down := time.Now()
	_ = c.nc.Close()
	storeMin(&p.rc.firstDrop, down.UnixNano())
	for n := 0; ; n++ {
		if !waitUntil(p.life, time.Now().Add(reconnectWait(n, rand.Int64N))) {
			return false
		}
		c.node = (c.node + 1) % len(p.spec.URLs)
		p.rc.attempts.Add(1)
		err := p.redial(c)
		if err == nil {
			break
		}
		if errors.Is(err, errPoolClosing) || p.life.Err() != nil {
			return false
		}
		p.rc.failedAttempts.Add(1)
		p.errs.add("reconnect: " + errKind(err))
	}
	back := time.Now()
	p.rc.latency.record(int64(back.Sub(down)))
	p.rc.back.Add(1)
	storeMax(&p.rc.lastBack, back.UnixNano())
	return true
}

// redial sets c up again on its node. The new connection is set up
// apart and handed to c under the pool's lock, so that a pool finishing
// meanwhile either closes it or never sees it.
func (p *pool) redial(c *conn) error {
	token, err := p.spec.tokenFor(c.id, time.Now())
	if err != nil {
		return fmt.Errorf("sign token: %w", err)
	}
	fresh := &conn{p: p, typ: c.typ}
	if err := fresh.dial(p.life, p.spec.URLs[c.node], p.dialers[c.id%len(p.dialers)], p.spec.Compression); err != nil {
		return err
	}
	if err := fresh.setup(token, p.spec.channelsFor(c.id)); err != nil {
		fresh.nc.Close()
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		fresh.close()
		return errPoolClosing
	}
	c.nc, c.br, c.rs.z = fresh.nc, fresh.br, fresh.rs.z
	c.rs.traffic.add(fresh.rs.traffic)
	return nil
}

// storeMin keeps the smallest non-zero value in v.
func storeMin(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if (old != 0 && old <= x) || v.CompareAndSwap(old, x) {
			return
		}
	}
}

// storeMax keeps the largest value in v.
func storeMax(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if old >= x || v.CompareAndSwap(old, x) {
			return
		}
	}
}

// reconnectResult sums up the workers' reconnects, nil without
// Reconnect.
func (r *run) reconnectResult(m *merged) *ReconnectResult {
	if !r.cfg.Reconnect {
		return nil
	}
	res := &ReconnectResult{
		FirstWaitMillis: float64(firstWait) / float64(time.Millisecond),
		MaxWaitMillis:   float64(maxWait) / float64(time.Millisecond),
		Dropped:         m.Dropped,
		Reconnected:     m.Reconnected,
		Failed:          m.Dropped - m.Reconnected,
		Attempts:        m.reconnect.Attempts,
		FailedAttempts:  m.reconnect.FailedAttempts,
		Latency:         m.reconnectLat.percentiles(),
	}
	if m.reconnect.FirstDrop > 0 && m.reconnect.LastBack > m.reconnect.FirstDrop {
		res.Seconds = time.Duration(m.reconnect.LastBack - m.reconnect.FirstDrop).Seconds()
	}
	return res
}
