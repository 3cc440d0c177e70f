package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/api"
)

// isPollChannel tells the executor the shared-poll channels of
// testChannels, as the server tells it those of its config.
func isPollChannel(channel string) bool {
	for _, ns := range []string{"poll:", "vpoll:", "rpoll:"} {
		if strings.HasPrefix(channel, ns) {
			return true
		}
	}
	return false
}

// TestSharedPollPublishErrors: what shared_poll_publish refuses, and with
// which code; what it accepts answers an empty result.
func TestSharedPollPublishErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{SharedPoll: isPollChannel})
	for _, tc := range []struct {
		name, body string
		code       uint32
		message    string
	}{
		{"set", `{"channel":"poll:p","key":"k","data":{"v":1},"version":1,"epoch":"e1"}`, 0, ""},
		{"b64data", `{"channel":"poll:p","key":"k","b64data":"eyJ2IjoyfQ==","version":2}`, 0, ""},
		{"b64data wins", `{"channel":"poll:p","key":"k","data":{"v":1},"b64data":"eyJ2IjozfQ==","version":3}`, 0, ""},
		{"no data", `{"channel":"poll:p","key":"k","version":4}`, 0, ""},
		{"no channel", `{"key":"k","data":1,"version":1}`, 107, "channel required"},
		{"no key", `{"channel":"poll:p","data":1,"version":1}`, 107, "key required"},
		{"no version", `{"channel":"poll:p","key":"k","data":1}`, 107, "version required"},
		{"version 0", `{"channel":"poll:p","key":"k","data":1,"version":0}`, 107, "version required"},
		{"negative version", `{"channel":"poll:p","key":"k","data":1,"version":-1}`, 107, "version"},
		{"key of the wrong type", `{"channel":"poll:p","key":1,"data":1,"version":1}`, 107, "key: number is not a string"},
		{"bad b64data", `{"channel":"poll:p","key":"k","b64data":"%%","version":1}`, 107, "b64data"},
		{"stream channel", `{"channel":"plain:p","key":"k","data":1,"version":1}`, 107, "not a shared_poll channel"},
		{"map channel", `{"channel":"map:m","key":"k","data":1,"version":1}`, 107, "not a shared_poll channel"},
		{"unknown namespace", `{"channel":"nope:p","key":"k","data":1,"version":1}`, 102, ""},
		{"publish not enabled", `{"channel":"rpoll:p","key":"k","data":1,"version":1}`, 108, "publish_enabled"},
		{"versionless", `{"channel":"vpoll:p","key":"k","data":1,"version":1}`, 108, "publish_enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, b := e.post("shared_poll_publish", tc.body)
			var r apiReply
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			var code uint32
			var msg string
			if r.Error != nil {
				code, msg = r.Error.Code, r.Error.Message
			}
			if code != tc.code || !strings.Contains(msg, tc.message) {
				t.Fatalf("%s: %s; want code %d with %q", tc.body, b, tc.code, tc.message)
			}
			if code == 0 {
				jsonEq(t, b, `{"result":{}}`)
			}
		})
	}
}

// TestPublishRefusesSharedPoll: publish and broadcast do not publish into
// shared-poll channels, alone or in a batch; the other channels of a
// broadcast or batch are published.
func TestPublishRefusesSharedPoll(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{SharedPoll: isPollChannel})
	if code := e.callErr("publish", `{"channel":"poll:p","data":{}}`); code != 107 {
		t.Errorf("publish into a shared-poll channel: code %d, want 107", code)
	}
	var res struct {
		Responses []struct {
			Error *struct {
				Code    uint32 `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			Result json.RawMessage `json:"result"`
		} `json:"responses"`
	}
	e.call("broadcast", `{"channels":["poll:a","plain:b","","vpoll:c"],"data":{}}`, &res)
	if len(res.Responses) != 4 {
		t.Fatalf("broadcast: %d responses, want 4", len(res.Responses))
	}
	for i, want := range []uint32{107, 0, 107, 107} {
		r := res.Responses[i]
		switch {
		case want == 0 && (r.Error != nil || r.Result == nil):
			t.Errorf("broadcast response %d: %+v, want a result", i, r)
		case want != 0 && (r.Error == nil || r.Error.Code != want):
			t.Errorf("broadcast response %d: %+v, want error %d", i, r, want)
		}
	}
	if msg := res.Responses[0].Error.Message; !strings.Contains(msg, "shared_poll") {
		t.Errorf("broadcast into a shared-poll channel: %q does not say why", msg)
	}
	replies := e.batch(`{"commands":[
		{"publish":{"channel":"plain:x","data":{}}},
		{"publish":{"channel":"poll:x","data":{}}},
		{"shared_poll_publish":{"channel":"poll:x","key":"k","data":1,"version":1}},
		{"publish":{"channel":"plain:x","data":{}}}]}`)
	if len(replies) != 4 {
		t.Fatalf("batch: %d replies, want 4", len(replies))
	}
	for i, want := range []uint32{0, 107, 0, 0} {
		if got := replies[i].errorCode(t); got != want {
			t.Errorf("batch reply %d: code %d, want %d", i, got, want)
		}
	}
	if _, ok := replies[2]["shared_poll_publish"]; !ok {
		t.Errorf("batch reply 2: %v, want a shared_poll_publish result", replies[2])
	}
}
