package memory

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/internal/logtest"
)

// failingRuns is a handler whose HandleRuns fails; it counts the calls
// and the pattern runs they carried.
type failingRuns struct {
	countHandler
	calls, patternRuns int
}

func (h *failingRuns) HandleRuns(runs []broker.Run) error {
	h.calls++
	for _, run := range runs {
		if run.Scope != "" {
			h.patternRuns++
		}
	}
	return errors.New("handler failed")
}

// TestHandleRunsErrorLogged: an error from HandleRuns is logged once per
// call, naming the channel and how many publications the call carried,
// and not returned by Publish, PublishMany or PublishManyTo: the
// publications are part of the stream already.
func TestHandleRunsErrorLogged(t *testing.T) {
	logs := &logtest.Recorder{}
	b := newQuietBroker(t, Config{Logger: slog.New(logs)})
	h := &failingRuns{}
	if err := b.Run(h); err != nil {
		t.Fatal(err)
	}
	opts := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute, PatternScope: "ns:"}
	if _, _, err := b.Publish("ns:a", []byte("1"), opts); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	items := []broker.PublishItem{
		{Channel: "ns:a", Data: []byte("2"), Opts: opts},
		{Channel: "ns:a", Data: []byte("3"), Opts: opts},
		{Channel: "ns:b", Data: []byte("4"), Opts: opts},
	}
	b.PublishMany(items)
	b.PublishManyTo(h, items[:1])
	for i, it := range items {
		if it.Err != nil {
			t.Errorf("item %d: %v", i, it.Err)
		}
	}
	if h.calls != 4 || h.patternRuns != 4 {
		t.Fatalf("handler got %d calls with %d pattern runs; want 4 and 4 (one per stretch of a channel)", h.calls, h.patternRuns)
	}
	got := logs.Find(slog.LevelError, "memory: handle runs", nil)
	want := []struct {
		channel string
		pubs    int64
	}{{"ns:a", 1}, {"ns:a", 2}, {"ns:b", 1}, {"ns:a", 1}}
	if len(got) != len(want) {
		t.Fatalf("%d error lines, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.Attr("channel") != want[i].channel || r.Attrs["publications"].Int64() != want[i].pubs || r.Attr("error") != "handler failed" {
			t.Errorf("line %d: %v, want channel %s, %d publications and the error", i, r.Attrs, want[i].channel, want[i].pubs)
		}
	}
}
