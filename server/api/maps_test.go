package api_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/memory"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/api"
)

// newMapEnv is newEnv on a node with a memory MapBroker, so that the map
// namespaces of testChannels work.
func newMapEnv(t *testing.T, cfg api.Config) *env {
	t.Helper()
	mb, err := memory.NewMapBroker(memory.MapConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, cfg, gyre.Config{MapBroker: mb})
}

// mapUpdate is the result of map_publish and map_remove.
type mapUpdate struct {
	Offset         uint64 `json:"offset"`
	Epoch          string `json:"epoch"`
	Suppressed     bool   `json:"suppressed"`
	SuppressReason string `json:"suppress_reason"`
}

type mapEntry struct {
	Key     string            `json:"key"`
	Data    json.RawMessage   `json:"data"`
	Tags    map[string]string `json:"tags"`
	Offset  uint64            `json:"offset"`
	Score   int64             `json:"score"`
	Removed bool              `json:"removed"`
	Time    int64             `json:"time"`
}

type mapPage struct {
	Entries []mapEntry `json:"entries"`
	Offset  uint64     `json:"offset"`
	Epoch   string     `json:"epoch"`
	Cursor  string     `json:"cursor"`
}

// keysOf lists the keys of entries, "-" before the removed ones.
func keysOf(entries []mapEntry) string {
	var keys []string
	for _, m := range entries {
		k := m.Key
		if m.Removed {
			k = "-" + k
		}
		keys = append(keys, k)
	}
	return strings.Join(keys, ",")
}

// byKey sorts state entries by key: a broker may page in its own order.
func byKey(entries []mapEntry) []mapEntry {
	out := slices.Clone(entries)
	slices.SortFunc(out, func(a, b mapEntry) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// TestMapMethods: writes, removals and reads of a map channel, each
// answered with the channel's position, and what they did seen by the
// reads.
func TestMapMethods(t *testing.T) {
	t.Parallel()
	e := newMapEnv(t, api.Config{})
	var a, b mapUpdate
	before := time.Now().UnixMilli()
	e.call("map_publish", `{"channel":"map:m","key":"b","data":{"v":"b"},"tags":{"t":"1"},"score":7}`, &b)
	e.call("map_publish", `{"channel":"map:m","key":"a","b64data":"eyJ2IjoiYSJ9"}`, &a)
	if b.Offset != 1 || a.Offset != 2 || b.Epoch == "" || a.Epoch != b.Epoch || a.Suppressed {
		t.Fatalf("writes: %+v %+v", b, a)
	}

	var page mapPage
	e.call("map_read_state", `{"channel":"map:m","limit":-1}`, &page)
	page.Entries = byKey(page.Entries)
	if keysOf(page.Entries) != "a,b" || page.Offset != 2 || page.Epoch != a.Epoch || page.Cursor != "" {
		t.Fatalf("state: %+v", page)
	}
	eb := page.Entries[1]
	if string(eb.Data) != `{"v":"b"}` || eb.Tags["t"] != "1" || eb.Score != 7 || eb.Offset != 1 || eb.Time < before {
		t.Fatalf("entry b: %+v", eb)
	}
	if string(page.Entries[0].Data) != `{"v":"a"}` {
		t.Fatalf("entry a (from b64data): %s", page.Entries[0].Data)
	}
	e.call("map_read_state", `{"channel":"map:m","key":"b"}`, &page)
	if keysOf(page.Entries) != "b" {
		t.Fatalf("state of key b: %+v", page)
	}

	var rm mapUpdate
	e.call("map_remove", `{"channel":"map:m","key":"a"}`, &rm)
	if rm.Offset != 3 || rm.Suppressed {
		t.Fatalf("remove: %+v", rm)
	}
	var stream mapPage
	e.call("map_read_stream", `{"channel":"map:m","limit":-1}`, &stream)
	if keysOf(stream.Entries) != "b,a,-a" || stream.Offset != 3 {
		t.Fatalf("stream: %+v", stream)
	}
	e.call("map_read_stream", `{"channel":"map:m","since_offset":1,"since_epoch":"`+a.Epoch+`","limit":1}`, &stream)
	if keysOf(stream.Entries) != "a" || stream.Entries[0].Offset != 2 {
		t.Fatalf("stream after 1: %+v", stream)
	}

	var st struct {
		NumKeys *int `json:"num_keys"`
	}
	e.call("map_stats", `{"channel":"map:m"}`, &st)
	if st.NumKeys == nil || *st.NumKeys != 1 {
		t.Fatalf("stats: %+v", st)
	}

	t.Run("suppressed", func(t *testing.T) {
		for _, tc := range []struct {
			method, body, reason string
		}{
			{"map_publish", `{"channel":"map:m","key":"b","data":1,"key_mode":"if_new"}`, "key_exists"},
			{"map_publish", `{"channel":"map:m","key":"zz","data":1,"key_mode":"if_exists"}`, "key_not_found"},
			{"map_remove", `{"channel":"map:m","key":"zz"}`, "key_not_found"},
		} {
			var r mapUpdate
			e.call(tc.method, tc.body, &r)
			if !r.Suppressed || r.SuppressReason != tc.reason || r.Offset != 3 {
				t.Errorf("%s %s: %+v, want suppressed for %s at the top 3", tc.method, tc.body, r, tc.reason)
			}
		}
		var first, again mapUpdate
		e.call("map_publish", `{"channel":"map:m","key":"i","data":1,"idempotency_key":"once"}`, &first)
		e.call("map_publish", `{"channel":"map:m","key":"i","data":2,"idempotency_key":"once"}`, &again)
		if first.Suppressed || !again.Suppressed || again.SuppressReason != "idempotency" || again.Offset != first.Offset {
			t.Errorf("idempotent write: %+v then %+v", first, again)
		}
	})

	t.Run("clear", func(t *testing.T) {
		e.call("map_clear", `{"channel":"map:m"}`, nil)
		e.call("map_stats", `{"channel":"map:m"}`, &st)
		if *st.NumKeys != 0 {
			t.Fatalf("stats after clear: %d keys", *st.NumKeys)
		}
		var w mapUpdate
		e.call("map_publish", `{"channel":"map:m","key":"new","data":1}`, &w)
		if w.Epoch == a.Epoch || w.Offset != 1 {
			t.Fatalf("write after clear: %+v, want offset 1 of a new epoch (was %s)", w, a.Epoch)
		}
	})
}

// TestMapBadRequests: what the map methods refuse, and with which code.
func TestMapBadRequests(t *testing.T) {
	t.Parallel()
	e := newMapEnv(t, api.Config{})
	var w mapUpdate
	e.call("map_publish", `{"channel":"map:m","key":"k","data":1}`, &w)
	long := strings.Repeat("k", gyre.MapMaxKeyLength)
	for _, tc := range []struct {
		name, method, body string
		code               uint32
		message            string
	}{
		{"longest key", "map_publish", `{"channel":"map:m","key":"` + long + `","data":1}`, 0, ""},
		{"key too long", "map_publish", `{"channel":"map:m","key":"` + long + `x","data":1}`, 107, "key longer than 256 bytes"},
		{"no key", "map_publish", `{"channel":"map:m","data":1}`, 107, "key required"},
		{"no channel", "map_publish", `{"key":"k","data":1}`, 107, "channel required"},
		{"bad key_mode", "map_publish", `{"channel":"map:m","key":"k","data":1,"key_mode":"always"}`, 107, "key_mode"},
		{"key of the wrong type", "map_publish", `{"channel":"map:m","key":1,"data":1}`, 107, "key: number is not a string"},
		{"bad b64data", "map_publish", `{"channel":"map:m","key":"k","b64data":"%%"}`, 107, "b64data"},
		{"stream_data", "map_publish", `{"channel":"map:m","key":"k","data":1,"stream_data":{"x":1}}`, 107, "stream_data"},
		{"b64stream_data", "map_publish", `{"channel":"map:m","key":"k","data":1,"b64stream_data":"eA=="}`, 107, "stream_data"},
		{"stream channel", "map_publish", `{"channel":"plain:p","key":"k","data":1}`, 107, "not a map channel"},
		{"unknown namespace", "map_publish", `{"channel":"nope:p","key":"k","data":1}`, 102, ""},
		{"remove without key", "map_remove", `{"channel":"map:m"}`, 107, "key required"},
		{"remove key too long", "map_remove", `{"channel":"map:m","key":"` + long + `x"}`, 107, "key longer"},
		{"remove from a stream channel", "map_remove", `{"channel":"hist:h","key":"k"}`, 107, "not a map channel"},
		{"state of a stream channel", "map_read_state", `{"channel":"hist:h"}`, 107, "not a map channel"},
		{"state key too long", "map_read_state", `{"channel":"map:m","key":"` + long + `x"}`, 107, "key longer"},
		{"bad cursor", "map_read_state", `{"channel":"map:m","cursor":"not-a-cursor","limit":10}`, 107, ""},
		{"revision of another epoch", "map_read_state", `{"channel":"map:m","revision_offset":1,"revision_epoch":"other"}`, 112, ""},
		{"stream since another epoch", "map_read_stream", `{"channel":"map:m","since_offset":1,"since_epoch":"other"}`, 112, ""},
		{"stream of a stream channel", "map_read_stream", `{"channel":"hist:h"}`, 107, "not a map channel"},
		{"stats of a stream channel", "map_stats", `{"channel":"hist:h"}`, 107, "not a map channel"},
		{"stats without channel", "map_stats", `{}`, 107, "channel required"},
		{"clear a stream channel", "map_clear", `{"channel":"hist:h"}`, 107, "not a map channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, b := e.post(tc.method, tc.body)
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
				t.Fatalf("%s %s: %s; want code %d with %q", tc.method, tc.body, b, tc.code, tc.message)
			}
		})
	}
}

// TestMapWithoutBroker: a node without a MapBroker answers the map
// methods with 108, and still knows a stream channel from a map one.
func TestMapWithoutBroker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	for _, tc := range []struct{ method, body string }{
		{"map_publish", `{"channel":"map:m","key":"k","data":1}`},
		{"map_remove", `{"channel":"map:m","key":"k"}`},
		{"map_read_state", `{"channel":"map:m"}`},
		{"map_read_stream", `{"channel":"map:m"}`},
		{"map_stats", `{"channel":"map:m"}`},
		{"map_clear", `{"channel":"map:m"}`},
	} {
		if code := e.callErr(tc.method, tc.body); code != 108 {
			t.Errorf("%s: code %d, want 108", tc.method, code)
		}
	}
	if code := e.callErr("map_publish", `{"channel":"plain:p","key":"k","data":1}`); code != 107 {
		t.Errorf("map_publish to a stream channel: code %d, want 107", code)
	}
}

// TestMapPublishReachesSubscriber: a change written through the API
// reaches a client subscribed to the map channel, with its key; a
// removal with removed set.
func TestMapPublishReachesSubscriber(t *testing.T) {
	t.Parallel()
	e := newMapEnv(t, api.Config{})
	e.call("map_publish", `{"channel":"emap:room","key":"before","data":{"n":0}}`, nil)
	c, _ := e.dial("42")
	r := c.Call(&protocol.Command{Subscribe: &protocol.SubscribeRequest{Channel: "emap:room", Type: 1, Phase: 2}})
	if r.Error != nil {
		t.Fatalf("subscribe: %d %s", r.Error.Code, r.Error.Message)
	}
	if r.Subscribe.Phase != 0 || len(r.Subscribe.State) != 1 || r.Subscribe.State[0].Key != "before" {
		t.Fatalf("subscribe result: %+v, want live at once with the one key", r.Subscribe)
	}
	e.call("map_publish", `{"channel":"emap:room","key":"k","data":{"n":1}}`, nil)
	e.call("map_remove", `{"channel":"emap:room","key":"before"}`, nil)
	pubs := c.WaitPubs("emap:room", 2)
	if pubs[0].Key != "k" || pubs[0].Removed || string(pubs[0].Data) != `{"n":1}` || pubs[1].Key != "before" || !pubs[1].Removed {
		t.Fatalf("changes %+v %+v, want k written then before removed", pubs[0], pubs[1])
	}
}
