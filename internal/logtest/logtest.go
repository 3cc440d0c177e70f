// Package logtest records what a component logs, for tests that check that
// a log line was written, with which attributes.
package logtest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// Record is one log line as a test reads it.
type Record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]slog.Value
}

// Attr returns the value of the attribute key as a string, "" when the
// record has none.
func (r Record) Attr(key string) string {
	v, ok := r.Attrs[key]
	if !ok {
		return ""
	}
	return v.String()
}

// Count is how many events the line stands for: the not_logged attribute
// of a summary line of internal/faillog, 1 for any other line.
func (r Record) Count() int {
	if v, ok := r.Attrs["not_logged"]; ok {
		return int(v.Int64())
	}
	return 1
}

// Recorder is a slog.Handler that keeps every record at MinLevel or above
// (the zero value keeps Info and above). Its methods are safe for
// concurrent use.
type Recorder struct {
	MinLevel slog.Level

	mu      sync.Mutex
	records []Record
}

var _ slog.Handler = (*Recorder)(nil)

// Enabled implements slog.Handler.
func (l *Recorder) Enabled(_ context.Context, level slog.Level) bool { return level >= l.MinLevel }

// Handle implements slog.Handler.
func (l *Recorder) Handle(_ context.Context, r slog.Record) error {
	rec := Record{Level: r.Level, Message: r.Message, Attrs: make(map[string]slog.Value, r.NumAttrs())}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.Resolve()
		return true
	})
	l.mu.Lock()
	l.records = append(l.records, rec)
	l.mu.Unlock()
	return nil
}

// WithAttrs implements slog.Handler; attributes added this way are not
// recorded.
func (l *Recorder) WithAttrs([]slog.Attr) slog.Handler { return l }

// WithGroup implements slog.Handler; groups are not recorded.
func (l *Recorder) WithGroup(string) slog.Handler { return l }

// Find returns the records at level, with message msg unless msg is empty,
// whose attributes include every one of attrs (compared as strings).
func (l *Recorder) Find(level slog.Level, msg string, attrs map[string]string) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Record
	for _, r := range l.records {
		if r.Level == level && (msg == "" || r.Message == msg) && r.has(attrs) {
			out = append(out, r)
		}
	}
	return out
}

func (r Record) has(attrs map[string]string) bool {
	for k, want := range attrs {
		if v, ok := r.Attrs[k]; !ok || v.String() != want {
			return false
		}
	}
	return true
}

// CheckRateLimited waits until the lines find returns stand for want
// events (summing Record.Count: internal/faillog writes a summary when its
// window ends) and fails the test when they are more than one line per
// five events: a rate-limited log writes a few lines a second and a count,
// so want events would have to take minutes to come near that bound. It
// fails too when the count is not reached within 30 seconds.
func CheckRateLimited(t testing.TB, want int, find func() []Record) {
	t.Helper()
	var lines []Record
	counted := func() int {
		lines = find()
		n := 0
		for _, l := range lines {
			n += l.Count()
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for counted() != want {
		if time.Now().After(deadline) {
			t.Fatalf("the lines count %d events, want %d", counted(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(lines) > want/5 {
		t.Errorf("%d lines for %d events", len(lines), want)
	}
}
