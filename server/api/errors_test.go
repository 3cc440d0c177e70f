package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/api"
)

// errorCases produce each error code that has its own HTTP status in the
// transport error mode.
var errorCases = []struct {
	name, method, body string
	code               uint32
	status             int
}{
	{"unknown channel", "publish", `{"channel":"nope:x","data":{}}`, 102, http.StatusNotFound},
	{"bad request", "publish", `{"data":{}}`, 107, http.StatusBadRequest},
	{"wrong type", "history", `{"channel":true}`, 107, http.StatusBadRequest},
	{"publish into a pattern", "publish", `{"channel":"wild:a.*","data":{}}`, 107, http.StatusBadRequest},
	{"history of a pattern", "history", `{"channel":"wild:>","limit":1}`, 107, http.StatusBadRequest},
	{"not available", "history", `{"channel":"plain:x","limit":1}`, 108, http.StatusBadRequest},
	{"unrecoverable position", "history", `{"channel":"hist:x","limit":1,"since":{"offset":7,"epoch":"gone"}}`, 112, http.StatusRequestedRangeNotSatisfiable},
}

func TestErrorModeDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			status, b := e.post(tt.method, tt.body)
			if status != http.StatusOK {
				t.Fatalf("status %d, want 200: %s", status, b)
			}
			var r apiReply
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if r.Error == nil || r.Error.Code != tt.code || r.Error.Message == "" || r.Result != nil {
				t.Fatalf("reply %s, want error %d", b, tt.code)
			}
		})
	}
}

func TestErrorModeTransport(t *testing.T) {
	t.Parallel()
	header := newEnv(t, api.Config{})
	configured := newEnv(t, api.Config{TransportErrorMode: true})
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			for _, post := range []func() (int, []byte){
				func() (int, []byte) { return header.post(tt.method, tt.body, "X-Centrifugo-Error-Mode", "transport") },
				func() (int, []byte) { return configured.post(tt.method, tt.body) },
			} {
				status, b := post()
				if status != tt.status {
					t.Fatalf("status %d, want %d: %s", status, tt.status, b)
				}
				// The body is the bare error object.
				var r struct {
					Code    uint32 `json:"code"`
					Message string `json:"message"`
				}
				if err := json.Unmarshal(b, &r); err != nil || r.Code != tt.code || r.Message == "" {
					t.Fatalf("body %s (%v), want error %d", b, err, tt.code)
				}
			}
		})
	}
	t.Run("unknown method", func(t *testing.T) {
		status, _ := header.post("nope", `{}`, "X-Centrifugo-Error-Mode", "transport")
		if status != http.StatusNotFound {
			t.Fatalf("status %d, want 404", status)
		}
	})
	t.Run("success", func(t *testing.T) {
		status, b := header.post("publish", `{"channel":"hist:ok","data":{}}`, "X-Centrifugo-Error-Mode", "transport")
		if status != http.StatusOK || !strings.HasPrefix(string(b), `{"result":{"offset":1,`) {
			t.Fatalf("status %d: %s", status, b)
		}
	})
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{MaxBodySize: 4096})
	tests := []struct {
		name   string
		method string
		body   string
		want   int
	}{
		{"malformed JSON", "publish", `{"channel":`, http.StatusBadRequest},
		{"trailing garbage", "publish", `{"channel":"a","data":{}} x`, http.StatusBadRequest},
		{"not UTF-8", "publish", "{\"channel\":\"\xff\",\"data\":{}}", http.StatusBadRequest},
		{"body over the limit", "publish", `{"channel":"a","data":"` + strings.Repeat("x", 5000) + `"}`, http.StatusRequestEntityTooLarge},
		{"unknown method", "nope", `{}`, http.StatusNotFound},
		// No method in the path is the legacy form, whose {} names no
		// method: error 104 in a 200 (see legacy_test.go).
		{"no method", "", `{}`, http.StatusOK},
		{"nested path", "publish/x", `{}`, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, b := e.post(tt.method, tt.body); status != tt.want {
				t.Fatalf("status %d, want %d: %s", status, tt.want, b)
			}
		})
	}
	t.Run("wrong types", func(t *testing.T) {
		for _, body := range []string{`[]`, `"publish"`, `{"channel":["a"],"data":{}}`, `{"channel":"a","data":{},"skip_history":"yes"}`} {
			if got := e.callErr("publish", body); got != 107 {
				t.Fatalf("%s: error %d, want 107", body, got)
			}
		}
	})
	t.Run("wrong type message", func(t *testing.T) {
		tests := []struct{ body, want string }{
			{`{"channel":1,"data":{}}`, "bad request: channel: number is not a string"},
			{`[]`, "bad request: the request must be a JSON object"},
			{`{"channel":"a","data":{},"tags":{"k":1}}`, "bad request: tags: number is not a string"},
			{`{"channel":"a","b64data":5}`, "bad request: b64data: number is not a string"},
		}
		for _, tt := range tests {
			_, b := e.post("publish", tt.body)
			var r apiReply
			if err := json.Unmarshal(b, &r); err != nil || r.Error == nil || r.Error.Message != tt.want {
				t.Fatalf("%s: reply %s, want message %q", tt.body, b, tt.want)
			}
		}
	})
	t.Run("unknown fields are ignored", func(t *testing.T) {
		if got := e.callErr("publish", `{"channel":"a","data":{},"future_field":1}`); got != 0 {
			t.Fatalf("error %d, want success", got)
		}
	})
	t.Run("GET", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/info", nil)
		req.Header.Set("X-API-Key", testKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
			t.Fatalf("status %d, Allow %q; want 405, POST", resp.StatusCode, resp.Header.Get("Allow"))
		}
	})
}

func TestOnCall(t *testing.T) {
	t.Parallel()
	type call struct {
		method string
		code   uint32
	}
	var mu sync.Mutex
	var calls []call
	e := newEnv(t, api.Config{OnCall: func(method string, code uint32, d time.Duration) {
		if d < 0 {
			t.Errorf("negative duration %v", d)
		}
		mu.Lock()
		calls = append(calls, call{method, code})
		mu.Unlock()
	}})
	e.post("publish", `{"channel":"a","data":{}}`)
	e.post("publish", `{"channel":"nope:a","data":{}}`)
	e.post("history", `{"channel":"plain:a"}`, "X-Centrifugo-Error-Mode", "transport")
	e.post("batch", `{"commands":[{"info":{}}]}`)
	want := []call{{"publish", 0}, {"publish", 102}, {"history", 108}, {"batch", 0}}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != len(want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Fatalf("calls %v, want %v", calls, want)
		}
	}
}

// TestReplyTemporary: consumers run a command again when it failed for a
// reason that passes: 100 (the broker), and 111 (publishes held back
// while a node is behind), also for one channel of a broadcast; never for
// a final error.
func TestReplyTemporary(t *testing.T) {
	for _, tc := range []struct {
		r    api.Reply
		want bool
	}{
		{api.Reply{Error: &api.Error{Code: 100}}, true},
		{api.Reply{Error: &api.Error{Code: 111}}, true},
		{api.Reply{Error: &api.Error{Code: 107}}, false},
		{api.Reply{Result: api.BroadcastResult{Responses: []api.PublishResponse{{}, {Error: &api.Error{Code: 111}}}}}, true},
		{api.Reply{Result: api.BroadcastResult{Responses: []api.PublishResponse{{Error: &api.Error{Code: 102}}}}}, false},
		{api.Reply{}, false},
	} {
		if got := tc.r.Temporary(); got != tc.want {
			t.Errorf("%+v: Temporary %v, want %v", tc.r, got, tc.want)
		}
	}
}
