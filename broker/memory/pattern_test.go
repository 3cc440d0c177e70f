package memory

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/internal/logtest"
)

// failingPatterns is a handler whose pattern path fails.
type failingPatterns struct {
	countHandler
	runs, patterns int
}

func (h *failingPatterns) HandleRun(string, []broker.RunPublication) error {
	h.runs++
	return nil
}

func (h *failingPatterns) HandlePatternPublication(string, string, *broker.Publication) error {
	h.patterns++
	return errors.New("pattern handler failed")
}

// TestPatternHandlerErrorLogged: an error from HandlePatternPublication
// is logged, not returned, by Publish, PublishTo and PublishRunTo: the
// publication is part of the stream already.
func TestPatternHandlerErrorLogged(t *testing.T) {
	logs := &logtest.Recorder{}
	b, err := NewBroker(Config{Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h := &failingPatterns{}
	if err := b.Run(h); err != nil {
		t.Fatal(err)
	}
	opts := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute, PatternScope: "ns:"}
	if _, _, err := b.Publish("ns:a", []byte("1"), opts); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if _, _, err := b.PublishTo(h, "ns:a", []byte("2"), opts); err != nil {
		t.Fatalf("PublishTo: %v", err)
	}
	run := []broker.RunItem{{Data: []byte("3"), Opts: opts}, {Data: []byte("4"), Opts: opts}}
	if err := b.PublishRunTo(h, "ns:a", run); err != nil {
		t.Fatalf("PublishRunTo: %v", err)
	}
	if h.pubs() != 2 || h.runs != 1 || h.patterns != 4 {
		t.Fatalf("handler got %d publications, %d runs, %d pattern publications; want 2, 1, 4", h.pubs(), h.runs, h.patterns)
	}
	got := logs.Find(slog.LevelError, "memory: handle pattern publication", map[string]string{"scope": "ns:", "channel": "ns:a"})
	if len(got) != 4 {
		t.Fatalf("%d error lines, want 4", len(got))
	}
	for i, r := range got {
		if want := int64(i + 1); r.Attrs["offset"].Uint64() != uint64(want) {
			t.Errorf("line %d names offset %v, want %d", i, r.Attrs["offset"], want)
		}
	}
}
