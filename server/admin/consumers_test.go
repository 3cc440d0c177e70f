package admin_test

import (
	"testing"

	"github.com/gyrehq/gyre/server/admin"
	"github.com/gyrehq/gyre/server/consume"
)

type consumersReply struct {
	NodeName  string             `json:"node_name"`
	Consumers []consume.Snapshot `json:"consumers"`
}

// TestConsumers: the consumers route answers the node's consumers as
// Config.Consumers reports them at the time of the request, in order,
// behind the login; a node without consumers answers an empty list.
func TestConsumers(t *testing.T) {
	t.Parallel()
	state := []consume.Snapshot{
		{Name: "outbox", Type: "postgresql", Running: true, Connected: true, Processed: 10, Skipped: 1, Lag: 4, LastProcessed: 1700000000000},
		{Name: "events", Type: "kafka", Running: true, SourceErrors: 3, Lag: -1, Error: "poll: connection refused", ErrorTime: 1700000000500},
	}
	calls := 0
	e := newEnv(t, admin.Config{Consumers: func() []consume.Snapshot {
		calls++
		return state
	}})
	if r := e.get("/admin/consumers", ""); r.status != 401 {
		t.Fatalf("without a token: %d %s", r.status, r.body)
	}
	tok := e.token()
	if r := e.postJSON("/admin/consumers", tok, `{}`); r.status != 405 || r.header.Get("Allow") != "GET" {
		t.Fatalf("POST: %d %v", r.status, r.header)
	}
	r := e.get("/admin/consumers", tok)
	if r.status != 200 || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("consumers: %d %v %s", r.status, r.header, r.body)
	}
	var got consumersReply
	mustJSON(t, r.body, &got)
	if got.NodeName != "node-a" || len(got.Consumers) != 2 || got.Consumers[0] != state[0] || got.Consumers[1] != state[1] {
		t.Fatalf("consumers: %s", r.body)
	}

	// Read anew at each request.
	state = state[:1]
	state[0].Processed = 11
	mustJSON(t, e.get("/admin/consumers", tok).body, &got)
	if len(got.Consumers) != 1 || got.Consumers[0].Processed != 11 || calls != 2 {
		t.Fatalf("after a change: %+v (%d calls)", got.Consumers, calls)
	}
}

func TestConsumersNone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, admin.Config{})
	r := e.get("/admin/consumers", e.token())
	if r.status != 200 || r.body != "{\"consumers\":[],\"node_name\":\"node-a\"}\n" {
		t.Fatalf("without consumers: %d %s", r.status, r.body)
	}
}
