package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// mapConfig has a map namespace; mapEnv makes the channels without a
// namespace maps too, from the environment, with both prefixes.
const mapConfig = `{
  "http_api": {"key": "` + testAPIKey + `"},
  "channel": {"namespaces": [
    {"name": "board", "subscription_type": "map", "map": {"mode": "persistent", "allow_publish_for_subscriber": true}},
    {"name": "chat", "map_clients_presence_channel_prefix": "online:"},
    {"name": "online", "subscription_type": "map_clients"}
  ]}
}`

var mapEnv = []string{
	"CENTRIFUGO_CHANNEL_WITHOUT_NAMESPACE_SUBSCRIPTION_TYPE=map",
	"GYRE_CHANNEL_WITHOUT_NAMESPACE_MAP_MODE=ephemeral",
	"CENTRIFUGO_CHANNEL_WITHOUT_NAMESPACE_MAP_KEY_TTL=30s",
}

// apiResult posts an API call and returns its result, failing on an
// error.
func apiResult(t *testing.T, p *proc, method, body string) map[string]any {
	t.Helper()
	status, b := httpPost(t, p.url()+"/api/"+method, testAPIKey, body)
	var r struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &r) != nil || r.Error != nil {
		t.Fatalf("%s %s: status %d: %s", method, body, status, b)
	}
	return r.Result
}

// TestMapConfig: map namespaces from the file and the environment pass
// checkconfig and serve the map API on the memory map broker, which the
// start-up log names with the map namespaces; a bad combination set by the
// environment is refused by checkconfig and at start, naming the key.
func TestMapConfig(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.json", mapConfig)
	if code, out, errOut := runToolEnv(t, filepath.Dir(path), mapEnv, "checkconfig", "-c", "config.json"); code != 0 {
		t.Fatalf("checkconfig: exit %d: %s%s", code, out, errOut)
	}
	p := start(t, mapEnv, "-c", path, "--http_server.port", "0")
	l := p.waitLog("map broker", nil)
	if l["type"] != "memory" || fmt.Sprint(l["namespaces"]) != "[ board online]" {
		t.Errorf("map broker log line %v, want type memory and the namespaces \"\", board and online", l)
	}
	for _, ch := range []string{"board:1", "lobby"} {
		r := apiResult(t, p, "map_publish", `{"channel":"`+ch+`","key":"k","data":{"n":1}}`)
		if r["offset"] == nil && ch == "board:1" {
			t.Errorf("map_publish %s: %v, want an offset (persistent mode keeps a stream)", ch, r)
		}
		if st := apiResult(t, p, "map_stats", `{"channel":"`+ch+`"}`); st["num_keys"] != 1.0 {
			t.Errorf("map_stats %s: %v, want one key", ch, st)
		}
	}

	bad := append(slices.Clone(mapEnv), "GYRE_CHANNEL_WITHOUT_NAMESPACE_MAP_STREAM_SIZE=10")
	const key = "channel.without_namespace.map.stream_size"
	code, _, errOut := runToolEnv(t, filepath.Dir(path), bad, "checkconfig", "-c", "config.json")
	if code == 0 || !strings.Contains(errOut, key) {
		t.Errorf("checkconfig with a stream size in ephemeral mode: exit %d: %s", code, errOut)
	}
	sp := startNoWait(t, bad, "-c", path, "--http_server.port", "0")
	if code := sp.wait(time.Minute); code == 0 || !strings.Contains(sp.stderrText(), key) {
		t.Errorf("start with a stream size in ephemeral mode: exit %d: %s", code, sp.stderrText())
	}
}

// TestMapBrokerRedis: map_broker.type redis on the engine's Redis when it
// names none of its own, on its own Redis when it does; two nodes on one
// Redis share map channels.
func TestMapBrokerRedis(t *testing.T) {
	t.Parallel()
	r := redistest.Start(t)
	addr := "redis://" + r.Addr
	shared := `{"http_api": {"key": "` + testAPIKey + `"},
	  "engine": {"type": "redis", "redis": {"address": "` + addr + `", "prefix": "maps-shared"}},
	  "map_broker": {"type": "redis"},
	  "channel": {"namespaces": [{"name": "board", "subscription_type": "map", "map": {"mode": "persistent"}}]}}`
	p1 := start(t, nil, "-c", writeFile(t, "config.json", shared), "--http_server.port", "0")
	if l := p1.waitLog("map broker", nil); l["type"] != "redis" || l["redis"] != "engine.redis" {
		t.Errorf("map broker log line %v, want redis on engine.redis", l)
	}
	own := `{"http_api": {"key": "` + testAPIKey + `"},
	  "map_broker": {"type": "redis", "redis": {"address": "` + addr + `", "prefix": "maps-shared"}},
	  "channel": {"namespaces": [{"name": "board", "subscription_type": "map", "map": {"mode": "persistent"}}]}}`
	p2 := start(t, nil, "-c", writeFile(t, "config.json", own), "--http_server.port", "0")
	if l := p2.waitLog("map broker", nil); l["type"] != "redis" || l["redis"] != nil || !strings.Contains(fmt.Sprint(l["redis_addresses"]), r.Addr) {
		t.Errorf("map broker log line %v, want redis at %s", l, r.Addr)
	}
	// The engine's prefix and the map broker's are the same Redis keys:
	// what one node writes, the other reads.
	apiResult(t, p1, "map_publish", `{"channel":"board:1","key":"from-1","data":{}}`)
	page := apiResult(t, p2, "map_read_state", `{"channel":"board:1","limit":-1}`)
	if entries, _ := page["entries"].([]any); len(entries) != 1 {
		t.Errorf("state read by the second node: %v, want the first node's key", page)
	}
}
