package memory

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// countHandler counts publications (of runs without a scope) and
// returns err from every call.
type countHandler struct {
	n   atomic.Int64
	err error
}

func (h *countHandler) HandleRuns(runs []broker.Run) error {
	for _, run := range runs {
		if run.Scope == "" {
			h.n.Add(int64(len(run.Pubs)))
		}
	}
	return h.err
}
func (h *countHandler) HandleJoin(string, *broker.ClientInfo) error  { return h.err }
func (h *countHandler) HandleLeave(string, *broker.ClientInfo) error { return h.err }
func (h *countHandler) HandleControl([]byte) error                   { return h.err }
func (h *countHandler) pubs() int                                    { return int(h.n.Load()) }

// sweepGoroutines counts goroutines started by the constructors of this
// package (matched by their "created by" line, present whether or not the
// goroutine has begun to run).
func sweepGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "created by github.com/gyrehq/gyre/broker/memory.(*sweeper).startSweep")
}

func TestCloseStopsGoroutines(t *testing.T) {
	before := sweepGoroutines()
	var closers []func() error
	for range 3 {
		b, err := NewBroker(Config{SweepInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		pm, err := NewPresenceManager(PresenceConfig{SweepInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		mb, err := NewMapBroker(MapConfig{SweepInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, b.Close, pm.Close, mb.Close)
	}
	if n := sweepGoroutines() - before; n != 9 {
		t.Fatalf("%d sweep goroutines running, want 9", n)
	}
	for _, c := range closers {
		if err := c(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	// Close waits for each loop to signal that it is done; the goroutine
	// itself may need a moment more to exit.
	deadline := time.Now().Add(10 * time.Second)
	for sweepGoroutines() != before {
		if time.Now().After(deadline) {
			t.Fatalf("%d sweep goroutines still running after Close", sweepGoroutines()-before)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestClosed(t *testing.T) {
	b, err := NewBroker(Config{})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := NewPresenceManager(PresenceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	mb, err := NewMapBroker(MapConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []func() error{b.Close, b.Close, pm.Close, pm.Close, mb.Close, mb.Close} {
		if err := c(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	publishManyTo := func(items []broker.PublishItem) { b.PublishManyTo(&countHandler{}, items) }
	for name, call := range map[string]func() error{
		"Run":            func() error { return b.Run(&countHandler{}) },
		"Subscribe":      func() error { return b.Subscribe("ch") },
		"Unsubscribe":    func() error { return b.Unsubscribe("ch") },
		"Publish":        func() error { _, _, err := b.Publish("ch", nil, broker.PublishOptions{}); return err },
		"PublishMany":    func() error { return closedItemsErr(b.PublishMany) },
		"PublishManyTo":  func() error { return closedItemsErr(publishManyTo) },
		"PublishJoin":    func() error { return b.PublishJoin("ch", &broker.ClientInfo{}) },
		"PublishLeave":   func() error { return b.PublishLeave("ch", &broker.ClientInfo{}) },
		"PublishControl": func() error { return b.PublishControl(nil, "") },
		"History":        func() error { _, _, err := b.History("ch", broker.HistoryOptions{}); return err },
		"RemoveHistory":  func() error { return b.RemoveHistory("ch") },
		"Presence":       func() error { _, err := pm.Presence("ch"); return err },
		"PresenceStats":  func() error { _, err := pm.PresenceStats("ch"); return err },
		"AddPresence":    func() error { return pm.AddPresence("ch", "c", nil) },
		"RemovePresence": func() error { return pm.RemovePresence("ch", "c", "u") },
		"MapRun":         func() error { return mb.Run(&countHandler{}) },
		"MapSubscribe":   func() error { return mb.Subscribe("ch") },
		"MapUnsubscribe": func() error { return mb.Unsubscribe("ch") },
		"MapPublish": func() error {
			_, err := mb.Publish(t.Context(), "ch", "k", broker.MapPublishOptions{Map: mapPersistent})
			return err
		},
		"MapRemove": func() error {
			_, err := mb.Remove(t.Context(), "ch", "k", broker.MapRemoveOptions{Map: mapPersistent})
			return err
		},
		"MapReadState": func() error {
			_, err := mb.ReadState(t.Context(), "ch", broker.MapStateOptions{Map: mapPersistent})
			return err
		},
		"MapReadStream": func() error {
			_, err := mb.ReadStream(t.Context(), "ch", broker.MapStreamOptions{Map: mapPersistent})
			return err
		},
		"MapStats": func() error { _, err := mb.Stats(t.Context(), "ch"); return err },
		"MapClear": func() error { return mb.Clear(t.Context(), "ch") },
	} {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// closedItemsErr publishes items of two channels with publish and
// returns ErrClosed when every item has it as its error, else the first
// other result.
func closedItemsErr(publish func([]broker.PublishItem)) error {
	items := []broker.PublishItem{{Channel: "ch"}, {Channel: "other"}}
	publish(items)
	for _, it := range items {
		if !errors.Is(it.Err, ErrClosed) {
			return fmt.Errorf("item of %s: %v", it.Channel, it.Err)
		}
	}
	return ErrClosed
}

func TestRun(t *testing.T) {
	b := newQuietBroker(t, Config{})
	// Before Run, publishes are stored without delivery.
	mustPublish(t, b, "ch", broker.PublishOptions{HistorySize: 1, HistoryTTL: time.Minute})
	if err := b.Run(nil); err == nil {
		t.Error("Run(nil) succeeded")
	}
	h := &countHandler{}
	if err := b.Run(h); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := b.Run(h); err == nil {
		t.Error("second Run succeeded")
	}
	if sp := mustPublish(t, b, "ch", broker.PublishOptions{HistorySize: 1, HistoryTTL: time.Minute}); sp.Offset != 2 || h.pubs() != 1 {
		t.Errorf("after Run: offset %d, %d delivered; want 2, 1", sp.Offset, h.pubs())
	}
}

// TestHandlerErrors: Publish logs a handler error (the publication is
// stored already); join, leave and control return it.
func TestHandlerErrors(t *testing.T) {
	var logs syncBuffer
	b := newQuietBroker(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	boom := errors.New("boom")
	if err := b.Run(&countHandler{err: boom}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Publish("ch", []byte("m"), broker.PublishOptions{}); err != nil {
		t.Errorf("Publish returned the handler's error: %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "boom") || !strings.Contains(out, "channel=ch") {
		t.Errorf("log = %q, want the handler error with its channel", out)
	}
	for name, call := range map[string]func() error{
		"PublishJoin":    func() error { return b.PublishJoin("ch", &broker.ClientInfo{}) },
		"PublishLeave":   func() error { return b.PublishLeave("ch", &broker.ClientInfo{}) },
		"PublishControl": func() error { return b.PublishControl([]byte("x"), "") },
	} {
		if err := call(); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "memory: ") {
			t.Errorf("%s: %v, want the handler's error wrapped", name, err)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestEpochs: epochs are short, and streams get their own.
func TestEpochs(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		e := newEpoch()
		if len(e) != 8 || seen[e] {
			t.Fatalf("epoch %q: length %d, seen before %v", e, len(e), seen[e])
		}
		seen[e] = true
	}
}

// TestPublishManyTo: PublishManyTo hands the publications to the handler
// it is given, not to Run's, and stores them like PublishMany.
func TestPublishManyTo(t *testing.T) {
	b := newQuietBroker(t, Config{})
	runH, toH := &countHandler{}, &countHandler{}
	if err := b.Run(runH); err != nil {
		t.Fatal(err)
	}
	opts := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute}
	items := []broker.PublishItem{{Channel: "ch", Data: []byte(`1`), Opts: opts}, {Channel: "ch", Data: []byte(`2`), Opts: opts}}
	b.PublishManyTo(toH, items)
	if items[0].Err != nil || items[1].Err != nil {
		t.Fatalf("PublishManyTo: %v, %v", items[0].Err, items[1].Err)
	}
	if items[1].Position.Offset != 2 || toH.pubs() != 2 || runH.pubs() != 0 {
		t.Fatalf("offset %d, PublishManyTo's handler got %d publications and Run's %d, want 2, 2, 0", items[1].Position.Offset, toH.pubs(), runH.pubs())
	}
	if sp := mustPublish(t, b, "ch", opts); sp.Offset != 3 || runH.pubs() != 1 || toH.pubs() != 2 {
		t.Fatalf("Publish after PublishManyTo: offset %d, Run's handler %d, PublishManyTo's %d; want 3, 1, 2", sp.Offset, runH.pubs(), toH.pubs())
	}
}

// runRecorder records the HandleRuns calls PublishManyTo makes, copying
// what the broker reuses once the call returns.
type runRecorder struct{ calls [][]broker.Run }

func (r *runRecorder) HandleRuns(runs []broker.Run) error {
	call := make([]broker.Run, len(runs))
	for i, run := range runs {
		run.Pubs = slices.Clone(run.Pubs)
		call[i] = run
	}
	r.calls = append(r.calls, call)
	return nil
}

// TestPublishManyToDelta: each stretch of one channel is handed over as
// one run without the suppressed items; each publication's delta base is
// the one before it in the stream, across stretches and calls.
func TestPublishManyToDelta(t *testing.T) {
	b, err := NewBroker(Config{})
	if err != nil {
		t.Fatal(err)
	}
	runH := &countHandler{}
	if err := b.Run(runH); err != nil {
		t.Fatal(err)
	}
	opts := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute, UseDelta: true}
	keyed := opts
	keyed.IdempotencyKey = "k"
	if _, _, err := b.Publish("ch", []byte(`0`), opts); err != nil {
		t.Fatal(err)
	}
	items := []broker.PublishItem{
		{Channel: "ch", Data: []byte(`1`), Opts: keyed},
		{Channel: "ch", Data: []byte(`2`), Opts: opts},
		{Channel: "ch", Data: []byte(`3`), Opts: keyed},
		{Channel: "other", Data: []byte(`o`), Opts: opts},
		{Channel: "ch", Data: []byte(`4`), Opts: opts},
	}
	rec := &runRecorder{}
	b.PublishManyTo(rec, items)
	wantOffsets := []uint64{2, 3, 2, 1, 4}
	for i, it := range items {
		if it.Err != nil || it.Position.Offset != wantOffsets[i] || it.Suppressed != (i == 2) {
			t.Fatalf("item %d: offset %d, suppressed %v, error %v; want %d, %v, nil", i, it.Position.Offset, it.Suppressed, it.Err, wantOffsets[i], i == 2)
		}
	}
	if len(rec.calls) != 3 || runH.pubs() != 1 {
		t.Fatalf("%d HandleRuns calls, Run's handler got %d publications; want 3 (one per stretch) and only the Publish", len(rec.calls), runH.pubs())
	}
	var got []broker.RunPublication
	for _, call := range []int{0, 2} {
		if len(rec.calls[call]) != 1 || rec.calls[call][0].Channel != "ch" || rec.calls[call][0].Scope != "" {
			t.Fatalf("call %d: %+v, want one run of ch", call, rec.calls[call])
		}
		got = append(got, rec.calls[call][0].Pubs...)
	}
	wantData := []string{"1", "2", "4"}
	wantPrev := []string{"0", "1", "2"}
	if len(got) != len(wantData) {
		t.Fatalf("%d publications of ch handed over, want %d", len(got), len(wantData))
	}
	for i, rp := range got {
		if string(rp.Pub.Data) != wantData[i] || !rp.Delta || rp.Prev == nil || string(rp.Prev.Data) != wantPrev[i] {
			t.Fatalf("publication %d: data %s, delta %v, prev %v; want %s after %s", i, rp.Pub.Data, rp.Delta, rp.Prev, wantData[i], wantPrev[i])
		}
		if rp.Position.Offset != rp.Pub.Offset || rp.Position.Epoch != items[0].Position.Epoch {
			t.Errorf("publication %d: position %+v, offset %d", i, rp.Position, rp.Pub.Offset)
		}
	}
	pubs, sp, err := b.History("ch", broker.HistoryOptions{Filter: broker.HistoryFilter{Limit: -1}})
	if err != nil || sp.Offset != 4 || len(pubs) != 4 {
		t.Fatalf("history: %d publications, top %d, error %v; want 4, 4", len(pubs), sp.Offset, err)
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b.PublishManyTo(rec, items)
	for i, it := range items {
		if !errors.Is(it.Err, ErrClosed) {
			t.Errorf("item %d of PublishManyTo after Close: %v, want ErrClosed", i, it.Err)
		}
	}
	if len(rec.calls) != 3 {
		t.Errorf("%d HandleRuns calls after Close, want none more", len(rec.calls)-3)
	}
}
