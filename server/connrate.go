package server

import (
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// connRate refuses new client connections over client.connection_rate_limit
// per second on this node: such a request is answered 503 (Service
// Unavailable) before any upgrade, as in Centrifugo, so that clients back
// off and retry. It is a token bucket holding up to limit tokens,
// refilled at limit per second.
type connRate struct {
	limit float64
	now   func() time.Duration // the clock; tests set a fake one
	log   *slog.Logger

	mu     sync.Mutex
	tokens float64
	last   time.Duration

	// loggedAt throttles the log line to one per second of the clock.
	loggedAt atomic.Int64
}

func newConnRate(limit int, log *slog.Logger) *connRate {
	start := time.Now()
	return &connRate{
		limit:  float64(limit),
		now:    func() time.Duration { return time.Since(start) },
		log:    log,
		tokens: float64(limit),
	}
}

func (r *connRate) allow() bool {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := now - r.last; d > 0 {
		r.tokens = min(r.limit, r.tokens+d.Seconds()*r.limit)
		r.last = now
	}
	if r.tokens < 1 {
		return false
	}
	r.tokens--
	return true
}

func (r *connRate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !r.allow() {
			now := int64(r.now())
			if prev := r.loggedAt.Load(); (prev == 0 || now-prev >= int64(time.Second)) && r.loggedAt.CompareAndSwap(prev, now) {
				r.log.Warn("connection refused: client.connection_rate_limit reached", "limit", int(r.limit), "path", req.URL.Path, "remote", req.RemoteAddr)
			}
			http.Error(w, "too many new connections", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, req)
	})
}
