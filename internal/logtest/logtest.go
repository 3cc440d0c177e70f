// Package logtest records what a component logs, for tests that check that
// a log line was written, with which attributes.
package logtest

import (
	"context"
	"log/slog"
	"sync"
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
