package admin_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/admin"
	"github.com/gyrehq/gyre/server/hooks"
)

// TestEventHooks: the event_hooks route answers the node's hook queues as
// Config.EventHooks reports them at the time of the request, behind the
// login: each queue's counts and its recent records, a channel event's
// channel and a user event's user, a failure's batch, attempt, reason and
// error, and no connection info.
func TestEventHooks(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1767225600123)
	var mu sync.Mutex
	state := []admin.EventHookQueue{
		{
			Name: "channel.proxy.state", Kinds: []string{"channel"}, Namespaces: []string{"", "room"},
			Length: 3, Delivered: 10, Failed: 2, Dropped: 1,
			Recent: []hooks.Record{
				{Time: at.Add(2 * time.Second), Outcome: hooks.Dropped, Reason: hooks.DropMaxAge,
					Event: hooks.Event{ID: "e-3", Kind: hooks.KindChannel, Key: "room:2", Type: hooks.TypeVacated, TimeMs: 1767225500000}},
				{Time: at.Add(time.Second), Outcome: hooks.Failed, Batch: 2, Attempt: 3, Reason: hooks.FailStatus, Error: "status 503",
					Event: hooks.Event{ID: "e-2", Kind: hooks.KindChannel, Key: "room:1", Type: hooks.TypeOccupied, TimeMs: 1767225590000}},
				{Time: at, Outcome: hooks.Delivered,
					Event: hooks.Event{ID: "e-1", Kind: hooks.KindChannel, Key: "news", Type: hooks.TypeOccupied, TimeMs: 1767225599000}},
			},
		},
		{
			Name: "users", Kinds: []string{"user"},
			Recent: []hooks.Record{
				{Time: at, Outcome: hooks.Delivered,
					Event: hooks.Event{ID: "u-1", Kind: hooks.KindUser, Key: "42", Type: hooks.TypeOnline, TimeMs: 1767225599500, Info: json.RawMessage(`{"name":"Ann"}`)}},
			},
		},
	}
	e := newEnv(t, admin.Config{EventHooks: func() []admin.EventHookQueue {
		mu.Lock()
		defer mu.Unlock()
		return state
	}})
	if r := e.get("/admin/event_hooks", ""); r.status != 401 {
		t.Fatalf("without a token: %d %s", r.status, r.body)
	}
	tok := e.token()
	if r := e.postJSON("/admin/event_hooks", tok, `{}`); r.status != 405 || r.header.Get("Allow") != "GET" {
		t.Fatalf("POST: %d %v", r.status, r.header)
	}
	r := e.get("/admin/event_hooks", tok)
	if r.status != 200 || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("event_hooks: %d %v %s", r.status, r.header, r.body)
	}
	want := `{"event_hooks":[` +
		`{"name":"channel.proxy.state","kinds":["channel"],"namespaces":["","room"],"queue_length":3,"delivered":10,"failed_requests":2,"dropped":1,"recent":[` +
		`{"time_ms":1767225602123,"outcome":"dropped","event_id":"e-3","kind":"channel","channel":"room:2","type":"vacated","event_time_ms":1767225500000,"reason":"max_age"},` +
		`{"time_ms":1767225601123,"outcome":"failed","event_id":"e-2","kind":"channel","channel":"room:1","type":"occupied","event_time_ms":1767225590000,"batch":2,"attempt":3,"reason":"status","error":"status 503"},` +
		`{"time_ms":1767225600123,"outcome":"delivered","event_id":"e-1","kind":"channel","channel":"news","type":"occupied","event_time_ms":1767225599000}]},` +
		`{"name":"users","kinds":["user"],"namespaces":[],"queue_length":0,"delivered":0,"failed_requests":0,"dropped":0,"recent":[` +
		`{"time_ms":1767225600123,"outcome":"delivered","event_id":"u-1","kind":"user","user":"42","type":"online","event_time_ms":1767225599500}]}` +
		`],"node_name":"node-a"}` + "\n"
	if r.body != want {
		t.Fatalf("event_hooks:\n got %s\nwant %s", r.body, want)
	}

	// Read anew at each request.
	mu.Lock()
	state = state[1:]
	state[0].Delivered, state[0].Recent = 1, nil
	mu.Unlock()
	var got struct {
		Hooks []struct {
			Name      string `json:"name"`
			Delivered uint64 `json:"delivered"`
			Recent    []any  `json:"recent"`
		} `json:"event_hooks"`
	}
	mustJSON(t, e.get("/admin/event_hooks", tok).body, &got)
	if len(got.Hooks) != 1 || got.Hooks[0].Name != "users" || got.Hooks[0].Delivered != 1 || got.Hooks[0].Recent == nil || len(got.Hooks[0].Recent) != 0 {
		t.Fatalf("after a change: %+v", got)
	}
}

func TestEventHooksNone(t *testing.T) {
	t.Parallel()
	for _, cfg := range []admin.Config{{}, {EventHooks: func() []admin.EventHookQueue { return nil }}} {
		e := newEnv(t, cfg)
		r := e.get("/admin/event_hooks", e.token())
		if r.status != 200 || r.body != "{\"event_hooks\":[],\"node_name\":\"node-a\"}\n" {
			t.Fatalf("without event hooks: %d %s", r.status, r.body)
		}
	}
}
