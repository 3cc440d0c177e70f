// Package faillog logs repeated failures of one kind without flooding the
// log: a few lines one by one, then a count. The server API, the proxies
// and the Redis broker log their failures through it.
package faillog

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// How failures are logged: per kind (a method, a proxy call, a broker
// operation), the first Burst of each Window one line each, the rest
// counted and written as one line when the window ends: the latest
// failure's line with not_logged (how many it stands for) and window.
// When Redis is down, every publish fails, thousands a second; a line each
// would bury everything else in the log and cost more than the publishes,
// while a few lines and a count say all there is to say.
const (
	Burst  = 5
	Window = time.Second
)

// Log writes the log lines of failures without flooding the log. Its
// methods are safe for concurrent use.
type Log struct {
	log    *slog.Logger
	window time.Duration

	mu    sync.Mutex
	kinds map[string]*failureCount
}

// failureCount is what Log knows of one kind of failure.
type failureCount struct {
	start  time.Time // of the current window
	logged int       // lines written one by one in the current window
	// notLogged failures were counted since the last summary; level, msg
	// and last are those of the latest of them.
	notLogged int
	level     slog.Level
	msg       string
	last      []any
	// timer writes the summary at the end of the window; nil when none
	// is due.
	timer *time.Timer
}

// New returns a Log writing to log (nil discards).
func New(log *slog.Logger) *Log {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Log{log: log, window: Window, kinds: make(map[string]*failureCount)}
}

// SetWindow sets the window (tests end windows when they choose); call it
// before the first Add.
func (l *Log) SetWindow(d time.Duration) { l.window = d }

// Add logs one failure of kind, or counts it when the kind's lines for
// this window are spent. kind must come from a fixed set (never from the
// request), as each keeps an entry.
func (l *Log) Add(kind string, level slog.Level, msg string, attrs ...any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	now := time.Now()
	l.mu.Lock()
	c := l.kinds[kind]
	if c == nil {
		c = &failureCount{}
		l.kinds[kind] = c
	}
	if now.Sub(c.start) >= l.window {
		c.start, c.logged = now, 0
	}
	if c.logged < Burst {
		c.logged++
		l.mu.Unlock()
		l.log.Log(context.Background(), level, msg, attrs...)
		return
	}
	c.notLogged++
	c.level, c.msg, c.last = level, msg, attrs
	if c.timer == nil {
		c.timer = time.AfterFunc(c.start.Add(l.window).Sub(now), func() { l.Flush(kind) })
	}
	l.mu.Unlock()
}

// Flush writes the summary of the failures of kind counted and not logged:
// the latest one's line, with how many it stands for.
func (l *Log) Flush(kind string) {
	l.mu.Lock()
	c := l.kinds[kind]
	if c == nil {
		l.mu.Unlock()
		return
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	n, level, msg, attrs := c.notLogged, c.level, c.msg, c.last
	c.notLogged, c.last = 0, nil
	l.mu.Unlock()
	if n > 0 {
		l.log.Log(context.Background(), level, msg, slices.Concat(attrs, []any{"not_logged", n, "window", l.window})...)
	}
}

// FlushAll writes every summary due.
func (l *Log) FlushAll() {
	l.mu.Lock()
	kinds := make([]string, 0, len(l.kinds))
	for k := range l.kinds {
		kinds = append(kinds, k)
	}
	l.mu.Unlock()
	for _, k := range kinds {
		l.Flush(k)
	}
}
