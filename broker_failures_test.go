package gyre_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/enginetest"
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
	srv := redistest.Start(t) // killed below: not a shared one
	_, url := newTestNode(t, enginetest.OnRedis(t, cfg, redis.Config{Addresses: []string{srv.Addr}}))
	c := dial(t, url, protocol.TypeJSON)
	c.connect(connToken(t, "42", time.Hour, nil))
	c.MustSubscribe("chat:down")
	srv.Kill()

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

// TestServerSideSubscriptionBrokerDown: a connection whose token names
// server-side channels connects while Redis is down. The client cannot
// subscribe those channels itself, so the node must not leave it connected
// without them: it gets its connect result, then a close with 3004 (a
// reconnect code), and once Redis is back a new connection holds them.
func TestServerSideSubscriptionBrokerDown(t *testing.T) {
	srv := redistest.Start(t) // killed below: not a shared one
	_, url := newTestNode(t, enginetest.OnRedis(t, chatConfig(), redis.Config{Addresses: []string{srv.Addr}}))
	tok := connToken(t, "42", time.Hour, map[string]any{"channels": []string{"chat:side", "news"}})
	srv.Kill()

	c := dial(t, url, protocol.TypeJSON)
	res := c.connect(tok)
	if len(res.Subs) == 2 {
		t.Fatalf("connect with Redis down holds both server-side subscriptions: %v", res.Subs)
	}
	if closed := c.WaitClose(); closed.Code != ws.StatusCode(gyre.DisconnectServerError.Code) {
		t.Fatalf("closed with %d %q, want %d", closed.Code, closed.Reason, gyre.DisconnectServerError.Code)
	}

	srv.Restart()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := dial(t, url, protocol.TypeJSON)
		r, closed := c.TryCall(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}})
		if closed == nil && r.Error == nil && len(r.Connect.Subs) == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection holds both server-side subscriptions after Redis is back: %+v, %v", r, closed)
		}
		c.Close()
		time.Sleep(100 * time.Millisecond)
	}
}
