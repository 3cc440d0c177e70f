package redis

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// heldHandler is an EventHandler that holds its first HandleRuns call
// until release, and records what it is handed: per call, the channel
// and length of each run; in one log, each publication ("pub <data>"),
// join, leave ("join <client>") and control message ("control <data>").
type heldHandler struct {
	hold     chan struct{}
	holding  chan struct{} // closed when the first call is held
	once     sync.Once
	released sync.Once

	mu    sync.Mutex
	calls [][]runSize
	log   []string
}

type runSize struct {
	channel string
	n       int
}

func newHeldHandler() *heldHandler {
	return &heldHandler{hold: make(chan struct{}), holding: make(chan struct{})}
}

func (h *heldHandler) HandleRuns(runs []broker.Run) error {
	h.once.Do(func() {
		close(h.holding)
		<-h.hold
	})
	call := make([]runSize, 0, len(runs))
	var log []string
	for _, run := range runs {
		call = append(call, runSize{run.Channel, len(run.Pubs)})
		for _, rp := range run.Pubs {
			log = append(log, "pub "+string(rp.Pub.Data))
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, call)
	h.log = append(h.log, log...)
	return nil
}

func (h *heldHandler) HandleJoin(_ string, info *broker.ClientInfo) error {
	return h.record("join " + info.ClientID)
}

func (h *heldHandler) HandleLeave(_ string, info *broker.ClientInfo) error {
	return h.record("leave " + info.ClientID)
}

func (h *heldHandler) HandleControl(data []byte) error { return h.record("control " + string(data)) }

func (h *heldHandler) record(entry string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, entry)
	return nil
}

// release lets the first call return; later calls do nothing.
func (h *heldHandler) release() { h.released.Do(func() { close(h.hold) }) }

// waitHeld waits until the first HandleRuns call is held.
func (h *heldHandler) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-h.holding:
	case <-time.After(20 * time.Second):
		t.Fatal("gave up waiting for the first HandleRuns call")
	}
}

func (h *heldHandler) logged() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.log)
}

// runHeld returns a running broker with a heldHandler, released before
// the broker is closed (Close waits for the handler).
func runHeld(t *testing.T, cfg Config) (*Broker, *heldHandler) {
	t.Helper()
	b := newEngine(t, cfg).Broker()
	h := newHeldHandler()
	if err := b.Run(h); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(h.release)
	return b, h
}

// TestDeliveriesGrouped: publications queued on a pub/sub connection
// while the handler is busy reach it together, consecutive ones of a
// channel as one run: a burst of 1,000 publications to one channel takes
// fewer than 1,000 HandleRuns calls, each carrying one run, in order.
// The handler holds its first call until publications are waiting.
func TestDeliveriesGrouped(t *testing.T) {
	for _, s := range setups() {
		t.Run(s.name, func(t *testing.T) {
			b, h := runHeld(t, s.cfg(t))
			const ch, n = "burst", 1000
			if err := b.Subscribe(ch); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			opts := broker.PublishOptions{HistorySize: n, HistoryTTL: time.Minute}
			items := make([]broker.PublishItem, n)
			for i := range items {
				items[i] = broker.PublishItem{Channel: ch, Data: []byte(strconv.Itoa(i)), Opts: opts}
			}
			b.PublishMany(items)
			for i, it := range items {
				if it.Err != nil || it.Position.Offset != uint64(i+1) {
					t.Fatalf("item %d: offset %d, error %v", i, it.Position.Offset, it.Err)
				}
			}
			h.waitHeld(t)
			queue := b.shard(ch).queue
			eventually(t, "publications to wait in the queue", func() bool { return len(queue) >= 2 })
			h.release()
			eventually(t, "every publication", func() bool { return h.logged() >= n })

			h.mu.Lock()
			defer h.mu.Unlock()
			for i, entry := range h.log {
				if want := "pub " + strconv.Itoa(i); entry != want {
					t.Fatalf("log entry %d is %q, want %q", i, entry, want)
				}
			}
			longest := 0
			for i, call := range h.calls {
				if len(call) != 1 || call[0].channel != ch {
					t.Fatalf("call %d carried runs %+v, want one run of %s", i, call, ch)
				}
				longest = max(longest, call[0].n)
			}
			if len(h.calls) >= n || longest < 2 {
				t.Errorf("%d publications came in %d calls, the longest run %d; want fewer calls than publications", n, len(h.calls), longest)
			}
			t.Logf("%d publications in %d calls, the longest run %d", n, len(h.calls), longest)
		})
	}
}

// TestDeliveriesFlushedBeforeEvents: publications that reach the handler
// together are handed over before a join, leave or control message that
// followed them, and grouped again after it: the order on the connection
// is the order the handler sees.
func TestDeliveriesFlushedBeforeEvents(t *testing.T) {
	eachRESP(t, func(t *testing.T, resp2 bool) {
		// One pub/sub connection: the channel's and the control
		// messages share its queue.
		b, h := runHeld(t, Config{Addresses: []string{redistest.Start(t).Addr}, ForceRESP2: resp2})
		const ch = "flushed"
		if err := b.Subscribe(ch); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		info := &broker.ClientInfo{ClientID: "c1"}
		steps := []struct {
			entry string
			send  func() error
		}{
			{"pub a", nil}, {"pub b", nil},
			{"join c1", func() error { return b.PublishJoin(ch, info) }},
			{"pub c", nil}, {"pub d", nil},
			{"leave c1", func() error { return b.PublishLeave(ch, info) }},
			{"pub e", nil},
			{"control x", func() error { return b.PublishControl([]byte("x"), "") }},
			{"pub f", nil},
		}
		if _, _, err := b.Publish(ch, []byte("held"), history); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		h.waitHeld(t)
		for _, st := range steps {
			send := st.send
			if send == nil {
				data := []byte(strings.TrimPrefix(st.entry, "pub "))
				send = func() error { _, _, err := b.Publish(ch, data, history); return err }
			}
			if err := send(); err != nil {
				t.Fatalf("%s: %v", st.entry, err)
			}
		}
		// At least: the node's backlog probes, which the dispatcher
		// skips, come through the same queue.
		queue := b.shard(ch).queue
		eventually(t, "the messages to wait in the queue", func() bool { return len(queue) >= len(steps) })
		h.release()
		eventually(t, "every message", func() bool { return h.logged() == 1+len(steps) })

		h.mu.Lock()
		defer h.mu.Unlock()
		want := []string{"pub held"}
		for _, st := range steps {
			want = append(want, st.entry)
		}
		if !slices.Equal(h.log, want) {
			t.Errorf("handled in the order\n%q\nwant\n%q", h.log, want)
		}
		wantCalls := [][]runSize{{{ch, 1}}, {{ch, 2}}, {{ch, 2}}, {{ch, 1}}, {{ch, 1}}}
		if fmt.Sprint(h.calls) != fmt.Sprint(wantCalls) {
			t.Errorf("HandleRuns calls %v, want %v: the publications between two events in one run", h.calls, wantCalls)
		}
	})
}

// collect reads n deliveries and returns their data per channel.
func collect(t *testing.T, ev *events, n int) map[string][]string {
	t.Helper()
	got := make(map[string][]string)
	for range n {
		d := ev.next(t)
		got[d.channel] = append(got[d.channel], string(d.pub.Data))
	}
	return got
}

// TestPublishManyAfterScriptFlush: after SCRIPT FLUSH every call of a
// PublishMany meets NOSCRIPT; the broker sends the script again and each
// item gets its result, published once: offsets go on, a repeated key is
// suppressed, and every publication is delivered once; so does a run of
// publications that share a script call.
func TestPublishManyAfterScriptFlush(t *testing.T) {
	eachRESP(t, func(t *testing.T, resp2 bool) {
		srv := redistest.Start(t)
		b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, ForceRESP2: resp2})
		const c1, c2 = "flush1", "flush2"
		for _, ch := range []string{c1, c2} {
			if err := b.Subscribe(ch); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
		}
		keyed := history
		keyed.IdempotencyKey = "k"
		item := func(ch, data string, opts broker.PublishOptions) broker.PublishItem {
			return broker.PublishItem{Channel: ch, Data: []byte(data), Opts: opts}
		}
		first := []broker.PublishItem{item(c1, "a", history), item(c2, "b", keyed), item(c1, "c", history)}
		b.PublishMany(first)
		scriptLoaded := func() bool {
			t.Helper()
			out, err := srv.Cli("script", "exists", publishScript.sha)
			if err != nil {
				t.Fatalf("SCRIPT EXISTS: %v", err)
			}
			return out == "1"
		}
		if !scriptLoaded() {
			t.Fatal("the publish script is not loaded after the first PublishMany")
		}
		if out, err := srv.Cli("script", "flush"); err != nil || out != "OK" || scriptLoaded() {
			t.Fatalf("SCRIPT FLUSH: %q, %v; the script still loaded: %v", out, err, scriptLoaded())
		}
		second := []broker.PublishItem{
			item(c1, "d", history),
			item(c1, "d2", history), // a run with d
			item(c2, "e", keyed),    // b's key
			item(c2, "f", history),
			item(c1, "g", keyed),
			item(c1, "h", keyed), // g's key
		}
		b.PublishMany(second)
		type result struct {
			offset     uint64
			suppressed bool
		}
		for _, call := range []struct {
			name  string
			items []broker.PublishItem
			want  []result
		}{
			{"before the flush", first, []result{{1, false}, {1, false}, {2, false}}},
			{"after the flush", second, []result{{3, false}, {4, false}, {1, true}, {2, false}, {5, false}, {5, true}}},
		} {
			for i, it := range call.items {
				if it.Err != nil || it.Position.Offset != call.want[i].offset || it.Suppressed != call.want[i].suppressed {
					t.Errorf("%s, item %d (%q): offset %d, suppressed %v, error %v; want %d, %v, nil",
						call.name, i, it.Data, it.Position.Offset, it.Suppressed, it.Err, call.want[i].offset, call.want[i].suppressed)
				}
			}
		}
		if !scriptLoaded() {
			t.Error("the publish script is not loaded again after the second PublishMany")
		}
		for _, ch := range []string{c1, c2} {
			if _, _, err := b.Publish(ch, []byte("marker"), history); err != nil {
				t.Fatalf("Publish: %v", err)
			}
		}
		got := collect(t, ev, 9)
		want := map[string][]string{c1: {"a", "c", "d", "d2", "g", "marker"}, c2: {"b", "f", "marker"}}
		for ch, w := range want {
			if !slices.Equal(got[ch], w) {
				t.Errorf("%s: delivered %q, want %q", ch, got[ch], w)
			}
		}
	})
}

// TestPublishManyRunBytes: a run of large publications into one channel
// is cut at maxRunBytes, each part one script call, and the offsets go on
// across the parts.
func TestPublishManyRunBytes(t *testing.T) {
	srv := redistest.Start(t)
	b, _ := runBroker(t, Config{Addresses: []string{srv.Addr}})
	big := make([]byte, 300<<10)
	items := make([]broker.PublishItem, 10)
	for i := range items {
		items[i] = broker.PublishItem{Channel: "big", Data: big, Opts: history}
	}
	if _, err := srv.Cli("config", "resetstat"); err != nil {
		t.Fatal(err)
	}
	b.PublishMany(items)
	for i, it := range items {
		if it.Err != nil || it.Position.Offset != uint64(i+1) {
			t.Fatalf("item %d: offset %d, %v; want %d", i, it.Position.Offset, it.Err, i+1)
		}
	}
	stats, err := srv.Cli("info", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	// Three of about 300 KiB fit in 1 MiB: four calls for ten (and
	// one more for a call that met NOSCRIPT, were the script not loaded).
	m := regexp.MustCompile(`cmdstat_evalsha:calls=(\d+),.*failed_calls=(\d+)`).FindStringSubmatch(stats)
	if m == nil {
		t.Fatalf("no EVALSHA in %q", stats)
	}
	calls, _ := strconv.Atoi(m[1])
	failed, _ := strconv.Atoi(m[2])
	if calls-failed != 4 {
		t.Errorf("script calls for ten publications of 300 KiB: %d (%d failed), want 4", calls, failed)
	}
}

// TestPublishManyClosed: PublishMany on a closed broker sets ErrClosed on
// every item.
func TestPublishManyClosed(t *testing.T) {
	b, _ := runBroker(t, Config{Addresses: []string{redistest.Start(t).Addr}})
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	items := []broker.PublishItem{{Channel: "a", Data: []byte("1"), Opts: history}, {Channel: "b", Data: []byte("2")}}
	b.PublishMany(items)
	for i, it := range items {
		if !errors.Is(it.Err, ErrClosed) {
			t.Errorf("item %d: %v, want ErrClosed", i, it.Err)
		}
	}
}

// TestPublishManyOneServerDown: with two standalone servers, one down,
// the items of a PublishMany that live on the other are published and
// delivered, and each item of the dead one fails with
// broker.ErrNotAvailable.
func TestPublishManyOneServerDown(t *testing.T) {
	up, down := redistest.Start(t), redistest.Start(t)
	b, ev := runBroker(t, Config{Addresses: []string{up.Addr, down.Addr}, IOTimeout: time.Second})
	chs := spreadChannels(b, "split", 6)
	for _, ch := range chs {
		if err := b.Subscribe(ch); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
	}
	down.Kill()
	var items []broker.PublishItem
	for round := range 2 {
		for _, ch := range chs {
			items = append(items, broker.PublishItem{Channel: ch, Data: fmt.Appendf(nil, "%s/%d", ch, round), Opts: history})
		}
	}
	b.PublishMany(items)
	want := make(map[string][]string)
	live := 0
	for i, it := range items {
		if ci, _ := b.e.locate(it.Channel); ci == 1 {
			if !errors.Is(it.Err, broker.ErrNotAvailable) {
				t.Errorf("item %d (%s) of the dead server: %v, want ErrNotAvailable", i, it.Data, it.Err)
			}
			continue
		}
		live++
		if it.Err != nil || it.Position.Offset != uint64(i/len(chs)+1) {
			t.Errorf("item %d (%s) of the live server: offset %d, error %v; want %d, nil", i, it.Data, it.Position.Offset, it.Err, i/len(chs)+1)
		}
		want[it.Channel] = append(want[it.Channel], string(it.Data))
	}
	if live == 0 || live == len(items) {
		t.Fatalf("%d of %d items live on the server that is up; the test proves nothing", live, len(items))
	}
	got := collect(t, ev, live)
	for ch, w := range want {
		if !slices.Equal(got[ch], w) {
			t.Errorf("%s: delivered %q, want %q", ch, got[ch], w)
		}
	}
}

// TestPublishManyClusterNoScript: on a fresh Cluster no master knows the
// publish script, so every call of the first PublishMany meets NOSCRIPT on
// whichever master its channel lives on; the retry must bring the script
// to each of them, not only to the first, and every item gets its result.
func TestPublishManyClusterNoScript(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	b, _ := runBroker(t, Config{ClusterAddresses: c.Addrs()})
	var items []broker.PublishItem
	for i := range 30 {
		items = append(items, broker.PublishItem{Channel: "noscript" + strconv.Itoa(i%10), Data: []byte(strconv.Itoa(i)), Opts: history})
	}
	b.PublishMany(items)
	for i, it := range items {
		if want := uint64(i/10 + 1); it.Err != nil || it.Position.Offset != want {
			t.Errorf("item %d on %s: offset %d, error %v; want offset %d", i, it.Channel, it.Position.Offset, it.Err, want)
		}
	}
	for _, s := range c.Nodes {
		if out, err := s.Cli("script", "exists", publishScript.sha); err != nil || out != "1" {
			t.Errorf("master %s: SCRIPT EXISTS %q, %v; want the script loaded", s.Addr, out, err)
		}
	}
}
