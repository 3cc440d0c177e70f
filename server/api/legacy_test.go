package api_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/server/api"
)

// postLegacy sends body to /api (the legacy form: no method in the path)
// with the test key.
func (e *env) postLegacy(body string, header ...string) (int, []byte) {
	e.t.Helper()
	return e.postPath("/api", body, header...)
}

// legacyReply is one reply of the legacy form.
type legacyReply struct {
	ID     uint32          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    uint32 `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// legacy posts body to /api and decodes the replies, one a line.
func (e *env) legacy(body string) []legacyReply {
	e.t.Helper()
	status, b := e.postLegacy(body)
	if status != http.StatusOK {
		e.t.Fatalf("status %d: %.300s", status, b)
	}
	var out []legacyReply
	for line := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
		var r legacyReply
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			e.t.Fatalf("reply line %q: %v (body %.300q)", line, err, b)
		}
		out = append(out, r)
	}
	return out
}

func (r legacyReply) code() uint32 {
	if r.Error == nil {
		return 0
	}
	return r.Error.Code
}

// TestLegacyEveryMethod: every method of the API answers the same through
// the legacy form as through its own path.
func TestLegacyEveryMethod(t *testing.T) {
	t.Parallel()
	e := newMapEnv(t, api.Config{RPC: echoRPC})
	c, _ := e.dial("42")
	c.MustSubscribe("pres:room")
	e.call("publish", `{"channel":"hist:h","data":{"n":1}}`, nil)
	e.call("map_publish", `{"channel":"map:m","key":"a","data":{"n":1}}`, nil)

	// Requests whose answer is the same when asked twice.
	requests := map[string]string{
		"publish":        `{"channel":"plain:p","data":{}}`,
		"broadcast":      `{"channels":["plain:a","nope:b"],"data":{}}`,
		"subscribe":      `{"user":"nobody","channel":"plain:s"}`,
		"unsubscribe":    `{"user":"nobody","channel":"plain:s"}`,
		"disconnect":     `{"user":"nobody"}`,
		"refresh":        `{"user":"nobody","expire_at":1900000000}`,
		"presence":       `{"channel":"pres:room"}`,
		"presence_stats": `{"channel":"pres:room"}`,
		"history":        `{"channel":"hist:h","limit":-1}`,
		"history_remove": `{"channel":"plain:x"}`,
		"channels":       `{"pattern":"pres:*"}`,
		"info":           `{}`,
		"rpc":            `{"method":"echo","params":{"x":1}}`,
		// Writes and removals that change nothing: suppressed with the
		// same top both times.
		"map_publish":     `{"channel":"map:m","key":"none","data":{},"key_mode":"if_exists"}`,
		"map_remove":      `{"channel":"map:m","key":"none"}`,
		"map_read_state":  `{"channel":"map:m","limit":10}`,
		"map_read_stream": `{"channel":"map:m","limit":10}`,
		"map_stats":       `{"channel":"map:m"}`,
		"map_clear":       `{"channel":"map:cleared"}`,
		// Sent to a key nobody tracks: the same empty result twice.
		"shared_poll_publish": `{"channel":"poll:p","key":"k","data":{"v":1},"version":1}`,
		"batch":               `{"commands":[{"presence_stats":{"channel":"pres:room"}},{"nope":{}}]}`,
	}
	for _, m := range api.MethodNames() {
		if _, ok := requests[m]; !ok {
			t.Errorf("method %s is not covered", m)
		}
	}
	for method, params := range requests {
		t.Run(method, func(t *testing.T) {
			status, want := e.post(method, params)
			if status != http.StatusOK {
				t.Fatalf("/api/%s: status %d: %s", method, status, want)
			}
			replies := e.legacy(`{"method":"` + method + `","params":` + params + `}`)
			if len(replies) != 1 || replies[0].Error != nil {
				t.Fatalf("legacy %s: %+v", method, replies)
			}
			got := replies[0].Result
			if method == "batch" {
				// /api/batch answers its replies bare, the legacy
				// form wraps every answer in "result".
				want = []byte(`{"result":` + string(bytes.TrimSpace(want)) + `}`)
			}
			var w apiReply
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if method == "info" {
				got, w.Result = dropUptime(t, got), dropUptime(t, w.Result)
			}
			jsonEq(t, got, string(w.Result))
		})
	}
}

// dropUptime removes the uptime and the metrics of an info result, which
// may tick between two calls.
func dropUptime(t *testing.T, b []byte) []byte {
	t.Helper()
	var r map[string][]map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, n := range r["nodes"] {
		delete(n, "uptime")
		delete(n, "metrics")
	}
	out, _ := json.Marshal(r)
	return out
}

func TestLegacyAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	const body = `{"method":"info","params":{}}`
	for _, tt := range []struct {
		name   string
		path   string
		header [2]string
		want   int
	}{
		{"X-API-Key", "/api", [2]string{"X-API-Key", testKey}, 200},
		{"Authorization apikey", "/api", [2]string{"Authorization", "apikey " + testKey}, 200},
		{"query api_key", "/api?api_key=" + testKey, [2]string{}, 200},
		{"trailing slash", "/api/", [2]string{"X-API-Key", testKey}, 200},
		{"missing", "/api", [2]string{}, 401},
		{"wrong", "/api", [2]string{"Authorization", "apikey nope"}, 401},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+tt.path, strings.NewReader(body))
			if tt.header[0] != "" {
				req.Header.Set(tt.header[0], tt.header[1])
			}
			status, b := do(t, req)
			if status != tt.want {
				t.Fatalf("status %d, want %d: %s", status, tt.want, b)
			}
			if status == 200 && !strings.HasPrefix(string(b), `{"result":{"nodes":[`) {
				t.Fatalf("body %s", b)
			}
		})
	}
}

// TestLegacyBatch: several commands in one body, one a line (as gocent and
// cent 4 send them), are answered one reply a line, in order, with their
// ids; blank lines and commands over several lines are whitespace between
// commands.
func TestLegacyBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c, _ := e.dial("max")
	c.MustSubscribe("lb")
	body := `{"method":"publish","params":{"channel":"lb","data":{"i":0}}}` + "\n" +
		`{"id":7,"method":"publish","params":{"channel":"lb","data":{"i":1}}}` + "\r\n\n" +
		"{\n  \"method\": \"publish\",\n  \"params\": {\"channel\": \"lb\", \"data\": {\"i\": 2}}\n}\n" +
		`{"id":8,"method":"nope","params":{}}` + "\n" +
		`{"method":"presence_stats","params":{"channel":"lb"}}` + "\n" +
		`{"method":"history","params":{"channel":"lb","limit":-1}}` + "\n" +
		`{"method":"batch","params":{"commands":[]}}` + "\n" +
		`{"method":"publish"}` + "\n"
	replies := e.legacy(body)
	if len(replies) != 8 {
		t.Fatalf("%d replies for 8 commands: %+v", len(replies), replies)
	}
	for i := range 3 {
		var p publishResult
		if err := json.Unmarshal(replies[i].Result, &p); err != nil || p.Offset != uint64(i+1) {
			t.Fatalf("reply %d: %+v (%v), want offset %d", i, replies[i], err, i+1)
		}
	}
	if replies[1].ID != 7 || replies[3].ID != 8 || replies[0].ID != 0 {
		t.Fatalf("ids %d, %d, %d; want 0, 7, 8", replies[0].ID, replies[1].ID, replies[3].ID)
	}
	if replies[3].code() != 104 {
		t.Fatalf("unknown method: %+v, want error 104", replies[3])
	}
	jsonEq(t, replies[4].Result, `{"num_clients":1,"num_users":1}`)
	var h struct {
		Publications []struct {
			Data json.RawMessage `json:"data"`
		} `json:"publications"`
	}
	if err := json.Unmarshal(replies[5].Result, &h); err != nil || len(h.Publications) != 3 {
		t.Fatalf("history %s: %v", replies[5].Result, err)
	}
	// A body of several commands is a batch; a batch in it is a batch
	// within a batch.
	if replies[6].code() != 104 {
		t.Fatalf("batch in a legacy batch: %+v, want error 104", replies[6])
	}
	if replies[7].code() != 107 {
		t.Fatalf("publish without params: %+v, want error 107", replies[7])
	}
	// The subscriber got the publications in order.
	for i, p := range c.WaitPubs("lb", 3) {
		jsonEq(t, p.Data, `{"i":`+itoa(i)+`}`)
	}
}

// TestLegacyForms: the variants of one command that older clients send.
func TestLegacyForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	tests := []struct {
		name, body string
		code       uint32
	}{
		{"lower case", `{"method":"info","params":{}}`, 0},
		{"upper case, as protobuf JSON names the enum", `{"method":"INFO","params":{}}`, 0},
		{"number of the enum: publish", `{"method":0,"params":{"channel":"plain:n","data":{}}}`, 0},
		{"number of the enum: info", `{"method":9,"params":{}}`, 0},
		{"without params", `{"method":"info"}`, 0},
		{"null params", `{"method":"info","params":null}`, 0},
		{"with a trailing newline", "{\"method\":\"info\",\"params\":{}}\n", 0},
		{"batch alone", `{"method":"batch","params":{"commands":[{"info":{}}]}}`, 0},
		{"unknown fields", `{"method":"info","params":{},"uid":"x"}`, 0},
		{"unknown method", `{"method":"nope","params":{}}`, 104},
		{"a method Gyre does not have", `{"method":"connections","params":{}}`, 104},
		{"rpc by its number, without a hook", `{"method":10,"params":{"method":"m"}}`, 104},
		{"unknown number", `{"method":99,"params":{}}`, 104},
		{"no method", `{"params":{}}`, 104},
		{"empty object", `{}`, 104},
		{"method not a string", `{"method":true,"params":{}}`, 107},
		{"params not an object", `{"method":"publish","params":"x"}`, 107},
		{"id not a number", `{"id":"a","method":"info","params":{}}`, 107},
		{"missing field", `{"method":"publish","params":{"data":{}}}`, 107},
		{"unknown channel", `{"method":"publish","params":{"channel":"nope:x","data":{}}}`, 102},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.legacy(tt.body)
			if len(r) != 1 || r[0].code() != tt.code {
				t.Fatalf("replies %+v, want one with code %d", r, tt.code)
			}
			if tt.code != 0 && (r[0].Result != nil || r[0].Error.Message == "") {
				t.Fatalf("error reply %+v has a result or no message", r[0])
			}
		})
	}
}

// TestLegacyBadInput: what cannot be read as commands is refused as a
// whole, before any command runs, and logged.
func TestLegacyBadInput(t *testing.T) {
	t.Parallel()
	logs := &logtest.Recorder{}
	e := newEnv(t, api.Config{MaxBodySize: 4096, MaxBatchSize: 3, Logger: slog.New(logs)})
	// Every refusal gets its own line: a window of 0 starts over at each.
	api.SetFailureLogWindow(e.handler, 0)
	const publish = `{"method":"publish","params":{"channel":"hist:bad","data":{}}}`
	tests := []struct {
		name, body string
		status     int
		reason     string // in the log line and the response
	}{
		{"malformed JSON", `{"method":`, 400, "malformed"},
		{"malformed second command", publish + "\n" + `{"method":"publish",`, 400, "malformed"},
		{"garbage after a command", publish + " x", 400, "malformed"},
		{"a JSON array (the Centrifugo v1 form)", `[` + publish + `]`, 400, "array"},
		{"not an object", publish + "\n\"publish\"", 400, "object"},
		{"empty body", ``, 400, "no command"},
		{"blank lines only", "\n\n  \r\n", 400, "no command"},
		{"not UTF-8", "{\"method\":\"publish\",\"params\":{\"channel\":\"\xff\",\"data\":{}}}", 400, "UTF-8"},
		{"too many commands", strings.Repeat(publish+"\n", 4), 400, "too many"},
		{"body over the limit", `{"method":"publish","params":{"channel":"hist:bad","data":"` + strings.Repeat("x", 5000) + `"}}`, 413, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := e.postLegacy(tt.body)
			if status != tt.status || !strings.Contains(string(b), tt.reason) {
				t.Fatalf("status %d: %s; want %d and %q", status, b, tt.status, tt.reason)
			}
			found := false
			for _, r := range logs.Find(slog.LevelInfo, "", map[string]string{"status": itoa(tt.status)}) {
				if strings.Contains(r.Attr("reason"), tt.reason) && r.Attr("remote") != "" {
					found = true
				}
			}
			if !found {
				t.Fatalf("no info record with status %d, reason %q and the remote address", tt.status, tt.reason)
			}
		})
	}
	// Nothing ran: a body is refused before its first command.
	var top struct {
		Offset uint64 `json:"offset"`
	}
	e.call("history", `{"channel":"hist:bad"}`, &top)
	if top.Offset != 0 {
		t.Fatalf("refused bodies published %d times", top.Offset)
	}
	t.Run("too many commands is the batch's error object", func(t *testing.T) {
		_, b := e.postLegacy(strings.Repeat(publish+"\n", 4))
		var r struct{ Code uint32 }
		if err := json.Unmarshal(b, &r); err != nil || r.Code != 107 {
			t.Fatalf("body %s, want the error object of 107", b)
		}
	})
	t.Run("bad commands are logged", func(t *testing.T) {
		e.legacy(`{"method":"nope","params":{}}`)
		if len(logs.Find(slog.LevelInfo, "", map[string]string{"method": "nope"})) == 0 {
			t.Fatal("no info record naming the unknown method")
		}
	})
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestLegacyErrorModes: one command answers as /api/<method> does in both
// error modes, except that http_api.error_mode does not apply (as in
// Centrifugo, whose legacy clients read errors from a 200); several are a
// batch, whose replies carry their errors.
func TestLegacyErrorModes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	const bad = `{"method":"publish","params":{"channel":"nope:x","data":{}}}`
	status, b := e.postLegacy(bad, "X-Centrifugo-Error-Mode", "transport")
	var r struct{ Code uint32 }
	if status != http.StatusNotFound || json.Unmarshal(b, &r) != nil || r.Code != 102 {
		t.Fatalf("transport mode: status %d, body %s; want 404 and the bare error 102", status, b)
	}
	status, b = e.postLegacy(`{"method":"nope","params":{}}`, "X-Centrifugo-Error-Mode", "transport")
	if status != http.StatusNotFound || json.Unmarshal(b, &r) != nil || r.Code != 104 {
		t.Fatalf("transport mode, unknown method: status %d, body %s; want 404 and 104", status, b)
	}
	status, b = e.postLegacy(bad)
	if status != http.StatusOK || string(b) != `{"error":{"code":102,"message":"unknown channel"}}`+"\n" {
		t.Fatalf("default mode: status %d, body %q", status, b)
	}
	configured := newEnv(t, api.Config{TransportErrorMode: true})
	status, b = configured.postLegacy(bad)
	if status != http.StatusOK || string(b) != `{"error":{"code":102,"message":"unknown channel"}}`+"\n" {
		t.Fatalf("transport mode from the config: status %d, body %q; want the default mode", status, b)
	}
	status, b = e.postLegacy(bad+"\n"+bad, "X-Centrifugo-Error-Mode", "transport")
	if status != http.StatusOK || strings.Count(string(b), `"code":102`) != 2 {
		t.Fatalf("two commands in transport mode: status %d, body %s; want 200 and two replies", status, b)
	}
}

// TestLegacyOnCall: one command counts as its method, several as a batch.
func TestLegacyOnCall(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []string
	e := newEnv(t, api.Config{OnCall: func(method string, code uint32, _ time.Duration) {
		mu.Lock()
		calls = append(calls, method+":"+itoa(int(code)))
		mu.Unlock()
	}})
	e.legacy(`{"method":"publish","params":{"channel":"plain:a","data":{}}}`)
	e.legacy(`{"method":"publish","params":{"channel":"nope:a","data":{}}}`)
	e.legacy(`{"method":"info"}` + "\n" + `{"method":"info"}`)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"publish:0", "publish:102", "batch:0"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
}
