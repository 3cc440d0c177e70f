package admin_test

import (
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/admin"
)

// TestAPI: the legacy form of the server API, without the API key but
// with the session token; replies as the HTTP API gives them.
func TestAPI(t *testing.T) {
	e := newEnv(t, admin.Config{})
	tok := e.token()
	r := e.postJSON("/admin/api", tok, `{"method":"publish","params":{"channel":"news","data":{"a":1}}}`)
	if r.status != 200 || !strings.Contains(r.body, `"result":{"offset":1`) {
		t.Fatalf("publish: %d %s", r.status, r.body)
	}
	r = e.postJSON("/admin/api", tok, `{"method":"history","params":{"channel":"news","limit":10}}`)
	if r.status != 200 || !strings.Contains(r.body, `"data":{"a":1}`) {
		t.Fatalf("history: %d %s", r.status, r.body)
	}
	// An error of the method is a 200 with the error, as the HTTP API
	// answers the legacy form.
	r = e.postJSON("/admin/api", tok, `{"method":"publish","params":{"channel":"nope:x","data":{}}}`)
	if r.status != 200 || !strings.Contains(r.body, `"error":{"code":102`) {
		t.Fatalf("unknown namespace: %d %s", r.status, r.body)
	}
	// Several commands: one reply a line, in order.
	r = e.postJSON("/admin/api", tok, `{"method":"publish","params":{"channel":"news","data":2}}`+"\n"+`{"method":"channels","params":{}}`)
	lines := strings.Split(strings.TrimSpace(r.body), "\n")
	if r.status != 200 || len(lines) != 2 || !strings.Contains(lines[0], `"offset":2`) || !strings.Contains(lines[1], `"channels"`) {
		t.Fatalf("two commands: %d %s", r.status, r.body)
	}
	if r := e.postJSON("/admin/api", "", `{"method":"info","params":{}}`); r.status != 401 {
		t.Fatalf("without a token: %d %s", r.status, r.body)
	}
	if r := e.get("/admin/api", tok); r.status != 405 || r.header.Get("Allow") != "POST" {
		t.Fatalf("GET api: %d %v", r.status, r.header)
	}
	if r := e.postJSON("/admin/nodes", tok, ``); r.status != 405 || r.header.Get("Allow") != "GET" {
		t.Fatalf("POST nodes: %d %v", r.status, r.header)
	}
}
