package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

var (
	mapPersistent = broker.MapOptions{Mode: broker.MapModePersistent, StreamSize: 10, StreamTTL: time.Minute}
	mapEphemeral  = broker.MapOptions{Mode: broker.MapModeEphemeral, KeyTTL: time.Minute}
)

// newQuietMapBroker returns a map broker whose background sweep never
// fires during a test, so that the test drives sweeps itself.
func newQuietMapBroker(t *testing.T, cfg MapConfig) *MapBroker {
	t.Helper()
	cfg.SweepInterval = time.Hour
	b, err := NewMapBroker(cfg)
	if err != nil {
		t.Fatalf("NewMapBroker: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func (b *MapBroker) channelCount() int {
	n := 0
	for i := range b.channels.all {
		n += b.channels.all[i].len()
	}
	return n
}

// queued counts the entries in the expiry queues.
func (b *MapBroker) queued() int {
	n := 0
	for i := range b.queues {
		q := &b.queues[i]
		q.mu.Lock()
		n += len(q.heap)
		q.mu.Unlock()
	}
	return n
}

func mustMapPublish(t *testing.T, b *MapBroker, ch, key string, opts broker.MapPublishOptions) broker.MapUpdateResult {
	t.Helper()
	res, err := b.Publish(t.Context(), ch, key, opts)
	if err != nil {
		t.Fatalf("Publish(%q, %q): %v", ch, key, err)
	}
	return res
}

// TestMapDeliveredBeforeReturn: a change reaches the handler before
// Publish or Remove returns, and an expiry before the sweep returns.
func TestMapDeliveredBeforeReturn(t *testing.T) {
	b := newQuietMapBroker(t, MapConfig{})
	h := &countHandler{}
	if err := b.Run(h); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe("ch"); err != nil {
		t.Fatal(err)
	}
	mo := broker.MapOptions{Mode: broker.MapModeRecoverable, KeyTTL: time.Second, StreamSize: 10, StreamTTL: time.Minute}
	mustMapPublish(t, b, "ch", "a", broker.MapPublishOptions{Map: mo})
	if h.pubs() != 1 {
		t.Fatalf("%d changes delivered when Publish returned, want 1", h.pubs())
	}
	mustMapPublish(t, b, "ch", "b", broker.MapPublishOptions{Map: mo})
	if _, err := b.Remove(t.Context(), "ch", "b", broker.MapRemoveOptions{Map: mo}); err != nil || h.pubs() != 3 {
		t.Fatalf("Remove: %v; %d changes delivered, want 3", err, h.pubs())
	}
	b.sweep(time.Now().Add(time.Minute))
	if h.pubs() != 4 {
		t.Fatalf("%d changes delivered when the sweep returned, want 4 (the expiry of a)", h.pubs())
	}
}

// TestMapExpiryQueueBounded: the expiry queue holds each live expiring
// key once however often it is refreshed, and lets go of removed,
// cleared and no longer expiring keys.
func TestMapExpiryQueueBounded(t *testing.T) {
	b := newQuietMapBroker(t, MapConfig{Shards: 1})
	refresh := broker.MapPublishOptions{Map: mapEphemeral, KeyMode: broker.KeyModeIfNew, RefreshTTLOnSuppress: true}
	for i := range 100 {
		mustMapPublish(t, b, "ch", fmt.Sprint("k", i%10), broker.MapPublishOptions{Map: mapEphemeral})
		mustMapPublish(t, b, "ch", fmt.Sprint("k", i%10), refresh)
	}
	if n := b.queued(); n != 10 {
		t.Fatalf("%d queued for 10 expiring keys", n)
	}
	if _, err := b.Remove(t.Context(), "ch", "k0", broker.MapRemoveOptions{Map: mapEphemeral}); err != nil {
		t.Fatal(err)
	}
	// Written again without expiry, a key leaves the queue.
	mustMapPublish(t, b, "ch", "k1", broker.MapPublishOptions{Map: mapPersistent})
	if n := b.queued(); n != 8 {
		t.Fatalf("%d queued after a removal and a write without expiry, want 8", n)
	}
	if err := b.Clear(t.Context(), "ch"); err != nil {
		t.Fatal(err)
	}
	if n := b.queued(); n != 0 {
		t.Fatalf("%d queued after Clear", n)
	}
	// A key refreshed after the sweep took it out of the queue is queued
	// again and outlives the sweep.
	mustMapPublish(t, b, "ch", "k", broker.MapPublishOptions{Map: mapEphemeral})
	due := b.queues[0].due(time.Now().Add(time.Hour).UnixNano(), nil)
	mustMapPublish(t, b, "ch", "k", refresh)
	b.expireDue(due, time.Now())
	if st, err := b.Stats(t.Context(), "ch"); err != nil || st.NumKeys != 1 || b.queued() != 1 {
		t.Fatalf("refreshed key: stats %+v (%v), %d queued; want 1 key queued", st, err, b.queued())
	}
}

// TestMapExpiryAfterRefresh: a key whose TTL was refreshed comes due at
// its first expiry time, survives that sweep, and expires at the later
// time.
func TestMapExpiryAfterRefresh(t *testing.T) {
	b := newQuietMapBroker(t, MapConfig{Shards: 1})
	mo := broker.MapOptions{Mode: broker.MapModeEphemeral, KeyTTL: 10 * time.Second}
	start := time.Now()
	mustMapPublish(t, b, "ch", "k", broker.MapPublishOptions{Map: mo})
	// Refreshed five seconds on: the key now expires at start+15s.
	c := b.channels.lock("ch", false)
	e := c.state["k"]
	c.queue.set(e, start.Add(15*time.Second).UnixNano())
	c.mu.Unlock()
	b.sweep(start.Add(12 * time.Second))
	if st, _ := b.Stats(t.Context(), "ch"); st.NumKeys != 1 || b.queued() != 1 {
		t.Fatalf("after the first expiry time: %d keys, %d queued; want the key queued again", st.NumKeys, b.queued())
	}
	b.sweep(start.Add(16 * time.Second))
	if st, _ := b.Stats(t.Context(), "ch"); st.NumKeys != 0 || b.queued() != 0 {
		t.Fatalf("after the refreshed expiry time: %d keys, %d queued; want none", st.NumKeys, b.queued())
	}
}

// TestMapIdleChannelsFreed: the sweep frees a channel that holds nothing
// and is not subscribed once its meta expired or it was idle for IdleTTL;
// it keeps channels that hold keys or are subscribed.
func TestMapIdleChannelsFreed(t *testing.T) {
	b := newQuietMapBroker(t, MapConfig{Shards: 2, IdleTTL: time.Minute})
	ctx := t.Context()
	if _, err := b.ReadState(ctx, "empty", broker.MapStateOptions{Map: mapPersistent}); err != nil {
		t.Fatal(err)
	}
	mustMapPublish(t, b, "keys", "k", broker.MapPublishOptions{Map: mapPersistent})
	if err := b.Subscribe("subscribed"); err != nil {
		t.Fatal(err)
	}
	withMeta := broker.MapOptions{Mode: broker.MapModeRecoverable, KeyTTL: time.Second, StreamSize: 10, StreamTTL: time.Second, MetaTTL: 30 * time.Second}
	mustMapPublish(t, b, "meta", "k", broker.MapPublishOptions{Map: withMeta})
	b.sweep(time.Now())
	if n := b.channelCount(); n != 4 {
		t.Fatalf("%d channels right after use, want 4", n)
	}
	// The key of "meta" expires, a change that keeps the meta alive for
	// 30 seconds more; the stream goes first, then the meta, before
	// IdleTTL.
	for _, after := range []time.Duration{10 * time.Second, 20 * time.Second} {
		b.sweep(time.Now().Add(after))
		if n := b.channelCount(); n != 4 {
			t.Fatalf("%d channels %v on, want 4", n, after)
		}
	}
	b.sweep(time.Now().Add(50 * time.Second))
	if n := b.channelCount(); n != 3 {
		t.Fatalf("%d channels once a meta expired, want 3", n)
	}
	b.sweep(time.Now().Add(2 * time.Minute))
	if n := b.channelCount(); n != 2 {
		t.Fatalf("%d channels after IdleTTL, want 2 (one with a key, one subscribed)", n)
	}
	top, err := b.ReadStream(ctx, "empty", broker.MapStreamOptions{Map: mapPersistent})
	if err != nil || top.Position.Epoch == "" {
		t.Fatalf("a freed channel read again: %+v, %v", top, err)
	}
	if err := b.Unsubscribe("subscribed"); err != nil {
		t.Fatal(err)
	}
	b.sweep(time.Now().Add(2 * time.Minute))
	if n := b.channelCount(); n != 1 {
		t.Fatalf("%d channels after the last unsubscribe, want 1", n)
	}
}

// TestMapCursors: a cursor is the page's last key under a hash of the
// channel; another broker's cursor (another process's) is refused.
func TestMapCursors(t *testing.T) {
	cc := newCursorCodec()
	for _, key := range []string{"a", "ключ", strings.Repeat("k", 256), "with\x00nul"} {
		c := cc.encode("ch", key)
		if got, ok, err := cc.decode("ch", c); err != nil || !ok || got != key {
			t.Errorf("cursor of %q read back as %q, %v, %v", key, got, ok, err)
		}
		if strings.ContainsAny(c, "+/=") {
			t.Errorf("cursor %q is not unpadded base64url", c)
		}
		if _, _, err := newCursorCodec().decode("ch", c); !errors.Is(err, broker.ErrBadCursor) {
			t.Errorf("another broker's cursor: %v", err)
		}
	}
}

// TestMapCallsRefused: what a broker cannot serve is an error: an empty
// key, an unknown mode or key mode, a cancelled context.
func TestMapCallsRefused(t *testing.T) {
	b := newQuietMapBroker(t, MapConfig{})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for name, call := range map[string]func() error{
		"empty key": func() error {
			_, err := b.Publish(t.Context(), "ch", "", broker.MapPublishOptions{Map: mapPersistent})
			return err
		},
		"empty key removed": func() error {
			_, err := b.Remove(t.Context(), "ch", "", broker.MapRemoveOptions{Map: mapPersistent})
			return err
		},
		"no mode": func() error {
			_, err := b.Publish(t.Context(), "ch", "k", broker.MapPublishOptions{})
			return err
		},
		"unknown key mode": func() error {
			_, err := b.Publish(t.Context(), "ch", "k", broker.MapPublishOptions{Map: mapPersistent, KeyMode: "maybe"})
			return err
		},
		"cancelled": func() error {
			_, err := b.ReadState(cancelled, "ch", broker.MapStateOptions{Map: mapPersistent})
			return err
		},
	} {
		if err := call(); err == nil || !strings.HasPrefix(err.Error(), "memory: ") {
			t.Errorf("%s: %v, want an error", name, err)
		}
	}
	if n := b.channelCount(); n != 0 {
		t.Errorf("refused calls made %d channels", n)
	}
}

// TestMapHandlerErrors: a handler error is logged with its channel, not
// returned: the change is made.
func TestMapHandlerErrors(t *testing.T) {
	var logs syncBuffer
	b := newQuietMapBroker(t, MapConfig{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := b.Run(&countHandler{err: errors.New("boom")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Subscribe("ch"); err != nil {
		t.Fatal(err)
	}
	if res := mustMapPublish(t, b, "ch", "k", broker.MapPublishOptions{Map: mapPersistent}); res.Position.Offset != 1 {
		t.Errorf("Publish: %+v", res)
	}
	if out := logs.String(); !strings.Contains(out, "boom") || !strings.Contains(out, "channel=ch") {
		t.Errorf("log = %q, want the handler error with its channel", out)
	}
}
