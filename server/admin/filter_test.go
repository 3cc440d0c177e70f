package admin_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/admin"
)

type filterReply struct {
	Node         json.RawMessage `json:"node"`
	Expression   string          `json:"expression"`
	Publications []struct {
		Offset uint64            `json:"offset"`
		Data   json.RawMessage   `json:"data"`
		Tags   map[string]string `json:"tags"`
		Kept   bool              `json:"kept"`
	} `json:"publications"`
	Error *struct {
		Message  string `json:"message"`
		Position *int   `json:"position"`
	} `json:"error"`
}

func TestFilter(t *testing.T) {
	e := newEnv(t, admin.Config{})
	tok := e.token()
	for i, level := range []string{"info", "error", "debug", "error"} {
		if _, err := e.node.Publish("logs", []byte(`{"n":`+string(rune('0'+i))+`}`), gyre.WithTags(map[string]string{"level": level})); err != nil {
			t.Fatal(err)
		}
	}
	r := e.postJSON("/admin/filter", tok, `{"filter":"level == \"error\"","channel":"logs","limit":3}`)
	if r.status != 200 {
		t.Fatalf("filter: %d %s", r.status, r.body)
	}
	var got filterReply
	mustJSON(t, r.body, &got)
	if got.Expression != `level == "error"` {
		t.Errorf("expression %q", got.Expression)
	}
	var node map[string]any
	mustJSON(t, string(got.Node), &node)
	if node["key"] != "level" || node["val"] != "error" {
		t.Errorf("node %s", got.Node)
	}
	// The three newest, newest first.
	want := []struct {
		offset uint64
		kept   bool
	}{{4, true}, {3, false}, {2, true}}
	if len(got.Publications) != len(want) {
		t.Fatalf("publications: %s", r.body)
	}
	for i, w := range want {
		p := got.Publications[i]
		if p.Offset != w.offset || p.Kept != w.kept || p.Tags["level"] == "" || len(p.Data) == 0 {
			t.Errorf("publication %d: %+v, want offset %d kept %v", i, p, w.offset, w.kept)
		}
	}
	// Without a channel: the tree only.
	r = e.postJSON("/admin/filter", tok, `{"filter":"a == \"1\" && b != \"2\""}`)
	mustJSON(t, r.body, &got)
	if r.status != 200 || len(got.Publications) != 0 || got.Expression == "" {
		t.Fatalf("filter without channel: %d %s", r.status, r.body)
	}
}

func TestFilterRefused(t *testing.T) {
	e := newEnv(t, admin.Config{})
	tok := e.token()
	r := e.postJSON("/admin/filter", tok, `{"filter":"level == ","channel":"logs"}`)
	var got filterReply
	mustJSON(t, r.body, &got)
	if r.status != 400 || got.Error == nil || got.Error.Position == nil || *got.Error.Position != 9 || got.Error.Message == "" {
		t.Fatalf("bad expression: %d %s", r.status, r.body)
	}
	if r := e.postJSON("/admin/filter", tok, `{"filter":`); r.status != 400 {
		t.Fatalf("bad JSON: %d %s", r.status, r.body)
	}
	if r := e.postJSON("/admin/filter", tok, `{"filter":"a == \"1\"","channel":"nope:x"}`); r.status != 400 || !strings.Contains(r.body, "nope:x") {
		t.Fatalf("unknown channel: %d %s", r.status, r.body)
	}
	if r := e.postJSON("/admin/filter", "", `{"filter":"a == \"1\""}`); r.status != 401 {
		t.Fatalf("no token: %d", r.status)
	}
}
