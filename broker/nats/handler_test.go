package nats

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// handler records what a broker hands over.
type handler struct {
	mu       sync.Mutex
	runs     []broker.Run
	joins    []string
	leaves   []string
	controls [][]byte
	lost     [][]string
	scopes   [][]string
	log      []string // "pub <channel> <data>" and "lost <channel>", in order
}

func (h *handler) HandleRuns(runs []broker.Run) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range runs {
		r.Pubs = slices.Clone(r.Pubs)
		h.runs = append(h.runs, r)
		if r.Scope == "" {
			for _, p := range r.Pubs {
				h.log = append(h.log, "pub "+r.Channel+" "+string(p.Pub.Data))
			}
		}
	}
	return nil
}

func (h *handler) HandleJoin(ch string, _ *broker.ClientInfo) error {
	h.mu.Lock()
	h.joins = append(h.joins, ch)
	h.mu.Unlock()
	return nil
}

func (h *handler) HandleLeave(ch string, _ *broker.ClientInfo) error {
	h.mu.Lock()
	h.leaves = append(h.leaves, ch)
	h.mu.Unlock()
	return nil
}

func (h *handler) HandleControl(data []byte) error {
	h.mu.Lock()
	h.controls = append(h.controls, slices.Clone(data))
	h.mu.Unlock()
	return nil
}

func (h *handler) HandleSubscriptionLost(channels []string) error {
	h.mu.Lock()
	h.lost = append(h.lost, slices.Clone(channels))
	for _, ch := range channels {
		h.log = append(h.log, "lost "+ch)
	}
	h.mu.Unlock()
	return nil
}

func (h *handler) HandlePatternScopeLost(scopes []string) error {
	h.mu.Lock()
	h.scopes = append(h.scopes, slices.Clone(scopes))
	h.mu.Unlock()
	return nil
}

// pubs returns the data of the publications of channel on path (scope and
// pattern empty for the channel's own subscribers).
func (h *handler) pubs(channel, scope, pattern string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.runs {
		if r.Channel == channel && r.Scope == scope && r.Pattern == pattern {
			for _, p := range r.Pubs {
				out = append(out, string(p.Pub.Data))
			}
		}
	}
	return out
}

// eventually polls check until it holds, failing after 10 seconds.
func eventually(t testing.TB, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitPubs waits until channel's path got want, and fails if it got
// anything else.
func (h *handler) waitPubs(t testing.TB, channel, scope, pattern string, want ...string) {
	t.Helper()
	eventually(t, "publications of "+channel, func() bool { return len(h.pubs(channel, scope, pattern)) >= len(want) })
	if got := h.pubs(channel, scope, pattern); !slices.Equal(got, want) {
		t.Fatalf("%s (scope %q, pattern %q) got %q, want %q", channel, scope, pattern, got, want)
	}
}

// run starts b with a new handler.
func run(t testing.TB, b *Broker) *handler {
	t.Helper()
	h := &handler{}
	if err := b.Run(h); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return h
}
