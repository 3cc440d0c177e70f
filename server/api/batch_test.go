package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/api"
)

// batchReply is one reply of a batch: the method's name holds its result,
// or "error" the error.
type batchReply map[string]json.RawMessage

func (e *env) batch(body string) []batchReply {
	e.t.Helper()
	status, b := e.post("batch", body)
	if status != http.StatusOK {
		e.t.Fatalf("batch: status %d: %.200s", status, b)
	}
	// As in the v6 API, the replies are the top-level object, not wrapped
	// in "result".
	var r struct {
		Replies []batchReply `json:"replies"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Fatalf("batch: decode %.200q: %v", b, err)
	}
	return r.Replies
}

func (r batchReply) errorCode(t *testing.T) uint32 {
	t.Helper()
	raw, ok := r["error"]
	if !ok {
		return 0
	}
	var e struct {
		Code uint32 `json:"code"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e.Code
}

func TestBatchSequential(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c, _ := e.dial("max")
	c.MustSubscribe("hist:seq")

	var cmds []string
	for i := range 50 {
		cmds = append(cmds, fmt.Sprintf(`{"publish":{"channel":"hist:seq","data":{"i":%d}}}`, i))
	}
	cmds = append(cmds,
		`{"history":{"channel":"hist:seq","limit":2,"reverse":true}}`,
		`{"publish":{"channel":"nope:x","data":{}}}`,
		`{"nope":{}}`,
		`{}`,
		`{"batch":{"commands":[]}}`,
		`{"presence_stats":{"channel":"hist:seq"}}`,
		`{"history_remove":{"channel":"hist:seq"}}`,
	)
	replies := e.batch(`{"commands":[` + strings.Join(cmds, ",") + `]}`)
	if len(replies) != len(cmds) {
		t.Fatalf("%d replies for %d commands", len(replies), len(cmds))
	}
	// Commands run in order: publishes take consecutive offsets, and
	// the history after them sees them all.
	for i := range 50 {
		var p publishResult
		if err := json.Unmarshal(replies[i]["publish"], &p); err != nil {
			t.Fatalf("reply %d: %v (%v)", i, err, replies[i])
		}
		if p.Offset != uint64(i+1) {
			t.Fatalf("reply %d: offset %d, want %d", i, p.Offset, i+1)
		}
	}
	var h historyResult
	if err := json.Unmarshal(replies[50]["history"], &h); err != nil {
		t.Fatalf("history reply: %v (%v)", err, replies[50])
	}
	if got := h.offsets(); !slices.Equal(got, []uint64{50, 49}) || h.Offset != 50 {
		t.Fatalf("history in batch: offsets %v top %d", got, h.Offset)
	}
	for i, want := range []uint32{102, 104, 107, 104, 108} {
		if got := replies[51+i].errorCode(t); got != want {
			t.Fatalf("reply %d: %v, want error %d", 51+i, replies[51+i], want)
		}
	}
	if string(replies[56]["history_remove"]) != "{}" {
		t.Fatalf("history_remove reply %v", replies[56])
	}
	pubs := c.WaitPubs("hist:seq", 50)
	for i, p := range pubs {
		if p.Offset != uint64(i+1) {
			t.Fatalf("publication %d arrived with offset %d", i, p.Offset)
		}
	}
}

// TestBatchPublishRuns: consecutive publishes to one channel are published
// together; a bad command among them, a publish to another channel or
// another method splits nothing that the replies or the subscribers could
// tell apart from one publish at a time.
func TestBatchPublishRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c, _ := e.dial("max")
	c.MustSubscribe("hist:a")
	cmds := []string{
		`{"publish":{"channel":"hist:a","data":{"i":0}}}`,
		`{"publish":{"channel":"hist:a","data":{"i":1}}}`,
		`{"publish":{"channel":"hist:a"}}`,
		`{"publish":{"channel":"hist:a","data":{"i":3}}}`,
		`{"publish":{"channel":"hist:b","data":{"i":4}}}`,
		`{"publish":{"channel":"hist:a","data":{"i":5}}}`,
		`{"history":{"channel":"hist:a","limit":-1}}`,
		`{"publish":{"channel":"hist:a","data":{"i":7},"idempotency_key":"k"}}`,
		`{"publish":{"channel":"hist:a","data":{"i":8},"idempotency_key":"k"}}`,
		`{"publish":{"channel":"nope:a","data":{"i":9}}}`,
		`{"publish":{"channel":"hist:a","data":{"i":10}}}`,
	}
	replies := e.batch(`{"commands":[` + strings.Join(cmds, ",") + `]}`)
	if len(replies) != len(cmds) {
		t.Fatalf("%d replies for %d commands", len(replies), len(cmds))
	}
	wantOffsets := map[int]uint64{0: 1, 1: 2, 3: 3, 4: 1, 5: 4, 7: 5, 8: 5, 10: 6}
	wantErrors := map[int]uint32{2: 107, 9: 102}
	for i, r := range replies {
		if code, ok := wantErrors[i]; ok {
			if got := r.errorCode(t); got != code {
				t.Fatalf("reply %d: %v, want error %d", i, r, code)
			}
			continue
		}
		if i == 6 {
			var h historyResult
			if err := json.Unmarshal(r["history"], &h); err != nil {
				t.Fatalf("history reply: %v (%v)", err, r)
			}
			if got := h.offsets(); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
				t.Fatalf("history between runs: offsets %v, want 1 to 4", got)
			}
			continue
		}
		var p publishResult
		if err := json.Unmarshal(r["publish"], &p); err != nil || p.Offset != wantOffsets[i] {
			t.Fatalf("reply %d: %v, want offset %d", i, r, wantOffsets[i])
		}
	}
	var got []string
	for _, p := range c.WaitPubs("hist:a", 6) {
		got = append(got, string(p.Data))
	}
	want := []string{`{"i":0}`, `{"i":1}`, `{"i":3}`, `{"i":5}`, `{"i":7}`, `{"i":10}`}
	if !slices.Equal(got, want) {
		t.Fatalf("subscriber got %v, want %v", got, want)
	}
}

func TestBatchParallel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	const n = 100
	var cmds []string
	for i := range n {
		if i%2 == 0 {
			cmds = append(cmds, `{"publish":{"channel":"hist:par","data":{}}}`)
		} else {
			cmds = append(cmds, `{"presence":{"channel":"nope:x"}}`)
		}
	}
	replies := e.batch(`{"parallel":true,"commands":[` + strings.Join(cmds, ",") + `]}`)
	if len(replies) != n {
		t.Fatalf("%d replies for %d commands", len(replies), n)
	}
	// Replies stay in command order whatever order the commands ran in.
	var offsets []uint64
	for i, r := range replies {
		if i%2 == 1 {
			if got := r.errorCode(t); got != 102 {
				t.Fatalf("reply %d: %v, want error 102", i, r)
			}
			continue
		}
		var p publishResult
		if err := json.Unmarshal(r["publish"], &p); err != nil {
			t.Fatalf("reply %d: %v (%v)", i, err, r)
		}
		offsets = append(offsets, p.Offset)
	}
	slices.Sort(offsets)
	for i, o := range offsets {
		if o != uint64(i+1) {
			t.Fatalf("publish offsets %v, want 1..%d once each", offsets, n/2)
		}
	}
}

func TestBatchEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	status, b := e.post("batch", `{"commands":[]}`)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	jsonEq(t, b, `{"replies":[]}`)
}

func TestBatchRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{MaxBatchSize: 10})
	over := `{"commands":[` + strings.TrimSuffix(strings.Repeat(`{"info":{}},`, 11), ",") + `]}`
	tests := []struct {
		name string
		body string
	}{
		{"over the limit", over},
		{"commands not a list", `{"commands":{"info":{}}}`},
		{"command not an object", `{"commands":[1]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A batch response has no error field, so whatever the error
			// mode a batch that cannot run gets 400 and the bare error.
			status, b := e.post("batch", tt.body)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", status, b)
			}
			var r struct {
				Code uint32 `json:"code"`
			}
			if err := json.Unmarshal(b, &r); err != nil || r.Code != 107 {
				t.Fatalf("body %s, want error 107", b)
			}
		})
	}
	if got := len(e.batch(`{"commands":[` + strings.TrimSuffix(strings.Repeat(`{"info":{}},`, 10), ",") + `]}`)); got != 10 {
		t.Fatalf("%d replies at the limit, want 10", got)
	}
}

// TestBatchHuge runs the largest batch allowed by default and checks that
// the memory it took is given back.
func TestBatchHuge(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 commands")
	}
	e := newEnv(t, api.Config{})
	const n = 100_000
	var sb strings.Builder
	sb.WriteString(`{"commands":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"publish":{"channel":"plain:big%d","data":{"i":%d}}}`, i%100, i)
	}
	sb.WriteString(`]}`)
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			if parallel && raceEnabled {
				t.Skip("too slow under the race detector; TestBatchParallel covers parallel batches")
			}
			body := sb.String()
			if parallel {
				body = `{"parallel":true,` + body[1:]
			}
			before := heapInUse()
			replies := e.batch(body)
			if len(replies) != n {
				t.Fatalf("%d replies, want %d", len(replies), n)
			}
			for i, r := range replies {
				if _, ok := r["publish"]; !ok {
					t.Fatalf("reply %d: %v", i, r)
				}
			}
			replies = nil
			after := heapInUse()
			// The body alone is about 5 MB, and its decoded commands and
			// replies take several times that: keeping them would pass
			// this bound. The noise seen is under 1 MB.
			const bound = 8 << 20
			if after > before+bound {
				t.Fatalf("heap grew from %d to %d bytes", before, after)
			}
			t.Logf("heap in use before %d KiB, after %d KiB", before>>10, after>>10)
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestBatchBroadcasts: broadcasts in a batch, one starting a stretch and
// one after a publish, each with channels that fail, and a stretch after
// another command: every channel gets its own response and every
// subscriber its publication, in order.
func TestBatchBroadcasts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c, _ := e.dial("bea")
	for _, ch := range []string{"hist:x", "plain:y", "hist:z"} {
		c.MustSubscribe(ch)
	}
	cmds := []string{
		`{"broadcast":{"channels":["nope:a","hist:x","","plain:y"],"data":{"i":0}}}`,
		`{"publish":{"channel":"hist:x","data":{"i":1}}}`,
		`{"broadcast":{"channels":["hist:x","nope:b","hist:z"],"data":{"i":2}}}`,
		`{"info":{}}`,
		`{"broadcast":{"channels":["plain:y","hist:z"],"data":{"i":3}}}`,
	}
	replies := e.batch(`{"commands":[` + strings.Join(cmds, ",") + `]}`)
	if len(replies) != len(cmds) {
		t.Fatalf("%d replies for %d commands", len(replies), len(cmds))
	}
	type response struct {
		Result *publishResult `json:"result"`
		Error  *struct {
			Code uint32 `json:"code"`
		} `json:"error"`
	}
	broadcast := func(i int) []response {
		var out struct {
			Responses []response `json:"responses"`
		}
		if err := json.Unmarshal(replies[i]["broadcast"], &out); err != nil {
			t.Fatalf("reply %d: %v (%v)", i, err, replies[i])
		}
		return out.Responses
	}
	// An offset for a channel with history, 0 for one without, or an
	// error code (as a negative number).
	check := func(i int, want ...int) {
		t.Helper()
		got := broadcast(i)
		if len(got) != len(want) {
			t.Fatalf("reply %d: %d responses, want %d", i, len(got), len(want))
		}
		for k, w := range want {
			switch r := got[k]; {
			case w < 0 && (r.Error == nil || r.Error.Code != uint32(-w)):
				t.Fatalf("reply %d, channel %d: %+v, want error %d", i, k, r, -w)
			case w >= 0 && (r.Result == nil || r.Result.Offset != uint64(w)):
				t.Fatalf("reply %d, channel %d: %+v, want offset %d", i, k, r, w)
			}
		}
	}
	check(0, -102, 1, -107, 0)
	var p publishResult
	if err := json.Unmarshal(replies[1]["publish"], &p); err != nil || p.Offset != 2 {
		t.Fatalf("publish reply %v, want offset 2", replies[1])
	}
	check(2, 3, -102, 1)
	check(4, 0, 2)
	for ch, want := range map[string][]string{
		"hist:x":  {`{"i":0}`, `{"i":1}`, `{"i":2}`},
		"plain:y": {`{"i":0}`, `{"i":3}`},
		"hist:z":  {`{"i":2}`, `{"i":3}`},
	} {
		var got []string
		for _, pub := range c.WaitPubs(ch, len(want)) {
			got = append(got, string(pub.Data))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: subscriber got %v, want %v", ch, got, want)
		}
	}
}
