package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/condwait"
	"github.com/gyrehq/gyre/internal/logtest"
)

// observer counts what a queue tells it.
type observer struct {
	mu        sync.Mutex
	cond      *sync.Cond
	delivered int
	batches   []int
	failed    map[string]int
	dropped   map[string]int
	length    int
}

func newObserver() *observer {
	o := &observer{failed: map[string]int{}, dropped: map[string]int{}}
	o.cond = sync.NewCond(&o.mu)
	return o
}

func (o *observer) Delivered(_ Kind, n int, _ time.Duration) {
	o.mu.Lock()
	o.delivered += n
	o.batches = append(o.batches, n)
	o.cond.Broadcast()
	o.mu.Unlock()
}

func (o *observer) Failed(_ Kind, reason string) {
	o.mu.Lock()
	o.failed[reason]++
	o.cond.Broadcast()
	o.mu.Unlock()
}

func (o *observer) Dropped(_ Kind, reason string, n int) {
	o.mu.Lock()
	o.dropped[reason] += n
	o.cond.Broadcast()
	o.mu.Unlock()
}

func (o *observer) QueueLength(n int) {
	o.mu.Lock()
	o.length = n
	o.cond.Broadcast()
	o.mu.Unlock()
}

// waitFor waits until cond, called with o's lock held, holds.
func (o *observer) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !condwait.Until(o.cond, 10*time.Second, cond) {
		t.Fatalf("observer: no %s", what)
	}
}

func (o *observer) failures(reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed[reason]
}

func (o *observer) drops(reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.dropped[reason]
}

// events makes n events of kind for key, with IDs prefix-0, prefix-1 ...
func events(kind Kind, key, prefix string, n int) []Event {
	out := make([]Event, n)
	for i := range out {
		typ := TypeOccupied
		if kind == KindUser {
			typ = TypeOnline
		}
		out[i] = Event{ID: prefix + "-" + strconv.Itoa(i), Kind: kind, Key: key, Type: typ, TimeMs: int64(1_700_000_000_000 + i)}
	}
	return out
}

// ids lists the IDs of the events of the requests, in order.
func ids(reqs []request) []string {
	var out []string
	for _, r := range reqs {
		for _, e := range r.events {
			out = append(out, e.ID)
		}
	}
	return out
}

func eventIDs(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// testQueue is a queue with short waits, closed when the test ends.
func testQueue(t *testing.T, s Sender, cfg QueueConfig) *Queue {
	t.Helper()
	cfg.Name = "test"
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff, cfg.MaxBackoff = time.Millisecond, 20*time.Millisecond
	}
	q := NewQueue(s, cfg)
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// testCtx bounds a Deliver of a test, so that a queue that never
// delivers fails the test rather than hanging it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// deliverAsync runs Deliver in a goroutine; the channel gets its result.
func deliverAsync(q *Queue, evs []Event) <-chan error {
	ch := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ch <- q.Deliver(ctx, evs)
	}()
	return ch
}

func await(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Deliver did not return")
		return nil
	}
}

func TestQueueDelivers(t *testing.T) {
	protos(t, func(t *testing.T, proto string) {
		b := newBackend(t, proto, nil)
		o := newObserver()
		q := testQueue(t, b.newSender(SenderConfig{}), QueueConfig{MaxBatch: 10, Observer: o})
		// Callers deliver concurrently, channel and user events each; a
		// batch never mixes them and holds at most MaxBatch.
		var wg sync.WaitGroup
		want := map[string][]string{}
		for c := range 4 {
			kind := KindChannel
			if c%2 == 1 {
				kind = KindUser
			}
			key := "key" + strconv.Itoa(c)
			evs := events(kind, key, key, 30)
			want[key] = eventIDs(evs)
			wg.Go(func() {
				for i := 0; i < len(evs); i += 3 {
					if err := q.Deliver(testCtx(t), evs[i:i+3]); err != nil {
						t.Errorf("Deliver: %v", err)
					}
				}
			})
		}
		wg.Wait()
		got := map[string][]string{}
		for _, r := range b.received() {
			if len(r.events) > 10 {
				t.Errorf("batch of %d events", len(r.events))
			}
			for _, e := range r.events {
				if (r.kind == KindChannel) != (e.Channel != "") {
					t.Errorf("%s request with event %+v", r.kind, e)
				}
				got[e.key()] = append(got[e.key()], e.ID)
			}
		}
		for key, w := range want {
			if !slices.Equal(got[key], w) {
				t.Errorf("%s: got %v, want %v", key, got[key], w)
			}
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.delivered != 120 || o.length != 0 || len(o.failed) != 0 || len(o.dropped) != 0 {
			t.Errorf("observer: delivered %d, length %d, failed %v, dropped %v", o.delivered, o.length, o.failed, o.dropped)
		}
		if n := len(q.Recent()); n != 100 {
			t.Errorf("Recent: %d records, want the ring's 100", n)
		}
	})
}

// A batch builds up behind the request in flight: the next request
// carries up to MaxBatch of the events queued meanwhile.
func TestQueueBatches(t *testing.T) {
	b := newBackend(t, "http", nil)
	release := make(chan struct{})
	b.answerFirst(reply{hold: release})
	o := newObserver()
	q := testQueue(t, b.newSender(SenderConfig{}), QueueConfig{MaxBatch: 100, Linger: -1, Observer: o})
	first := deliverAsync(q, events(KindChannel, "a", "a", 1))
	b.waitRequests(1)
	var rest []<-chan error
	for i := range 25 {
		rest = append(rest, deliverAsync(q, events(KindChannel, "b", "b"+strconv.Itoa(i), 10)))
	}
	o.waitFor(t, "250 events queued", func() bool { return o.length == 251 })
	close(release)
	for _, ch := range append(rest, first) {
		if err := await(t, ch); err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	for _, r := range b.received() {
		sizes = append(sizes, len(r.events))
	}
	if !slices.Equal(sizes, []int{1, 100, 100, 50}) {
		t.Errorf("batch sizes %v, want [1 100 100 50]", sizes)
	}
}

func TestBackendDownThenUp(t *testing.T) {
	protos(t, func(t *testing.T, proto string) {
		b := newBackend(t, proto, nil)
		o := newObserver()
		q := testQueue(t, b.newSender(SenderConfig{}), QueueConfig{Observer: o})
		b.stop()
		evs := events(KindChannel, "chat", "ev", 20)
		done := deliverAsync(q, evs)
		o.waitFor(t, "failures", func() bool { return o.failed[FailTransport] >= 3 })
		b.restart()
		if err := await(t, done); err != nil {
			t.Fatal(err)
		}
		if got := ids(b.received()); !slices.Equal(got, eventIDs(evs)) {
			t.Errorf("backend got %v, want %v", got, eventIDs(evs))
		}
		if n := o.drops(DropMaxAge) + o.drops(DropQueueFull); n != 0 {
			t.Errorf("%d events dropped", n)
		}
	})
}

// A request the backend took but failed to answer well is sent again,
// with the same IDs.
func TestResentWithSameIDs(t *testing.T) {
	protos(t, func(t *testing.T, proto string) {
		cases := []struct {
			name   string
			reply  reply
			reason string
		}{
			{"status", reply{status: http.StatusInternalServerError}, FailStatus},
			{"refused", reply{refuse: "try later"}, FailRefused},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				b := newBackend(t, proto, nil)
				b.answerFirst(c.reply)
				o := newObserver()
				q := testQueue(t, b.newSender(SenderConfig{}), QueueConfig{Observer: o})
				evs := events(KindUser, "42", "u", 3)
				if err := q.Deliver(testCtx(t), evs); err != nil {
					t.Fatal(err)
				}
				reqs := b.received()
				if len(reqs) != 2 || !slices.Equal(ids(reqs[:1]), ids(reqs[1:])) || !slices.Equal(ids(reqs[:1]), eventIDs(evs)) {
					t.Errorf("requests %v, want the events twice", reqs)
				}
				if n := o.failures(c.reason); n != 1 {
					t.Errorf("%d failures %s, want 1", n, c.reason)
				}
				rec := q.Recent()
				i := slices.IndexFunc(rec, func(r Record) bool { return r.Outcome == Failed })
				if i < 0 || rec[i].Reason != c.reason || rec[i].Batch != 3 || rec[i].Attempt != 1 || rec[i].Event.ID != "u-0" {
					t.Errorf("Recent: %+v", rec)
				}
				if c.reason == FailRefused && !strings.Contains(rec[i].Error, "try later") {
					t.Errorf("failure record's error %q", rec[i].Error)
				}
			})
		}
	})
}

func TestTimeout(t *testing.T) {
	protos(t, func(t *testing.T, proto string) {
		b := newBackend(t, proto, nil)
		// The first request is answered only once the sender gave up on it.
		never := make(chan struct{})
		b.answerFirst(reply{hold: never})
		o := newObserver()
		q := testQueue(t, b.newSender(SenderConfig{Timeout: 100 * time.Millisecond}), QueueConfig{Observer: o})
		evs := events(KindChannel, "c", "t", 2)
		if err := q.Deliver(testCtx(t), evs); err != nil {
			t.Fatal(err)
		}
		// On a loaded machine a request after the first may time out too:
		// each timeout sends the same events once more.
		n := o.failures(FailTimeout)
		if n < 1 || len(o.failed) != 1 {
			t.Fatalf("failures %v, want timeouts only", o.failed)
		}
		if got, want := ids(b.received()), slices.Repeat(eventIDs(evs), n+1); !slices.Equal(got, want) {
			t.Errorf("backend got %v, want %v", got, want)
		}
	})
}

func TestBadReply(t *testing.T) {
	cases := []struct {
		name   string
		reply  reply
		reason string
	}{
		{"not json", reply{body: "ok"}, FailBadReply},
		{"empty", reply{body: " "}, FailBadReply},
		{"null", reply{body: "null"}, FailBadReply},
		{"array", reply{body: "[]"}, FailBadReply},
		{"string", reply{body: `"{}"`}, FailBadReply},
		{"truncated", reply{body: `{"result":`}, FailBadReply},
		{"error not an object", reply{body: `{"error":"no"}`}, FailBadReply},
		{"too large", reply{body: `{"result":"` + strings.Repeat("x", maxReplySize) + `"}`}, FailBadReply},
		{"not found", reply{status: http.StatusNotFound}, FailStatus},
		{"redirect", reply{status: http.StatusNotModified}, FailStatus},
		{"error", reply{body: `{"error":{"code":1000,"message":"busy","temporary":true}}`}, FailRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, "http", nil)
			b.setAnswer(func(i int, _ request) reply {
				if i == 0 {
					return c.reply
				}
				return reply{body: `{"result":{}}`}
			})
			o := newObserver()
			q := testQueue(t, b.newSender(SenderConfig{}), QueueConfig{Observer: o})
			if err := q.Deliver(testCtx(t), events(KindChannel, "c", "g", 1)); err != nil {
				t.Fatal(err)
			}
			if n := o.failures(c.reason); n != 1 {
				t.Errorf("failures %v, want one %s", o.failed, c.reason)
			}
			if n := len(b.received()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
	}
}

// dropLines are the lines that start and end dropping episodes.
func dropLines(rec *logtest.Recorder) (start, end []logtest.Record) {
	return rec.Find(slog.LevelWarn, "hooks: dropping events", nil), rec.Find(slog.LevelWarn, "hooks: stopped dropping events", nil)
}

func TestQueueFull(t *testing.T) {
	b := newBackend(t, "http", nil)
	release := make(chan struct{})
	b.answerFirst(reply{hold: release})
	o := newObserver()
	rec := &logtest.Recorder{}
	q := testQueue(t, b.newSender(SenderConfig{}), QueueConfig{MaxEvents: 10, Linger: -1, Observer: o, Logger: slog.New(rec)})
	a := events(KindChannel, "c", "a", 5)
	doneA := deliverAsync(q, a)
	b.waitRequests(1)
	// 5 of these fit, 5 are dropped; none of the next fit.
	bEvs := events(KindChannel, "c", "b", 10)
	doneB := deliverAsync(q, bEvs)
	o.waitFor(t, "drops", func() bool { return o.dropped[DropQueueFull] == 5 })
	if err := q.Deliver(testCtx(t), events(KindUser, "u", "c", 3)); err != nil {
		t.Fatalf("Deliver into a full queue: %v", err)
	}
	if n := o.drops(DropQueueFull); n != 8 {
		t.Errorf("%d dropped, want 8", n)
	}
	if start, end := dropLines(rec); len(start) != 1 || len(end) != 0 {
		t.Fatalf("dropping: %d start lines, %d end lines; want 1, 0", len(start), len(end))
	}
	close(release)
	for _, ch := range []<-chan error{doneA, doneB} {
		if err := await(t, ch); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := ids(b.received()), slices.Concat(eventIDs(a), eventIDs(bEvs[:5])); !slices.Equal(got, want) {
		t.Errorf("backend got %v, want %v", got, want)
	}
	start, end := dropLines(rec)
	if len(start) != 1 || len(end) != 1 {
		t.Fatalf("dropping: %d start lines, %d end lines; want 1 each", len(start), len(end))
	}
	if start[0].Attr("reason") != DropQueueFull || end[0].Attr("dropped") != "8" {
		t.Errorf("lines: start %v, end %v", start[0].Attrs, end[0].Attrs)
	}
	dropped := 0
	for _, r := range q.Recent() {
		if r.Outcome == Dropped && r.Reason == DropQueueFull {
			dropped++
		}
	}
	if dropped != 8 {
		t.Errorf("Recent: %d dropped records, want 8", dropped)
	}
}

func TestMaxAge(t *testing.T) {
	b := newBackend(t, "http", nil)
	var mu sync.Mutex
	down := true
	b.setAnswer(func(int, request) reply {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return reply{status: http.StatusServiceUnavailable}
		}
		return reply{}
	})
	setDown := func(d bool) {
		mu.Lock()
		down = d
		mu.Unlock()
	}
	o := newObserver()
	rec := &logtest.Recorder{}
	q := testQueue(t, b.newSender(SenderConfig{}), QueueConfig{MaxAge: 30 * time.Millisecond, Observer: o, Logger: slog.New(rec)})
	// Every Deliver returns once its events are dropped: the caller's
	// log moves on.
	for i := range 3 {
		if err := q.Deliver(testCtx(t), events(KindChannel, "c", "old"+strconv.Itoa(i), 2)); err != nil {
			t.Fatal(err)
		}
	}
	if n := o.drops(DropMaxAge); n != 6 {
		t.Errorf("%d dropped, want 6", n)
	}
	if start, end := dropLines(rec); len(start) != 1 || len(end) != 0 {
		t.Fatalf("dropping: %d start lines, %d end lines; want 1, 0", len(start), len(end))
	}
	if start, _ := dropLines(rec); start[0].Attr("reason") != DropMaxAge || start[0].Attr("proxy") != "test" {
		t.Errorf("start line %v", start[0].Attrs)
	}
	setDown(false)
	// On a loaded machine an event may pass its age in the back-off
	// before the backend is asked again: deliver until one gets through.
	for i := 0; ; i++ {
		if err := q.Deliver(testCtx(t), events(KindChannel, "c", "new"+strconv.Itoa(i), 1)); err != nil {
			t.Fatal(err)
		}
		o.mu.Lock()
		delivered := o.delivered
		o.mu.Unlock()
		if delivered > 0 {
			break
		}
		if i == 100 {
			t.Fatal("nothing delivered once the backend is back")
		}
	}
	dropped := o.drops(DropMaxAge)
	start, end := dropLines(rec)
	if len(start) != 1 || len(end) != 1 || end[0].Attr("dropped") != strconv.Itoa(dropped) {
		t.Fatalf("dropping: start %v, end %v; %d dropped", start, end, dropped)
	}
	// A second episode has lines of its own.
	setDown(true)
	if err := q.Deliver(testCtx(t), events(KindUser, "u", "again", 1)); err != nil {
		t.Fatal(err)
	}
	if start, _ := dropLines(rec); len(start) != 2 {
		t.Errorf("%d start lines after a second episode, want 2", len(start))
	}
	if n := o.drops(DropMaxAge); n != dropped+1 {
		t.Errorf("%d dropped, want %d", n, dropped+1)
	}
	for _, r := range b.received() {
		for _, e := range r.events {
			if strings.HasPrefix(e.ID, "old") && len(r.events) != 2 {
				t.Errorf("dropped events were sent with later ones: %v", r.events)
			}
		}
	}
}

// Per key, the requests the backend accepted carry the events in the
// order they were delivered, whatever fails on the way.
func TestOrderUnderRetries(t *testing.T) {
	protos(t, func(t *testing.T, proto string) {
		b := newBackend(t, proto, nil)
		// Every third request fails after the backend read it.
		b.setAnswer(func(i int, _ request) reply {
			switch i % 3 {
			case 1:
				return reply{status: http.StatusBadGateway}
			case 2:
				return reply{refuse: "later"}
			}
			return reply{}
		})
		o := newObserver()
		q := testQueue(t, b.newSender(SenderConfig{}), QueueConfig{MaxBatch: 7, Observer: o})
		var wg sync.WaitGroup
		const keys, perKey = 5, 40
		for k := range keys {
			key := "k" + strconv.Itoa(k)
			evs := events(KindChannel, key, key, perKey)
			wg.Go(func() {
				for i := 0; i < perKey; {
					n := min(1+i%4, perKey-i)
					if err := q.Deliver(testCtx(t), evs[i:i+n]); err != nil {
						t.Errorf("Deliver: %v", err)
					}
					i += n
				}
			})
		}
		wg.Wait()
		accepted := map[string][]string{}
		reqs := b.received()
		for i, r := range reqs {
			if i%3 != 0 {
				continue
			}
			for _, e := range r.events {
				accepted[e.Channel] = append(accepted[e.Channel], e.ID)
			}
		}
		for k := range keys {
			key := "k" + strconv.Itoa(k)
			if want := eventIDs(events(KindChannel, key, key, perKey)); !slices.Equal(accepted[key], want) {
				t.Errorf("%s: accepted %v, want %v", key, accepted[key], want)
			}
		}
		if o.failures(FailRefused) == 0 || (proto == "http" && o.failures(FailStatus) == 0) {
			t.Errorf("failures %v: the backend did not fail as planned", o.failed)
		}
	})
}

func TestDeliverCancelled(t *testing.T) {
	b := newBackend(t, "http", nil)
	release := make(chan struct{})
	b.answerFirst(reply{hold: release})
	q := testQueue(t, b.newSender(SenderConfig{}), QueueConfig{Linger: -1})
	first := deliverAsync(q, events(KindChannel, "c", "a", 1))
	b.waitRequests(1)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- q.Deliver(ctx, events(KindChannel, "c", "gone", 3)) }()
	kept := deliverAsync(q, events(KindChannel, "c", "kept", 1))
	for q.Len() != 5 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := await(t, gaveUp); !errors.Is(err, context.Canceled) {
		t.Fatalf("Deliver: %v, want context.Canceled", err)
	}
	if n := q.Len(); n != 2 {
		t.Errorf("Len %d after a Deliver gave up, want 2", n)
	}
	close(release)
	for _, ch := range []<-chan error{first, kept} {
		if err := await(t, ch); err != nil {
			t.Fatal(err)
		}
	}
	if got := ids(b.received()); !slices.Equal(got, []string{"a-0", "kept-0"}) {
		t.Errorf("backend got %v", got)
	}
}

func TestClose(t *testing.T) {
	b := newBackend(t, "grpc", nil)
	never := make(chan struct{})
	b.setAnswer(func(int, request) reply { return reply{hold: never} })
	q := NewQueue(b.newSender(SenderConfig{Timeout: time.Minute}), QueueConfig{Name: "test"})
	waiting := deliverAsync(q, events(KindChannel, "c", "a", 2))
	b.waitRequests(1)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if err := await(t, waiting); !errors.Is(err, ErrClosed) {
		t.Errorf("waiting Deliver: %v, want ErrClosed", err)
	}
	if err := q.Deliver(testCtx(t), events(KindChannel, "c", "b", 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Deliver after Close: %v, want ErrClosed", err)
	}
	if err := q.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestDeliverRefusesUnknownKind(t *testing.T) {
	q := testQueue(t, senderFunc(func(context.Context, []Event) error { return nil }), QueueConfig{})
	err := q.Deliver(testCtx(t), []Event{{ID: "x", Kind: 9, Key: "k", Type: "t"}})
	if err == nil || q.Len() != 0 {
		t.Errorf("Deliver of an unknown kind: %v, Len %d", err, q.Len())
	}
}

type senderFunc func(context.Context, []Event) error

func (f senderFunc) Send(ctx context.Context, evs []Event) error { return f(ctx, evs) }

func TestBackoffDelay(t *testing.T) {
	q := &Queue{minBackoff: 100 * time.Millisecond, maxBackoff: time.Second}
	for failures, hi := range map[int]time.Duration{
		1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond,
		5: time.Second, 40: time.Second, 1000: time.Second,
	} {
		for range 100 {
			if d := q.delay(failures); d < hi/2 || d > hi {
				t.Fatalf("delay after %d failures %v, want within [%v, %v]", failures, d, hi/2, hi)
			}
		}
	}
}

func TestRing(t *testing.T) {
	r := newRing(3)
	for i := range 5 {
		r.addEvent(Record{Event: Event{ID: fmt.Sprint("e", i)}})
		if i%2 == 0 {
			r.addFailure(Record{Event: Event{ID: fmt.Sprint("f", i)}})
		}
	}
	var got []string
	for _, rec := range r.records() {
		got = append(got, rec.Event.ID)
	}
	if want := []string{"f4", "e4", "e3", "f2", "e2", "f0"}; !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
}

// Events whose Deliver gave up while they were in flight are not sent
// again when that request fails: their caller hands them over again.
func TestDeliverCancelledInFlight(t *testing.T) {
	b := newBackend(t, "http", nil)
	release := make(chan struct{})
	b.answerFirst(reply{hold: release, status: http.StatusServiceUnavailable})
	q := testQueue(t, b.newSender(SenderConfig{Timeout: time.Minute}), QueueConfig{Linger: -1})
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- q.Deliver(ctx, events(KindChannel, "c", "gone", 2)) }()
	b.waitRequests(1)
	cancel()
	if err := await(t, gaveUp); !errors.Is(err, context.Canceled) {
		t.Fatalf("Deliver: %v, want context.Canceled", err)
	}
	kept := deliverAsync(q, events(KindChannel, "c", "kept", 1))
	for q.Len() != 3 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := await(t, kept); err != nil {
		t.Fatal(err)
	}
	if got := ids(b.received()); !slices.Equal(got, []string{"gone-0", "gone-1", "kept-0"}) {
		t.Errorf("backend got %v", got)
	}
}

// Events that pass their age queued behind a slow request are dropped
// rather than sent late; the slow request's own events, in flight, count
// as delivered.
func TestMaxAgeBehindSlowRequest(t *testing.T) {
	b := newBackend(t, "http", nil)
	release := make(chan struct{})
	b.answerFirst(reply{hold: release})
	o := newObserver()
	q := testQueue(t, b.newSender(SenderConfig{Timeout: time.Minute}), QueueConfig{MaxAge: 20 * time.Millisecond, Linger: -1, Observer: o})
	first := deliverAsync(q, events(KindChannel, "c", "slow", 1))
	b.waitRequests(1)
	late := deliverAsync(q, events(KindChannel, "c", "late", 2))
	for q.Len() != 3 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(30 * time.Millisecond) // past MaxAge of every queued event
	close(release)
	for _, ch := range []<-chan error{first, late} {
		if err := await(t, ch); err != nil {
			t.Fatal(err)
		}
	}
	if got := ids(b.received()); !slices.Equal(got, []string{"slow-0"}) {
		t.Errorf("backend got %v", got)
	}
	if n := o.drops(DropMaxAge); n != 2 {
		t.Errorf("%d dropped, want 2", n)
	}
}

// Events pass their age during a long back-off, not only when it ends:
// Deliver returns at MaxAge, and the caller's log moves on.
func TestMaxAgeDuringBackoff(t *testing.T) {
	b := newBackend(t, "http", nil)
	b.setAnswer(func(int, request) reply { return reply{status: http.StatusServiceUnavailable} })
	o := newObserver()
	q := testQueue(t, b.newSender(SenderConfig{}), QueueConfig{
		MaxAge: 20 * time.Millisecond, MinBackoff: time.Hour, MaxBackoff: time.Hour, Observer: o,
	})
	if err := q.Deliver(testCtx(t), events(KindUser, "u", "a", 2)); err != nil {
		t.Fatal(err)
	}
	// Queued during the back-off, these too are dropped in it.
	if err := q.Deliver(testCtx(t), events(KindUser, "u", "b", 1)); err != nil {
		t.Fatal(err)
	}
	if n := o.drops(DropMaxAge); n != 3 {
		t.Errorf("%d dropped, want 3", n)
	}
	if n := len(b.received()); n != 1 {
		t.Errorf("%d requests, want 1 (then the back-off)", n)
	}
}
