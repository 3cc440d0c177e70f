package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	gyrelib "github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/server/proxy"
	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

func (g *grpcBackend) SharedPollRefresh(ctx context.Context, r *proxypb.SharedPollRefreshRequest) (*proxypb.SharedPollRefreshResponse, error) {
	resp := &proxypb.SharedPollRefreshResponse{}
	return resp, g.handle(ctx, "shared_poll_refresh", r, resp)
}

// countCalls is a CallObserver that counts per call type.
type countCalls struct {
	mu                    sync.Mutex
	started, done, failed map[string]int
}

func newCountCalls() *countCalls {
	return &countCalls{started: map[string]int{}, done: map[string]int{}, failed: map[string]int{}}
}

func (c *countCalls) CallStarted(typ string) { c.mu.Lock(); c.started[typ]++; c.mu.Unlock() }
func (c *countCalls) CallDone(typ string, _ time.Duration) {
	c.mu.Lock()
	c.done[typ]++
	c.mu.Unlock()
}
func (c *countCalls) CallFailed(typ string) { c.mu.Lock(); c.failed[typ]++; c.mu.Unlock() }

func (c *countCalls) counts(typ string) [3]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return [3]int{c.started[typ], c.done[typ], c.failed[typ]}
}

// sharedPollProxy is a proxy to b's shared_poll_refresh over kind, with a
// static header, logging into rec and counting into calls.
func sharedPollProxy(t *testing.T, kind string, b *backend, rec *logtest.Recorder, calls *countCalls) *proxy.Proxy {
	t.Helper()
	pool := proxy.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	p, err := proxy.New(proxy.Config{
		Name: "channel.proxy.shared_poll_refresh", Endpoint: b.endpoint(kind, "shared_poll_refresh"), Timeout: 2 * time.Second,
		StaticHeaders: map[string]string{"x-poll-key": "k1"},
		Logger:        slog.New(rec), Calls: calls,
	}, pool)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// jsonText is body encoded again, keys sorted.
func jsonText(t *testing.T, body map[string]any) string {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var pollEvent = gyrelib.SharedPollRefreshEvent{
	Channel: "prices:eu", Route: "",
	Items: []gyrelib.SharedPollKey{{Key: "a", Version: 7}, {Key: "b"}},
}

// TestSharedPollRefresh: a refresh goes to the backend with the channel
// and the keys (a version only where there is one), and its answer comes
// back item by item, data as the backend wrote it.
func TestSharedPollRefresh(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b := newBackend(t)
			b.setBody("shared_poll_refresh", `{"result":{"items":[
				{"key":"a","data":{"p":1.5},"version":8},
				{"key":"b","removed":true},
				{"key":"c","data":"text","version":18446744073709551615,"prev_data":{"p":0}}],
				"epoch":"e1"}}`)
			calls := newCountCalls()
			p := sharedPollProxy(t, kind, b, &logtest.Recorder{}, calls)
			rep, err := p.SharedPollRefresh(context.Background(), pollEvent)
			if err != nil {
				t.Fatal(err)
			}
			want := gyrelib.SharedPollRefreshReply{Epoch: "e1", Items: []gyrelib.SharedPollItem{
				{Key: "a", Data: []byte(`{"p":1.5}`), Version: 8},
				{Key: "b", Removed: true},
				{Key: "c", Data: []byte(`"text"`), Version: 1<<64 - 1},
			}}
			if !reflect.DeepEqual(rep, want) {
				t.Errorf("reply = %+v\nwant %+v", rep, want)
			}
			c := b.waitCalls("shared_poll_refresh", 1)[0]
			if got := jsonText(t, c.body); got != `{"channel":"prices:eu","items":[{"key":"a","version":7},{"key":"b"}]}` {
				t.Errorf("request = %s", got)
			}
			if kind == "http" && c.header.Get("X-Poll-Key") != "k1" {
				t.Errorf("static header X-Poll-Key = %q, want k1", c.header.Get("X-Poll-Key"))
			}
			if got := calls.counts("shared_poll_refresh"); got != [3]int{1, 1, 0} {
				t.Errorf("calls started, done, failed = %v, want [1 1 0]", got)
			}
		})
	}
}

// TestSharedPollRefreshNoResult: an answer without a result changes
// nothing, as in Centrifugo.
func TestSharedPollRefreshNoResult(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			b := newBackend(t)
			b.setBody("shared_poll_refresh", `{}`)
			p := sharedPollProxy(t, kind, b, &logtest.Recorder{}, newCountCalls())
			rep, err := p.SharedPollRefresh(context.Background(), pollEvent)
			if err != nil || rep.Items != nil || rep.Epoch != "" {
				t.Errorf("SharedPollRefresh = %+v, %v; want nothing", rep, err)
			}
		})
	}
}

// TestSharedPollRefreshGarbage: whatever the backend answers that cannot
// be used is an error saying what was wrong, logged and counted.
func TestSharedPollRefreshGarbage(t *testing.T) {
	tests := []struct {
		name string
		kind string // "" for both
		a    answer
		want string
	}{
		{"error object", "", ok(`{"error":{"code":1001,"message":"db down","temporary":true}}`), `the backend answered with an error: gyre: error 1001: db down`},
		{"item without key", "", ok(`{"result":{"items":[{"key":"a","data":1},{"data":2}]}}`), `channel "prices:eu": result item 1 has no key`},
		{"item with empty key", "", ok(`{"result":{"items":[{"key":"","removed":true}]}}`), `result item 0 has no key`},
		{"status", "", answer{status: http.StatusInternalServerError}, ""},
		{"not JSON", "http", ok(`<html>`), "malformed response body"},
		{"data not JSON", "http", ok(`{"result":{"items":[{"key":"a","data":{bad}}]}}`), "malformed response body"},
		{"items not a list", "http", ok(`{"result":{"items":{"key":"a"}}}`), "malformed response body: result: items"},
		{"version not a number", "http", ok(`{"result":{"items":[{"key":"a","version":"v2"}]}}`), "version"},
		{"negative version", "http", ok(`{"result":{"items":[{"key":"a","version":-1}]}}`), "version"},
		{"not an object", "http", ok(`[]`), "malformed response body"},
	}
	for _, kind := range kinds {
		for _, tt := range tests {
			if tt.kind != "" && tt.kind != kind {
				continue
			}
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				b := newBackend(t)
				b.set("shared_poll_refresh", func(map[string]any) answer { return tt.a })
				rec := &logtest.Recorder{}
				calls := newCountCalls()
				p := sharedPollProxy(t, kind, b, rec, calls)
				rep, err := p.SharedPollRefresh(context.Background(), pollEvent)
				if err == nil {
					t.Fatalf("SharedPollRefresh = %+v, nil; want an error", rep)
				}
				if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "SharedPollRefresh") {
					t.Errorf("error %q does not say %q", err, tt.want)
				}
				if !errors.Is(err, gyrelib.ErrorInternal) {
					t.Errorf("error %v is not ErrorInternal", err)
				}
				if got := calls.counts("shared_poll_refresh"); got[2] != 1 {
					t.Errorf("calls started, done, failed = %v, want one failed", got)
				}
				var lines []logtest.Record
				for _, level := range []slog.Level{slog.LevelWarn, slog.LevelError} {
					lines = append(lines, rec.Find(level, "", map[string]string{"proxy": "channel.proxy.shared_poll_refresh", "call": "SharedPollRefresh"})...)
				}
				if len(lines) != 1 {
					t.Errorf("%d log lines of the failure, want 1", len(lines))
				}
			})
		}
	}
}

// TestStaticHeadersWin: a proxy's static header is sent over a client
// header of the same name that the proxy forwards.
func TestStaticHeadersWin(t *testing.T) {
	b := newBackend(t)
	b.setBody("shared_poll_refresh", `{}`)
	pool := proxy.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	p, err := proxy.New(proxy.Config{
		Name: "p", Endpoint: b.endpoint("http", "shared_poll_refresh"),
		HTTPHeaders: []string{"Authorization", "X-Client"}, StaticHeaders: map[string]string{"Authorization": "Bearer backend"},
	}, pool)
	if err != nil {
		t.Fatal(err)
	}
	var ctx context.Context
	proxy.KeepHeaders([]string{"Authorization", "X-Client"}, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ctx = r.Context()
	})).ServeHTTP(httptest.NewRecorder(), func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/connection/websocket", nil)
		r.Header.Set("Authorization", "Bearer client")
		r.Header.Set("X-Client", "c")
		return r
	}())
	if _, err := p.SharedPollRefresh(ctx, pollEvent); err != nil {
		t.Fatal(err)
	}
	h := b.waitCalls("shared_poll_refresh", 1)[0].header
	if h.Get("Authorization") != "Bearer backend" || h.Get("X-Client") != "c" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v: want the static Authorization, the forwarded X-Client and the JSON content type", h)
	}
}
