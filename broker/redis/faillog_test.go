package redis

import (
	"context"
	"log/slog"
	"testing"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/logtest"
)

// TestUndecodablePubSubMessagesLogRateLimited: foreign messages on a
// channel's pub/sub (whoever can PUBLISH to the Redis can send them) are
// skipped without a line each: 1,000 of them give a few lines a second
// that count them all, and delivery goes on.
func TestUndecodablePubSubMessagesLogRateLimited(t *testing.T) {
	const junk = 1000
	logs := &logtest.Recorder{}
	b, ev := runBroker(t, Config{Addresses: []string{redistest.Start(t).Addr}, Logger: slog.New(logs)})
	if err := b.Subscribe("chat"); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	// Each undecodable message is also reported as a loss of the
	// channel (a publication may be missing); those reports are not what
	// this test counts, and must not fill the recorder's queue.
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-ev.lost:
			case <-stop:
				return
			}
		}
	}()
	s := b.shard("chat")
	name := s.pubsubName("chat")
	for range junk {
		if err := s.client.Do(context.Background(), s.client.B().Publish().Channel(name).Message("not protobuf").Build()).Error(); err != nil {
			t.Fatalf("PUBLISH: %v", err)
		}
	}
	mustPublish(t, b, "chat", "after the junk")
	expectData(t, ev, "chat", "after the junk")

	logtest.CheckRateLimited(t, junk, func() []logtest.Record {
		return logs.Find(slog.LevelError, "redis: deliver pub/sub message", nil)
	})
}
