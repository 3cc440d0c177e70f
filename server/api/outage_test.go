package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/token"
)

// redisEnv is a node on the Redis engine with the API in front of it,
// whose logs are recorded.
type redisEnv struct {
	*env
	redis *redistest.Server
	logs  *logtest.Recorder
	api   *api.Handler
}

func newRedisEnv(t *testing.T) *redisEnv {
	t.Helper()
	srv := redistest.Start(t)
	logs := &logtest.Recorder{}
	log := slog.New(logs)
	e, err := redis.New(redis.Config{Addresses: []string{srv.Addr}, Prefix: "apitest", IOTimeout: time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	n, err := gyre.NewNode(gyre.Config{
		Token:           token.Config{HMACSecretKey: testSecret},
		Channels:        testChannels(),
		Broker:          e.Broker(),
		PresenceManager: e.PresenceManager(),
		Logger:          log,
	})
	if err != nil {
		t.Fatal(err)
	}
	sharedPollHandlers(n)
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	h := api.NewHandler(n, api.Config{Key: testKey, Logger: log})
	mux := http.NewServeMux()
	mux.Handle("/api/", h)
	mux.Handle("/api", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		ts.Close()
		_ = e.Close()
	})
	return &redisEnv{env: &env{t: t, node: n, srv: ts}, redis: srv, logs: logs, api: h}
}

// TestRedisDownLogged: while Redis is down, API publishes fail with 100,
// and each failure is logged at error level with the method, the channel
// and the cause, which the reply does not carry.
func TestRedisDownLogged(t *testing.T) {
	t.Parallel()
	e := newRedisEnv(t)
	e.call("publish", `{"channel":"hist:up","data":{}}`, nil)
	e.redis.Kill()

	checkLogged := func(t *testing.T, method, channel string) {
		t.Helper()
		recs := e.logs.Find(slog.LevelError, "", map[string]string{"method": method, "channel": channel})
		if len(recs) != 1 {
			t.Fatalf("%d error records for %s to %s, want 1", len(recs), method, channel)
		}
		if cause := recs[0].Attr("error"); !strings.Contains(cause, "redis") {
			t.Fatalf("%s to %s logged with error %q, which does not name the cause", method, channel, cause)
		}
	}
	t.Run("publish", func(t *testing.T) {
		if code := e.callErr("publish", `{"channel":"hist:a","data":{}}`); code != 100 {
			t.Fatalf("error %d, want 100", code)
		}
		checkLogged(t, "publish", "hist:a")
	})
	t.Run("broadcast", func(t *testing.T) {
		var res struct {
			Responses []apiReply `json:"responses"`
		}
		e.call("broadcast", `{"channels":["hist:b1","plain:b2"],"data":{}}`, &res)
		for i, r := range res.Responses {
			if r.Error == nil || r.Error.Code != 100 {
				t.Fatalf("response %d: %+v, want error 100", i, r)
			}
		}
		checkLogged(t, "broadcast", "hist:b1")
		checkLogged(t, "broadcast", "plain:b2")
	})
	t.Run("batch", func(t *testing.T) {
		_, b := e.post("batch", `{"commands":[{"publish":{"channel":"hist:c1","data":{}}},{"publish":{"channel":"hist:c1","data":{}}},{"broadcast":{"channels":["hist:c2"],"data":{}}}]}`)
		var res struct {
			Replies []json.RawMessage `json:"replies"`
		}
		if err := json.Unmarshal(b, &res); err != nil || len(res.Replies) != 3 {
			t.Fatalf("batch reply %s: %v", b, err)
		}
		if !strings.Contains(string(res.Replies[0]), `"code":100`) {
			t.Fatalf("reply %s, want error 100", res.Replies[0])
		}
		if n := len(e.logs.Find(slog.LevelError, "", map[string]string{"method": "publish", "channel": "hist:c1"})); n != 2 {
			t.Fatalf("%d error records for the batch's publishes, want 2", n)
		}
		checkLogged(t, "broadcast", "hist:c2")
	})
}

// TestRedisDownNoFlood: thousands of failed publishes give a bounded
// number of log lines: the first few one by one, the rest counted in one
// summary line per window.
func TestRedisDownNoFlood(t *testing.T) {
	t.Parallel()
	e := newRedisEnv(t)
	// A window longer than the test: every failure falls into the first.
	api.SetFailureLogWindow(e.api, time.Hour)
	e.redis.Kill()
	const n = 2000
	var cmds []string
	for i := range n {
		cmds = append(cmds, fmt.Sprintf(`{"publish":{"channel":"hist:%d","data":{}}}`, i))
	}
	_, b := e.post("batch", `{"commands":[`+strings.Join(cmds, ",")+`]}`)
	if got := strings.Count(string(b), `"code":100`); got != n {
		t.Fatalf("%d replies with error 100, want %d", got, n)
	}
	lines := e.logs.Find(slog.LevelError, "", map[string]string{"method": "publish"})
	if len(lines) != api.FailureLogBurst {
		t.Fatalf("%d error lines for %d failures in one window, want %d", len(lines), n, api.FailureLogBurst)
	}
	api.FlushFailureLogs(e.api)
	sums := e.logs.Find(slog.LevelError, "", map[string]string{"method": "publish", "not_logged": fmt.Sprint(n - api.FailureLogBurst)})
	if len(sums) != 1 {
		t.Fatalf("%d summary lines counting %d failures, want 1", len(sums), n-api.FailureLogBurst)
	}
	if sums[0].Attr("channel") == "" || !strings.Contains(sums[0].Attr("error"), "redis") {
		t.Fatalf("summary %v does not name the last failure's channel and cause", sums[0])
	}
}
