package api_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/api"
)

type publishResult struct {
	Offset uint64 `json:"offset"`
	Epoch  string `json:"epoch"`
}

func TestPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c, _ := e.dial("alice")
	c.MustSubscribe("hist:news")
	c.MustSubscribe("plain:news")

	b64 := base64.StdEncoding.EncodeToString([]byte(`{"from":"b64"}`))
	tests := []struct {
		name       string
		body       string
		channel    string
		wantData   string
		wantOffset uint64
		wantTags   map[string]string
	}{
		{"data", `{"channel":"hist:news","data":{"text":"hello"}}`, "hist:news", `{"text":"hello"}`, 1, nil},
		{"b64data", `{"channel":"hist:news","b64data":"` + b64 + `"}`, "hist:news", `{"from":"b64"}`, 2, nil},
		{"tags", `{"channel":"hist:news","data":"str","tags":{"k":"v"}}`, "hist:news", `"str"`, 3, map[string]string{"k": "v"}},
		{"skip history", `{"channel":"hist:news","data":1,"skip_history":true}`, "hist:news", `1`, 0, nil},
		{"without history", `{"channel":"plain:news","data":[1,2]}`, "plain:news", `[1,2]`, 0, nil},
	}
	seen := map[string]int{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res publishResult
			e.call("publish", tt.body, &res)
			if res.Offset != tt.wantOffset {
				t.Fatalf("offset %d, want %d", res.Offset, tt.wantOffset)
			}
			if (tt.wantOffset > 0) != (res.Epoch != "") {
				t.Fatalf("epoch %q with offset %d", res.Epoch, res.Offset)
			}
			seen[tt.channel]++
			pubs := c.WaitPubs(tt.channel, seen[tt.channel])
			p := pubs[len(pubs)-1]
			jsonEq(t, p.Data, tt.wantData)
			if p.Offset != tt.wantOffset {
				t.Fatalf("pushed offset %d, want %d", p.Offset, tt.wantOffset)
			}
			for k, v := range tt.wantTags {
				if p.Tags[k] != v {
					t.Fatalf("tags %v, want %v", p.Tags, tt.wantTags)
				}
			}
		})
	}
}

func TestPublishIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	body := `{"channel":"hist:idem","data":{},"idempotency_key":"k1"}`
	var first, second publishResult
	e.call("publish", body, &first)
	e.call("publish", body, &second)
	if first != second {
		t.Fatalf("second publish with the same key gave %+v, first %+v", second, first)
	}
	var h historyResult
	e.call("history", `{"channel":"hist:idem","limit":-1}`, &h)
	if len(h.Publications) != 1 {
		t.Fatalf("history holds %d publications, want 1", len(h.Publications))
	}
}

func TestPublishBadRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	tests := []struct {
		name string
		body string
		want uint32
	}{
		{"no channel", `{"data":{}}`, 107},
		{"no data", `{"channel":"a"}`, 107},
		{"bad base64", `{"channel":"a","b64data":"***"}`, 107},
		{"unknown namespace", `{"channel":"nope:a","data":{}}`, 102},
		{"channel is a number", `{"channel":1,"data":{}}`, 107},
		{"tags not strings", `{"channel":"a","data":{},"tags":{"k":1}}`, 107},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.callErr("publish", tt.body); got != tt.want {
				t.Fatalf("error %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBroadcast(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c, _ := e.dial("alice")
	c.MustSubscribe("hist:a")
	c.MustSubscribe("plain:b")

	status, b := e.post("broadcast", `{"channels":["hist:a","plain:b","nope:c",""],"data":{"n":1}}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	// Each channel gets a response of its own, shaped as a publish
	// response: {"result":{...}} or {"error":{...}}.
	var out struct {
		Result struct {
			Responses []struct {
				Result *publishResult `json:"result"`
				Error  *struct {
					Code uint32 `json:"code"`
				} `json:"error"`
			} `json:"responses"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	rs := out.Result.Responses
	if len(rs) != 4 {
		t.Fatalf("%d responses, want 4: %s", len(rs), b)
	}
	if rs[0].Result == nil || rs[0].Result.Offset != 1 || rs[0].Result.Epoch == "" {
		t.Fatalf("hist:a response %s", b)
	}
	if rs[1].Result == nil || rs[1].Result.Offset != 0 {
		t.Fatalf("plain:b response %s", b)
	}
	if rs[2].Error == nil || rs[2].Error.Code != 102 {
		t.Fatalf("nope:c response %s", b)
	}
	if rs[3].Error == nil || rs[3].Error.Code != 107 {
		t.Fatalf("empty channel response %s", b)
	}
	jsonEq(t, c.WaitPubs("hist:a", 1)[0].Data, `{"n":1}`)
	jsonEq(t, c.WaitPubs("plain:b", 1)[0].Data, `{"n":1}`)

	if got := e.callErr("broadcast", `{"channels":[],"data":{}}`); got != 107 {
		t.Fatalf("no channels: error %d, want 107", got)
	}
	if !strings.Contains(string(b), `"responses":[{"result":{"offset":1,"epoch":"`) {
		t.Fatalf("unexpected shape %s", b)
	}
}
