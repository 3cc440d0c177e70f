package gyre_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/protocol"
)

// TestBrokerFailureLogsRateLimited: with Redis down every history
// command fails, and each failure is counted in the log without a line
// each: 1,000 failures give a few lines a second that count them all.
func TestBrokerFailureLogsRateLimited(t *testing.T) {
	const calls = 1000
	logs := &logtest.Recorder{}
	cfg := chatConfig()
	cfg.Logger = slog.New(logs)
	b := testBroker{name: "redis", redis: redistest.Start(t)}
	_, url := newTestNode(t, b.config(t, cfg))
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", time.Hour, nil))
	c.MustSubscribe("chat:down")
	b.redis.Kill()

	for range calls {
		r, closed := c.TryCall(&protocol.Command{History: &protocol.HistoryRequest{Channel: "chat:down", Limit: 1}})
		if closed != nil {
			t.Fatalf("closed %d %s", closed.Code, closed.Reason)
		}
		if r.Error == nil || r.Error.Code != gyre.ErrorInternal.Code {
			t.Fatalf("history with Redis down: %+v, want error 100", r)
		}
	}
	logtest.CheckRateLimited(t, calls, func() []logtest.Record {
		return append(logs.Find(slog.LevelError, "history failed", nil),
			logs.Find(slog.LevelWarn, "history: broker not available", nil)...)
	})
}
