package occupancytest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/internal/logtest"
)

// testDrops: a handler that blocks, then fails, while a key makes more
// transitions than the backlog: the oldest are dropped, counted exactly,
// with one Warn line when dropping starts and one Info line with the
// count once the handler caught up; the transitions kept come in order.
// Twice, so that each episode logs its own lines and count; in each, the
// drops come in two bursts.
func testDrops(e *env) {
	if e.o.dropping == nil {
		e.t.Skip("needs trackers with a small backlog (Dropping)")
	}
	const backlog = 8 // even: what is kept starts with an occupied
	log := &logtest.Recorder{}
	tr := e.o.dropping(e.t, backlog, slog.New(log))
	n := &node{tr, int(e.nodes.Add(1))}
	e.t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			e.t.Errorf("Close: %v", err)
		}
	})
	counter, ok := tr.(broker.OccupancyDropCounter)
	if !ok {
		e.t.Fatalf("%T does not count its drops (broker.OccupancyDropCounter)", tr)
	}

	var mu sync.Mutex
	var gate chan struct{} // not nil: handler calls block until it closes, then fail
	entered := make(chan struct{}, 1)
	block := func(ctx context.Context, _ []broker.OccupancyEvent) error {
		mu.Lock()
		g := gate
		mu.Unlock()
		if g == nil {
			return nil
		}
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-g:
		case <-ctx.Done():
		}
		return errors.New("backend down")
	}
	o := defaultOptions
	o.ChannelDelay, o.UserDelay = 0, 0 // each pair is two transitions at once
	e.run(n, o, block)

	k := e.key(user, "drops")
	var total uint64
	for episode, pairs := range []int{20, 9} {
		g := make(chan struct{})
		mu.Lock()
		gate = g
		mu.Unlock()
		kept := len(e.rec.seq(k))
		info := func(i int) []byte { return []byte(fmt.Sprintf("%d.%d", episode, i)) }
		e.hold(n, k, info(0))
		select {
		case <-entered:
		case <-time.After(waitTimeout):
			e.t.Fatal("gave up waiting for the handler's call")
		}
		e.release(n, k)
		// Past the backlog by two, then the rest once those two drops
		// are counted: the drops of an episode span several looks of a
		// tracker that counts them as it reads its backlog.
		const first = backlog/2 + 1
		for i := 1; i < pairs; i++ {
			if i == first {
				waitCount(e.t, "the first drops counted", func() bool { return counter.OccupancyDropped() >= total+2 })
			}
			e.hold(n, k, info(i))
			e.release(n, k)
		}
		dropped := uint64(2*pairs - backlog)
		total += dropped
		waitCount(e.t, "the drops counted", func() bool { return counter.OccupancyDropped() >= total })
		if got := counter.OccupancyDropped(); got != total {
			e.t.Fatalf("episode %d: %d dropped in all, want %d", episode, got, total)
		}
		mu.Lock()
		gate = nil
		mu.Unlock()
		close(g)

		s := e.rec.waitLen(k, kept+backlog)
		e.rec.checkSeq(k)
		if len(s) != kept+backlog {
			e.t.Fatalf("episode %d: %s handed over, want %d more", episode, describe(s), backlog)
		}
		// The last backlog/2 pairs, each occupied then vacated.
		for j, a := range s[kept:] {
			if want := info(pairs - backlog/2 + j/2); string(a.Info) != string(want) {
				e.t.Errorf("episode %d: event %d of those kept has info %q, want %q", episode, j, a.Info, want)
			}
		}
		caughtUp := func() []logtest.Record {
			return log.Find(slog.LevelInfo, "", map[string]string{"dropped": strconv.FormatUint(dropped, 10)})
		}
		waitCount(e.t, "the line of the handler caught up", func() bool { return len(caughtUp()) > 0 })
		warns := log.Find(slog.LevelWarn, "", map[string]string{"backlog": strconv.Itoa(backlog)})
		infos := withAttr(log.Find(slog.LevelInfo, "", nil), "dropped")
		if len(warns) != episode+1 || len(infos) != episode+1 {
			e.t.Fatalf("after episode %d: %d Warn lines of drops starting and %d Info lines of drops ending (%v), want %d of each",
				episode, len(warns), len(infos), infos, episode+1)
		}
	}
	if got := counter.OccupancyDropped(); got != total {
		e.t.Errorf("in the end %d dropped, want %d", got, total)
	}
}

// waitCount waits until cond holds, checking every few milliseconds.
func waitCount(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func withAttr(records []logtest.Record, key string) []logtest.Record {
	var out []logtest.Record
	for _, r := range records {
		if _, ok := r.Attrs[key]; ok {
			out = append(out, r)
		}
	}
	return out
}
