package api_test

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/server/api"
)

type clientInfo struct {
	User   string `json:"user"`
	Client string `json:"client"`
}

type presenceStats struct {
	NumClients int `json:"num_clients"`
	NumUsers   int `json:"num_users"`
}

type historyResult struct {
	Publications []struct {
		Data   json.RawMessage   `json:"data"`
		Offset uint64            `json:"offset"`
		Tags   map[string]string `json:"tags"`
	} `json:"publications"`
	Epoch  string `json:"epoch"`
	Offset uint64 `json:"offset"`
}

func (h historyResult) offsets() []uint64 {
	out := []uint64{}
	for _, p := range h.Publications {
		out = append(out, p.Offset)
	}
	return out
}

type channelsResult struct {
	Channels map[string]struct {
		NumClients int `json:"num_clients"`
	} `json:"channels"`
}

func TestPresence(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c1, r1 := e.dial("gil")
	c2, r2 := e.dial("gil")
	c3, r3 := e.dial("hal")
	for _, c := range []*wstest.Client{c1, c2, c3} {
		c.MustSubscribe("pres:room")
	}

	var p struct {
		Presence map[string]clientInfo `json:"presence"`
	}
	e.call("presence", `{"channel":"pres:room"}`, &p)
	want := map[string]clientInfo{
		r1.Client: {User: "gil", Client: r1.Client},
		r2.Client: {User: "gil", Client: r2.Client},
		r3.Client: {User: "hal", Client: r3.Client},
	}
	if len(p.Presence) != len(want) {
		t.Fatalf("presence %+v, want %+v", p.Presence, want)
	}
	for id, ci := range want {
		if p.Presence[id] != ci {
			t.Fatalf("presence[%s] = %+v, want %+v", id, p.Presence[id], ci)
		}
	}

	var st presenceStats
	e.call("presence_stats", `{"channel":"pres:room"}`, &st)
	if st != (presenceStats{NumClients: 3, NumUsers: 2}) {
		t.Fatalf("presence stats %+v, want 3 clients, 2 users", st)
	}

	tests := []struct {
		name, method, body string
		want               uint32
	}{
		{"presence without presence", "presence", `{"channel":"plain:x"}`, 108},
		{"stats without presence", "presence_stats", `{"channel":"hist:x"}`, 108},
		{"presence unknown namespace", "presence", `{"channel":"nope:x"}`, 102},
		{"stats no channel", "presence_stats", `{}`, 107},
		{"presence no channel", "presence", `{}`, 107},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.callErr(tt.method, tt.body); got != tt.want {
				t.Fatalf("error %d, want %d", got, tt.want)
			}
		})
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	for i := 1; i <= 5; i++ {
		e.call("publish", `{"channel":"hist:h","data":{"i":`+strconv.Itoa(i)+`},"tags":{"n":"`+strconv.Itoa(i)+`"}}`, nil)
	}
	var top historyResult
	e.call("history", `{"channel":"hist:h"}`, &top)
	if top.Offset != 5 || top.Epoch == "" || len(top.Publications) != 0 {
		t.Fatalf("history without limit: %+v", top)
	}
	epoch := top.Epoch

	tests := []struct {
		name string
		body string
		want []uint64
	}{
		{"limit 0", `{"channel":"hist:h","limit":0}`, []uint64{}},
		{"limit -1", `{"channel":"hist:h","limit":-1}`, []uint64{1, 2, 3, 4, 5}},
		{"limit 2", `{"channel":"hist:h","limit":2}`, []uint64{1, 2}},
		{"reverse", `{"channel":"hist:h","limit":2,"reverse":true}`, []uint64{5, 4}},
		{"since", `{"channel":"hist:h","limit":-1,"since":{"offset":3,"epoch":"` + epoch + `"}}`, []uint64{4, 5}},
		{"since limit", `{"channel":"hist:h","limit":1,"since":{"offset":1,"epoch":"` + epoch + `"}}`, []uint64{2}},
		{"since reverse", `{"channel":"hist:h","limit":-1,"reverse":true,"since":{"offset":3,"epoch":"` + epoch + `"}}`, []uint64{2, 1}},
		{"since top", `{"channel":"hist:h","limit":-1,"since":{"offset":5,"epoch":"` + epoch + `"}}`, []uint64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h historyResult
			e.call("history", tt.body, &h)
			if got := h.offsets(); !slices.Equal(got, tt.want) {
				t.Fatalf("offsets %v, want %v", got, tt.want)
			}
			if h.Offset != 5 || h.Epoch != epoch {
				t.Fatalf("top %d/%s, want 5/%s", h.Offset, h.Epoch, epoch)
			}
			for _, p := range h.Publications {
				jsonEq(t, p.Data, `{"i":`+strconv.FormatUint(p.Offset, 10)+`}`)
				if p.Tags["n"] != strconv.FormatUint(p.Offset, 10) {
					t.Fatalf("tags %v at offset %d", p.Tags, p.Offset)
				}
			}
		})
	}

	errs := []struct {
		name string
		body string
		want uint32
	}{
		{"no history", `{"channel":"plain:h","limit":-1}`, 108},
		{"unknown namespace", `{"channel":"nope:h"}`, 102},
		{"wrong epoch", `{"channel":"hist:h","limit":-1,"since":{"offset":1,"epoch":"other"}}`, 112},
		{"future offset", `{"channel":"hist:h","limit":-1,"since":{"offset":99,"epoch":"` + epoch + `"}}`, 112},
		{"no channel", `{"limit":1}`, 107},
		{"limit is a string", `{"channel":"hist:h","limit":"1"}`, 107},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.callErr("history", tt.body); got != tt.want {
				t.Fatalf("error %d, want %d", got, tt.want)
			}
		})
	}
}

func TestHistoryBinaryData(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	raw := []byte{0xff, 0x00, 0x01}
	e.call("publish", `{"channel":"hist:bin","b64data":"`+base64.StdEncoding.EncodeToString(raw)+`"}`, nil)
	var h historyResult
	e.call("history", `{"channel":"hist:bin","limit":-1}`, &h)
	if len(h.Publications) != 1 {
		t.Fatalf("history %+v", h)
	}
	// Bytes that are not JSON cannot be embedded: they come back as a
	// base64 string, so the response stays valid JSON.
	var s string
	if err := json.Unmarshal(h.Publications[0].Data, &s); err != nil {
		t.Fatalf("data %s is not a string: %v", h.Publications[0].Data, err)
	}
	if got, _ := base64.StdEncoding.DecodeString(s); string(got) != string(raw) {
		t.Fatalf("data %q, want base64 of %v", s, raw)
	}
}

func TestHistoryRemove(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	for range 3 {
		e.call("publish", `{"channel":"hist:r","data":{}}`, nil)
	}
	e.call("history_remove", `{"channel":"hist:r"}`, nil)
	var h historyResult
	e.call("history", `{"channel":"hist:r","limit":-1}`, &h)
	if len(h.Publications) != 0 || h.Offset != 3 {
		t.Fatalf("after remove: %+v, want no publications at offset 3", h)
	}
	var p publishResult
	e.call("publish", `{"channel":"hist:r","data":{}}`, &p)
	if p.Offset != 4 || p.Epoch != h.Epoch {
		t.Fatalf("publish after remove: %+v, want offset 4 in epoch %s", p, h.Epoch)
	}
	if got := e.callErr("history_remove", `{}`); got != 107 {
		t.Fatalf("no channel: error %d, want 107", got)
	}
	if got := e.callErr("history_remove", `{"channel":"nope:r"}`); got != 102 {
		t.Fatalf("unknown namespace: error %d, want 102", got)
	}
}

func TestChannels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c1, _ := e.dial("ivy")
	c2, _ := e.dial("jon")
	c1.MustSubscribe("chat-1")
	c1.MustSubscribe("news-1")
	c2.MustSubscribe("chat-1")
	c2.MustSubscribe("chat-2")

	tests := []struct {
		pattern string
		want    map[string]int
	}{
		{"", map[string]int{"chat-1": 2, "chat-2": 1, "news-1": 1}},
		{"chat-*", map[string]int{"chat-1": 2, "chat-2": 1}},
		{"news-?", map[string]int{"news-1": 1}},
		{"none*", map[string]int{}},
	}
	for _, tt := range tests {
		t.Run("pattern "+tt.pattern, func(t *testing.T) {
			var r channelsResult
			e.call("channels", `{"pattern":"`+tt.pattern+`"}`, &r)
			got := map[string]int{}
			for ch, info := range r.Channels {
				got[ch] = info.NumClients
			}
			if len(got) != len(tt.want) {
				t.Fatalf("channels %v, want %v", got, tt.want)
			}
			for ch, n := range tt.want {
				if got[ch] != n {
					t.Fatalf("channels %v, want %v", got, tt.want)
				}
			}
		})
	}
	if got := e.callErr("channels", `{"pattern":"["}`); got != 107 {
		t.Fatalf("bad pattern: error %d, want 107", got)
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c1, _ := e.dial("kim")
	e.dial("kim")
	e.dial("lee")
	c1.MustSubscribe("a")
	c1.MustSubscribe("b")

	var r struct {
		Nodes []struct {
			UID         string `json:"uid"`
			Name        string `json:"name"`
			Version     string `json:"version"`
			NumClients  int    `json:"num_clients"`
			NumUsers    int    `json:"num_users"`
			NumChannels int    `json:"num_channels"`
			NumSubs     int    `json:"num_subs"`
			Uptime      int64  `json:"uptime"`
			Metrics     struct {
				Interval float64            `json:"interval"`
				Items    map[string]float64 `json:"items"`
			} `json:"metrics"`
		} `json:"nodes"`
	}
	// An empty body is an empty request.
	e.call("info", ``, &r)
	if len(r.Nodes) != 1 {
		t.Fatalf("%d nodes, want 1", len(r.Nodes))
	}
	n := r.Nodes[0]
	if n.UID != e.node.ID() || n.Name == "" {
		t.Fatalf("node %+v, want uid %s and a name", n, e.node.ID())
	}
	if n.NumClients != 3 || n.NumUsers != 2 || n.NumChannels != 2 || n.NumSubs != 2 {
		t.Fatalf("node counts %+v, want 3 clients, 2 users, 2 channels, 2 subscriptions", n)
	}
	m := n.Metrics
	if m.Interval != 5 || m.Items["gyre_memory_bytes"] <= 0 || m.Items["gyre_broker_healthy"] != 1 {
		t.Fatalf("node metrics %+v", m)
	}
	if _, ok := m.Items["gyre_publish_rate"]; !ok {
		t.Fatalf("node metrics without gyre_publish_rate: %+v", m)
	}
}
