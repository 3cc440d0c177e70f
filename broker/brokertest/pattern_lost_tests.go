package brokertest

import (
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// testPatternScopeLost: a publisher keeps publishing into a channel of a
// subscribed scope while the broker's connections are broken
// (PatternScopeInterrupt). The scope is reported lost, and on the pattern
// path every acknowledged publication is either handed over or followed
// by a loss report of the scope before any publication after it: the
// handler can tell every gap, and nothing after a gap reaches it first.
func testPatternScopeLost(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	if e.opts.interruptPatterns == nil {
		t.Skip("the broker declared no way to lose its scope subscriptions (PatternScopeInterrupt)")
	}
	scope, ch := e.scope(), uniqueChannel(t)
	p := publishNumbered(e, ch, scoped(withHistory, scope))
	e.rec.waitUntil(t, "pattern deliveries", func() bool { return len(e.rec.patterns[ch]) > 0 })
	e.opts.interruptPatterns(t)
	e.rec.waitUntil(t, "the scope reported lost", func() bool { return e.rec.lossesOf(scope) > 0 })
	after := p.last()
	e.rec.waitUntil(t, "pattern deliveries after the loss", func() bool {
		ps := e.rec.patterns[ch]
		return len(ps) > 0 && dataNumber(t, ps[len(ps)-1].pub.Data) > after
	})
	acked := p.stop()
	last := slices.Max(acked)
	e.rec.waitUntil(t, "the last publication", func() bool {
		ps := e.rec.patterns[ch]
		return slices.ContainsFunc(ps, func(d patternDelivery) bool { return dataNumber(t, d.pub.Data) == last })
	})
	e.rec.checkGapsReported(t, ch, scope, acked)
}

// numbered is a publisher publishing 1, 2, 3... into one channel, one
// after the other, until stopped.
type numbered struct {
	stopc chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	acked []int
	begun int
}

func publishNumbered(e *brokerEnv, ch string, opts broker.PublishOptions) *numbered {
	p := &numbered{stopc: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for n := 1; ; n++ {
			select {
			case <-p.stopc:
				return
			default:
			}
			p.mu.Lock()
			p.begun = n
			p.mu.Unlock()
			_, _, err := e.b.Publish(ch, []byte(strconv.Itoa(n)), opts)
			switch {
			case err == nil:
				p.mu.Lock()
				p.acked = append(p.acked, n)
				p.mu.Unlock()
			case !errors.Is(err, broker.ErrNotAvailable):
				e.t.Errorf("Publish: %v", err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	e.t.Cleanup(func() { p.stop() })
	return p
}

// last returns the number of the last publish begun.
func (p *numbered) last() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.begun
}

// stop stops publishing and returns the acknowledged numbers.
func (p *numbered) stop() []int {
	select {
	case <-p.stopc:
	default:
		close(p.stopc)
	}
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.acked)
}

func dataNumber(t testing.TB, data []byte) int {
	n, err := strconv.Atoi(string(data))
	if err != nil {
		t.Fatalf("unexpected publication %q", data)
	}
	return n
}

// lossesOf counts the reports naming scope; r.mu must be held.
func (r *recorder) lossesOf(scope string) int {
	n := 0
	for _, ev := range r.patternLog {
		if slices.Contains(ev.lost, scope) {
			n++
		}
	}
	return n
}

// checkGapsReported walks the pattern path of ch: each publication handed
// over comes after the one before it, and an acknowledged publication
// between two handed over is missing only with a loss report of scope
// between them.
func (r *recorder) checkGapsReported(t *testing.T, ch, scope string, acked []int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, reported := 0, false
	for _, ev := range r.patternLog {
		if ev.lost != nil {
			reported = reported || slices.Contains(ev.lost, scope)
			continue
		}
		if ev.channel != ch {
			continue
		}
		n := dataNumber(t, []byte(ev.data))
		if prev > 0 && !reported {
			if n <= prev {
				t.Errorf("%d handed over after %d", n, prev)
			}
			for _, a := range acked {
				if a > prev && a < n {
					t.Errorf("acknowledged publication %d never handed over, and %d came after it without a loss report", a, n)
					break
				}
			}
		}
		prev, reported = n, false
	}
}
