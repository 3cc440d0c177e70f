package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := runTool(t, t.TempDir(), "version")
	if code != 0 || !strings.HasPrefix(out, "gyre ") || strings.TrimSpace(out) == "gyre" {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

func TestGenconfigCheckconfig(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"config.json", "config.yaml", "config.yml", "config.toml"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if code, out, errOut := runTool(t, dir, "genconfig", "-c", name); code != 0 {
				t.Fatalf("genconfig: exit %d: %s%s", code, out, errOut)
			}
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"hmac_secret_key", "key"} {
				if !strings.Contains(string(data), want) {
					t.Fatalf("generated config lacks %s:\n%s", want, data)
				}
			}
			code, out, errOut := runTool(t, dir, "checkconfig", "-c", name)
			if code != 0 || !strings.Contains(out, "is valid") {
				t.Fatalf("checkconfig: exit %d: %s%s", code, out, errOut)
			}
			// A second genconfig must not overwrite the secrets.
			if code, _, errOut := runTool(t, dir, "genconfig", "-c", name); code == 0 || !strings.Contains(errOut, "exists") {
				t.Fatalf("genconfig over an existing file: exit %d: %s", code, errOut)
			}
			after, _ := os.ReadFile(filepath.Join(dir, name))
			if string(after) != string(data) {
				t.Fatal("genconfig changed an existing file")
			}
		})
	}
}

func TestGenconfigSecretsDiffer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	read := func(name string) map[string]any {
		if code, _, errOut := runTool(t, dir, "genconfig", "-c", name); code != 0 {
			t.Fatalf("genconfig: exit %d: %s", code, errOut)
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := read("a.json"), read("b.json")
	if a["http_api"].(map[string]any)["key"] == b["http_api"].(map[string]any)["key"] {
		t.Fatal("two generated configs share an API key")
	}
}

func TestDefaultconfig(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "yaml", "toml"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			code, out, errOut := runTool(t, dir, "defaultconfig", "-f", format)
			if code != 0 || !strings.Contains(out, "http_server") {
				t.Fatalf("exit %d: %.300s%s", code, out, errOut)
			}
			// What defaultconfig prints loads back.
			name := "defaults." + format
			if err := os.WriteFile(filepath.Join(dir, name), []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
			if code, _, errOut := runTool(t, dir, "checkconfig", "-c", name); code != 0 {
				t.Fatalf("checkconfig of the defaults: exit %d: %s", code, errOut)
			}
		})
	}
}

// badConfigs are invalid config files, each naming the key at fault.
var badConfigs = []struct {
	name, file, content, key string
}{
	{"json port", "c.json", `{"http_server":{"port":"abc"}}`, "http_server.port"},
	{"json port range", "c.json", `{"http_server":{"port":70000}}`, "http_server.port"},
	{"json duration", "c.json", `{"client":{"ping_interval":25}}`, "client.ping_interval"},
	{"json syntax", "c.json", `{"client":`, "c.json"},
	{"yaml namespace option", "c.yaml", "channel:\n  namespaces:\n    - name: chat\n      history_ttl: 5x\n", "channel.namespaces[0].history_ttl"},
	{"yaml enum", "c.yaml", "engine:\n  type: postgres\n", "engine.type"},
	{"toml duration", "c.toml", "[client]\nping_interval = \"soon\"\n", "client.ping_interval"},
	{"toml type", "c.toml", "[http_api]\ninsecure = \"maybe\"\n", "http_api.insecure"},
	{"map without mode", "c.json", `{"channel":{"namespaces":[{"name":"board","subscription_type":"map"}]}}`, "channel.namespaces[0].map.mode"},
	{"map key_ttl", "c.json", `{"channel":{"without_namespace":{"subscription_type":"map","map":{"mode":"ephemeral"}}}}`, "channel.without_namespace.map.key_ttl"},
	{"map client_key with a proxy", "c.json", `{"channel":{"proxy":{"map_publish":{"endpoint":"http://b/map"}},"namespaces":[{"name":"b","subscription_type":"map","map":{"mode":"persistent","client_key":"user_id","publish_proxy_enabled":true}}]}}`, "channel.namespaces[0].map.client_key"},
	{"map proxy not defined", "c.json", `{"channel":{"namespaces":[{"name":"b","subscription_type":"map","map":{"mode":"persistent","remove_proxy_enabled":true,"remove_proxy_name":"gone"}}]}}`, "channel.namespaces[0].map.remove_proxy_name"},
	{"yaml postgres map broker", "c.yaml", "map_broker:\n  type: postgres\n", "map_broker.type"},
	{"toml shared_poll without secret", "c.toml", "[channel.proxy.shared_poll_refresh]\nendpoint = \"http://b/poll\"\n[[channel.namespaces]]\nname = \"polls\"\nsubscription_type = \"shared_poll\"\n", "shared_poll.hmac_secret_key"},
	{"shared_poll proxy not defined", "c.json", `{"shared_poll":{"hmac_secret_key":"s"},"channel":{"namespaces":[{"name":"polls","subscription_type":"shared_poll","shared_poll":{"proxy_name":"gone"}}]}}`, "channel.namespaces[0].shared_poll.proxy_name"},
	{"shared_poll publish versionless", "c.yaml", "shared_poll:\n  hmac_secret_key: s\nchannel:\n  proxy:\n    shared_poll_refresh:\n      endpoint: grpc://b:1\n  without_namespace:\n    subscription_type: shared_poll\n    shared_poll:\n      publish_enabled: true\n", "channel.without_namespace.shared_poll.publish_enabled"},
}

func TestCheckconfigBad(t *testing.T) {
	t.Parallel()
	for _, tt := range badConfigs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, tt.file, tt.content)
			code, out, errOut := runTool(t, filepath.Dir(path), "checkconfig", "-c", tt.file)
			if code == 0 {
				t.Fatalf("exit 0 for a bad config: %s", out)
			}
			if !strings.Contains(errOut, tt.key) {
				t.Fatalf("stderr does not name %s: %s", tt.key, errOut)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		code, _, errOut := runTool(t, t.TempDir(), "checkconfig", "-c", "none.json")
		if code == 0 || !strings.Contains(errOut, "none.json") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}

func TestCheckconfigUnsupported(t *testing.T) {
	t.Parallel()
	// websocket.write_buffer_size parses but has no effect; graphite is
	// not implemented at all. Both would change what Centrifugo does.
	dir := filepath.Dir(writeFile(t, "c.json", `{"websocket":{"write_buffer_size":8192},"graphite":{"enabled":true}}`))
	code, out, errOut := runTool(t, dir, "checkconfig", "-c", "c.json")
	if code == 0 {
		t.Fatalf("exit 0 for unsupported keys: %s", out)
	}
	if !strings.Contains(errOut, "--allow-unsupported") {
		t.Errorf("stderr does not name --allow-unsupported:\n%s", errOut)
	}
	checkOnce(t, errOut, "websocket.write_buffer_size", "graphite")
	code, out, errOut = runTool(t, dir, "checkconfig", "--allow-unsupported", "-c", "c.json")
	if code != 0 || !strings.Contains(out, "is valid") {
		t.Fatalf("--allow-unsupported: exit %d, stdout %q, stderr %q; want 0 and valid", code, out, errOut)
	}
	checkOnce(t, errOut, "websocket.write_buffer_size", "graphite")
	// Set at their defaults the same keys change nothing and pass, and
	// compression, which Gyre implements, passes on.
	dir = filepath.Dir(writeFile(t, "d.json", `{"websocket":{"write_buffer_size":0,"compression":true},"graphite":{"enabled":false,"port":2003}}`))
	if code, _, errOut := runTool(t, dir, "checkconfig", "-c", "d.json"); code != 0 {
		t.Fatalf("keys at their defaults: exit %d: %s", code, errOut)
	}
}

// checkOnce fails unless each key is named, quoted as the warnings quote
// it, on exactly one line of out.
func checkOnce(t *testing.T, out string, keys ...string) {
	t.Helper()
	for _, key := range keys {
		n := 0
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, `"`+key+`"`) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d lines name %q, want 1:\n%s", n, key, out)
		}
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errOut := runTool(t, dir, "genconfig", "-c", "config.json"); code != 0 {
		t.Fatalf("genconfig: exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"client":{"token":{"hmac_secret_key":"another-secret"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runTool(t, dir, "gentoken", "-c", "config.json", "-u", "alice", "-t", "1h")
	if code != 0 {
		t.Fatalf("gentoken: exit %d: %s", code, errOut)
	}
	tok := strings.TrimSpace(out)
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("gentoken printed %q, want a JWT", out)
	}

	tests := []struct {
		name     string
		args     []string
		wantCode bool // true: exit 0
		want     string
	}{
		{"valid", []string{"checktoken", "-c", "config.json", tok}, true, `user "alice"`},
		{"other secret", []string{"checktoken", "-c", "other.json", tok}, false, "token"},
		{"garbage", []string{"checktoken", "-c", "config.json", "a.b.c"}, false, "token"},
		{"no token", []string{"checktoken", "-c", "config.json"}, false, "one token"},
		{"gensubtoken needs a channel", []string{"gensubtoken", "-c", "config.json", "-u", "alice"}, false, "-s"},
		{"gentoken without a secret", []string{"gentoken", "-c", "none.json", "-u", "a"}, false, "none.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runTool(t, dir, tt.args...)
			if (code == 0) != tt.wantCode || !strings.Contains(out+errOut, tt.want) {
				t.Fatalf("exit %d: %s%s; want success=%v and %q", code, out, errOut, tt.wantCode, tt.want)
			}
		})
	}

	t.Run("never expires", func(t *testing.T) {
		_, out, _ := runTool(t, dir, "gentoken", "-c", "config.json", "-u", "bob", "-t", "0")
		code, check, errOut := runTool(t, dir, "checktoken", "-c", "config.json", strings.TrimSpace(out))
		if code != 0 || !strings.Contains(check, "expires never") {
			t.Fatalf("exit %d: %s%s", code, check, errOut)
		}
	})
	t.Run("subscription token", func(t *testing.T) {
		code, out, errOut := runTool(t, dir, "gensubtoken", "-c", "config.json", "-u", "alice", "-s", "$private")
		if code != 0 || strings.Count(strings.TrimSpace(out), ".") != 2 {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
	})
}

// TestTokenTTL: -t is seconds when it is a bare number, as with
// Centrifugo's gentoken, and a Go duration otherwise; 0 never expires and
// no -t is a week.
func TestTokenTTL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errOut := runTool(t, dir, "genconfig", "-c", "config.json"); code != 0 {
		t.Fatalf("genconfig: exit %d: %s", code, errOut)
	}
	tests := []struct {
		name string
		args []string
		ttl  int64 // 0: no exp claim
	}{
		{"seconds", []string{"gentoken", "-t", "60"}, 60},
		{"duration in seconds", []string{"gentoken", "-t", "90s"}, 90},
		{"duration in hours", []string{"gentoken", "-t", "1h"}, 3600},
		{"default", []string{"gentoken"}, 7 * 24 * 3600},
		{"zero", []string{"gentoken", "-t", "0"}, 0},
		{"zero duration", []string{"gentoken", "-t", "0s"}, 0},
		{"negative", []string{"gentoken", "-t", "-1"}, 0},
		{"subscription token in seconds", []string{"gensubtoken", "-s", "news", "-t", "60"}, 60},
		{"subscription token duration", []string{"gensubtoken", "-s", "news", "-t", "2m"}, 120},
		{"subscription token default", []string{"gensubtoken", "-s", "news"}, 7 * 24 * 3600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := time.Now().Unix()
			code, out, errOut := runTool(t, dir, append(tt.args, "-c", "config.json", "-u", "alice")...)
			after := time.Now().Unix()
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			claims := jwtClaims(t, strings.TrimSpace(out))
			exp, ok := claims["exp"].(float64)
			if tt.ttl == 0 {
				if ok {
					t.Fatalf("exp %v, want none", exp)
				}
				return
			}
			// exp is now+ttl for some now while the command ran.
			if !ok || int64(exp) < before+tt.ttl || int64(exp) > after+tt.ttl {
				t.Fatalf("exp %v, want %d seconds after a time in [%d, %d]", claims["exp"], tt.ttl, before, after)
			}
		})
	}
	for _, bad := range []string{"soon", "1.5", "60x", "99999999999999999"} {
		t.Run("bad "+bad, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runTool(t, dir, "gentoken", "-c", "config.json", "-u", "a", "-t", bad)
			if code == 0 || !strings.Contains(errOut, "-t") {
				t.Fatalf("exit %d: %s; want a failure naming -t", code, errOut)
			}
		})
	}
}

// jwtClaims decodes the claims of a JWT without checking it.
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a JWT", tok)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("claims of %q: %v", tok, err)
	}
	var claims map[string]any
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatalf("claims of %q: %v", tok, err)
	}
	return claims
}

func TestUnknownFlag(t *testing.T) {
	t.Parallel()
	code, _, errOut := runTool(t, t.TempDir(), "--verbose")
	if code == 0 || !strings.Contains(errOut, "--verbose") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
