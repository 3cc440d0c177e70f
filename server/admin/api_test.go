package admin_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/admin"
	"github.com/gyrehq/gyre/server/api"
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

// TestMethods: the methods route lists the API methods of the table that
// the Actions page offers, each with its fields; every one of them runs
// through the admin API.
func TestMethods(t *testing.T) {
	e := newEnv(t, admin.Config{})
	tok := e.token()
	r := e.get("/admin/methods", tok)
	if r.status != 200 {
		t.Fatalf("methods: %d %s", r.status, r.body)
	}
	var got struct {
		Methods []struct {
			Name    string   `json:"name"`
			Summary string   `json:"summary"`
			Fields  []string `json:"fields"`
		} `json:"methods"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range api.Methods() {
		if len(m.Admin) > 0 {
			want = append(want, m.Name)
		}
	}
	var names []string
	for _, m := range got.Methods {
		names = append(names, m.Name)
		if m.Summary == "" || len(m.Fields) == 0 {
			t.Errorf("%s: no summary or no fields: %+v", m.Name, m)
		}
		// Each is a method of the admin API: asked with no params it is
		// refused by the method (107), not unknown (104).
		a := e.postJSON("/admin/api", tok, `{"method":"`+m.Name+`","params":{}}`)
		if strings.Contains(a.body, `"code":104`) {
			t.Errorf("%s through the admin API: %s", m.Name, a.body)
		}
	}
	if !slices.Equal(names, want) || len(names) == 0 {
		t.Errorf("methods %v, want %v", names, want)
	}
	if r := e.get("/admin/methods", ""); r.status != 401 {
		t.Fatalf("without a token: %d %s", r.status, r.body)
	}
}
