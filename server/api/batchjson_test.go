package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// decodeBatchReference reads a batch as the API did with encoding/json
// alone, which readBatchJSON must agree with.
func decodeBatchReference(b []byte) (cmds []map[string]json.RawMessage, parallel bool, err error) {
	var req struct {
		Commands []map[string]json.RawMessage `json:"commands"`
		Parallel bool                         `json:"parallel"`
	}
	err = decode(b, &req)
	return req.Commands, req.Parallel, err
}

var batchJSONSeeds = []string{
	`{"commands":[{"publish":{"channel":"a","data":{"x":"}]\"{["}}},{"info":{}}],"parallel":true}`,
	` { "parallel" : false , "commands" : [ { "info" : { } } , null ] } `,
	`{"commands":[]}`,
	`{"commands":null}`,
	`{}`,
	`null`,
	`[1]`,
	`"batch"`,
	`{"commands":{"info":{}}}`,
	`{"commands":[1]}`,
	`{"commands":["x"]}`,
	`{"commands":[{}]}`,
	`{"commands":[{"info":{},"publish":{}}]}`,
	`{"commands":[{"info":{"a":1},"info":{"b":2}}]}`,
	`{"Commands":[{"info":{}}],"PARALLEL":true}`,
	`{"comm\u0061nds":[{"pub\u006cish":{"channel":"\u00e9"}}]}`,
	`{"commands":[{"info":{}}],"commands":[{"publish":{}}]}`,
	`{"parallel":"yes","commands":[]}`,
	`{"parallel":1}`,
	`{"parallel":null,"other":[{"x":"]"}],"commands":[{"a":[1,2,{"b":"\\"}]}]}`,
	`{"commands":[{"publish":{"channel":"a","data":"\\\\"}}]}`,
	`{"parallel":true,"parallel":null,"commands":[]}`,
	`{"commands":[{"info":{}}],"commands":null}`,
}

// TestReadBatchJSON: readBatchJSON reads the seeds as encoding/json does:
// the same commands, flag and error messages.
func TestReadBatchJSON(t *testing.T) {
	for _, s := range batchJSONSeeds {
		checkBatchJSON(t, []byte(s))
	}
}

func FuzzReadBatchJSON(f *testing.F) {
	fuzzValidJSON(f, batchJSONSeeds, checkBatchJSON)
}

// fuzzValidJSON fuzzes check with valid JSON, starting from seeds.
func fuzzValidJSON(f *testing.F, seeds []string, check func(t *testing.T, b []byte)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			t.Skip("the API refuses JSON that is not valid before reading it")
		}
		check(t, b)
	})
}

func checkBatchJSON(t *testing.T, b []byte) {
	t.Helper()
	if repeatsCommands(b) {
		// encoding/json merges a repeated commands member into the
		// earlier one, element by element; readBatchJSON takes the
		// last, as for any other repeated member.
		return
	}
	want, wantParallel, wantErr := decodeBatchReference(b)
	got, err := readBatchJSON(b)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("%s: error %v, want %v", b, err, wantErr)
	}
	if err != nil {
		return
	}
	if got.Parallel != wantParallel || len(got.raw) != len(want) {
		t.Fatalf("%s: %d commands, parallel %v; want %d, %v", b, len(got.raw), got.Parallel, len(want), wantParallel)
	}
	for i, c := range got.raw {
		if c.keys != len(want[i]) {
			t.Fatalf("%s: command %d names %d methods, want %d", b, i, c.keys, len(want[i]))
		}
		if c.keys != 1 {
			continue
		}
		if body, ok := want[i][c.name]; !ok || string(body) != string(c.body) {
			t.Fatalf("%s: command %d is %s %s, want %v", b, i, c.name, c.body, want[i])
		}
	}
}

// repeatsCommands reports whether b is an object with more than one
// commands member.
func repeatsCommands(b []byte) bool {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return false
	}
	n := 0
	_ = eachMember(b, i, func(key string, _ []byte) error {
		if strings.EqualFold(key, "commands") {
			n++
		}
		return nil
	})
	return n > 1
}

// TestBatchResultJSON: the batch replies written by hand are what
// encoding/json writes.
func TestBatchResultJSON(t *testing.T) {
	replies := []Reply{
		{Method: "publish", Result: PublishResult{Offset: 7, Epoch: "abc"}},
		{Method: "publish", Result: PublishResult{}},
		{Method: "publish", Result: PublishResult{Offset: 1}},
		{Method: "publish", Result: PublishResult{Epoch: "<e&\"é\\\n>"}},
		{Method: "broadcast", Result: BroadcastResult{Responses: []PublishResponse{{Result: &PublishResult{Offset: 2, Epoch: "e"}}}}},
		{Method: "info", Error: &Error{100, "internal <error>"}},
		{Method: "presence_stats", Result: PresenceStatsResult{NumClients: 3, NumUsers: 2}},
	}
	var want []byte
	want = append(want, `{"replies":[`...)
	for i, r := range replies {
		var v any = map[string]any{r.Method: r.Result}
		if r.Error != nil {
			v = map[string]any{"error": r.Error}
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			want = append(want, ',')
		}
		want = append(want, b...)
	}
	want = append(want, "]}"...)
	got, err := BatchResult{Replies: replies}.appendJSON(nil)
	if err != nil || string(got) != string(want) {
		t.Fatalf("got %s (%v),\nwant %s", got, err, want)
	}
}

// TestReadAll: a body is read whole whatever length the request declared.
func TestReadAll(t *testing.T) {
	body := strings.Repeat("x", 3000)
	for _, declared := range []int64{-1, 0, 1, 2999, 3000, 3001, 1 << 30} {
		got, err := readAll(strings.NewReader(body), declared, 1<<20)
		if err != nil || string(got) != body {
			t.Errorf("declared %d: read %d bytes, %v; want %d", declared, len(got), err, len(body))
		}
	}
}

// TestBroadcastResultJSON: broadcast responses written by hand are what
// encoding/json writes, alone and as the result of an HTTP call.
func TestBroadcastResultJSON(t *testing.T) {
	for _, r := range []BroadcastResult{
		{},
		{Responses: []PublishResponse{}},
		{Responses: []PublishResponse{
			{Result: &PublishResult{Offset: 3, Epoch: "e<>"}},
			{Result: &PublishResult{}},
			{Error: &Error{102, "unknown channel"}},
			{},
			{Result: &PublishResult{Epoch: "x"}, Error: &Error{100, "both & more"}},
		}},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.appendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Errorf("got %s (%v),\nwant %s", got, err, want)
		}
		rec := httptest.NewRecorder()
		(&Handler{}).send(rec, "broadcast", http.StatusOK, &reply{Result: r})
		var wantBody bytes.Buffer
		if err := json.NewEncoder(&wantBody).Encode(&reply{Result: r}); err != nil {
			t.Fatal(err)
		}
		if rec.Body.String() != wantBody.String() {
			t.Errorf("HTTP body %s,\nwant %s", rec.Body, wantBody.String())
		}
	}
}

// TestAppendResponse: the responses that write their own JSON are
// written by hand, byte for byte as json.Encoder writes them; the others
// are left to encoding/json.
func TestAppendResponse(t *testing.T) {
	batch := BatchResult{Replies: []Reply{{Method: "publish", Result: &PublishResult{Offset: 1}}}}
	broadcast := BroadcastResult{Responses: []PublishResponse{{Result: &PublishResult{Epoch: "e"}}}}
	for _, c := range []struct {
		name   string
		body   any
		byHand bool
	}{
		{"batch", batch, true},
		{"broadcast in a reply", &reply{Result: broadcast}, true},
		{"reply with an error", &reply{Result: broadcast, Error: &Error{100, "internal"}}, false},
		{"other result", &reply{Result: &PublishResult{Offset: 2}}, false},
		{"empty reply", &reply{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := appendResponse(c.body)
			if ok != c.byHand {
				t.Fatalf("written by hand: %v, want %v", ok, c.byHand)
			}
			if !ok {
				return
			}
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(c.body); err != nil {
				t.Fatal(err)
			}
			if string(got) != want.String() {
				t.Errorf("got %s,\nwant %s", got, want.String())
			}
		})
	}
}
