package api_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/api"
)

// TestSubscribeOptions: the subscribe method's info, data,
// recover_since, override (and their b64 forms) reach the subscriber.
func TestSubscribeOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c, _ := e.dial("erin")

	var first publishResult
	e.call("publish", `{"channel":"opts","data":{"n":1}}`, &first)
	e.call("publish", `{"channel":"opts","data":{"n":2}}`, nil)
	e.call("publish", `{"channel":"opts","data":{"n":3}}`, nil)

	// The channel has history but no recovery: the override turns it on.
	e.call("subscribe", fmt.Sprintf(`{"user":"erin","channel":"opts","info":{"seat":4},"data":{"hello":true},
		"recover_since":{"offset":%d,"epoch":%q},"override":{"force_recovery":{"value":true}}}`, first.Offset, first.Epoch), nil)
	p := c.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.Subscribe != nil && p.Channel == "opts" })
	jsonEq(t, p.Subscribe.Data, `{"hello":true}`)
	if !p.Subscribe.Recoverable || p.Subscribe.Offset != first.Offset {
		t.Fatalf("subscribe push %+v, want recoverable at offset %d", p.Subscribe, first.Offset)
	}
	pubs := c.WaitPubs("opts", 2)
	jsonEq(t, pubs[0].Data, `{"n":2}`)
	jsonEq(t, pubs[1].Data, `{"n":3}`)

	var pres struct {
		Presence map[string]struct {
			ChanInfo json.RawMessage `json:"chan_info"`
		} `json:"presence"`
	}
	e.call("presence", `{"channel":"opts"}`, &pres)
	if len(pres.Presence) != 1 {
		t.Fatalf("presence %+v", pres)
	}
	for _, ci := range pres.Presence {
		jsonEq(t, ci.ChanInfo, `{"seat":4}`)
	}

	// b64info/b64data, and presence turned off for this subscriber.
	e.call("subscribe", `{"user":"erin","channel":"opts2","b64data":"eyJiIjoxfQ==","b64info":"eyJzIjoxfQ==",
		"override":{"presence":{"value":false}}}`, nil)
	p = c.WaitPush("subscribe push", func(p *protocol.Push) bool { return p.Subscribe != nil && p.Channel == "opts2" })
	jsonEq(t, p.Subscribe.Data, `{"b":1}`)
	var ps presenceStats
	e.call("presence_stats", `{"channel":"opts2"}`, &ps)
	if ps.NumClients != 0 {
		t.Fatalf("presence with the override off: %+v", ps)
	}

	for _, body := range []string{
		`{"user":"erin","channel":"x","b64info":"%%"}`,
		`{"user":"erin","channel":"x","b64data":"%%"}`,
		`{"user":"erin","channel":"x","expire_at":-1}`,
	} {
		if got := e.callErr("subscribe", body); got != 107 {
			t.Errorf("subscribe %s: error %d, want 107", body, got)
		}
	}
}
