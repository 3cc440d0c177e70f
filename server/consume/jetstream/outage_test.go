package jetstream_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/consume/jetstream/jetstreamtest"
)

// TestServerRestart stops nats-server while the consumer works through a
// backlog and starts it again with its store, killed (a crash: the
// server may forget acknowledgements it had, and deliver again) or
// stopped cleanly: every message runs, the first runs in order.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		stop func(p *jetstreamtest.Place)
	}{
		{"kill", func(p *jetstreamtest.Place) { p.Server.Kill() }},
		{"stop", func(p *jetstreamtest.Place) { p.Server.Stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := source.OpenPlace(t, true)
			const n = 5000
			p.Produce(t, 0, publishMsgs("restart", 0, n)...)
			node := newTestNode(t)
			c, _ := p.Consumer("restart", "restart", false)
			r := node.start(t, c)
			waitFor(t, "a fifth of the messages run", func() bool { return len(node.rec.published("restart")) >= n/5 })
			tc.stop(p)
			at := len(node.rec.published("restart"))
			time.Sleep(200 * time.Millisecond)
			p.Server.Restart(t)
			waitFor(t, "every message run", func() bool { return uniqueCount(node.rec.published("restart")) >= n })
			pubs := node.rec.published("restart")
			checkFirstRunsInOrder(t, pubs, n)
			waitFor(t, "lag 0", func() bool { return r.snapshot().Lag == 0 })
			if s := r.snapshot(); !s.Connected || s.SourceErrors == 0 {
				t.Fatalf("snapshot %+v: want connected, the outage counted", s)
			}
			t.Logf("restarted after %d runs; %d runs of %d messages", at, len(pubs), n)
		})
	}
}

// TestNATSDownAtStart: a consumer whose NATS is not there waits for it.
func TestNATSDownAtStart(t *testing.T) {
	t.Parallel()
	p := source.OpenPlace(t, true)
	p.Produce(t, 0, publishMsgs("down", 0, 10)...)
	p.Server.Kill()
	node := newTestNode(t)
	c, _ := p.Consumer("down", "down", false)
	r := node.start(t, c)
	waitFor(t, "the source failure reported", func() bool { s := r.snapshot(); return s.SourceErrors > 0 && !s.Connected })
	p.Server.Restart(t)
	waitFor(t, "every message run", func() bool { return len(node.rec.published("down")) >= 10 })
	checkOrder(t, node.rec.published("down"), 10)
	if s := r.snapshot(); !s.Running || !s.Connected {
		t.Fatalf("snapshot %+v: want running and connected", s)
	}
}

func uniqueCount(pubs []pub) int {
	seen := map[string]bool{}
	for _, p := range pubs {
		seen[p.Data] = true
	}
	return len(seen)
}

// checkFirstRunsInOrder fails t unless the first run of each message
// comes in order: messages run again (at least once) may come later.
func checkFirstRunsInOrder(t testing.TB, pubs []pub, n int) {
	t.Helper()
	seen := map[string]bool{}
	next := 0
	for i, p := range pubs {
		if seen[p.Data] {
			continue
		}
		seen[p.Data] = true
		if w := fmt.Sprintf(`{"n":%d}`, next); p.Data != w {
			t.Fatalf("run %d is %s, want %s (first runs out of order)", i, p.Data, w)
		}
		next++
	}
	if next != n {
		t.Fatalf("%d messages run, want %d", next, n)
	}
}
