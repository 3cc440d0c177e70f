package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

const (
	testSecret = "cmd-test-secret"
	testAPIKey = "cmd-test-api-key"
)

// centrifugoConfig is a Centrifugo v6 config file: namespaces with
// history and presence, a token secret and an API key.
const centrifugoConfig = `{
  "log": {"level": "info"},
  "client": {
    "token": {"hmac_secret_key": "` + testSecret + `"},
    "allowed_origins": ["http://localhost:3000"]
  },
  "http_api": {"key": "` + testAPIKey + `"},
  "health": {"enabled": true},
  "prometheus": {"enabled": true},
  "shutdown": {"timeout": "10s"},
  "channel": {
    "without_namespace": {"allow_subscribe_for_client": true},
    "namespaces": [
      {
        "name": "chat",
        "presence": true,
        "join_leave": true,
        "force_push_join_leave": true,
        "history_size": 10,
        "history_ttl": "300s",
        "force_recovery": true,
        "allow_subscribe_for_client": true,
        "allow_publish_for_subscriber": true,
        "allow_history_for_subscriber": true,
        "allow_presence_for_subscriber": true
      },
      {
        "name": "locked",
        "history_size": 5,
        "history_ttl": "60s"
      }
    ]
  }
}`

func userToken(t *testing.T, user string) string {
	return signToken(t, testSecret, map[string]any{"sub": user, "exp": time.Now().Add(time.Hour).Unix()})
}

func TestCentrifugoConfig(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.json", centrifugoConfig)
	p := start(t, nil, "-c", path, "--http_server.port", "0")
	base := p.url()

	c, res := connect(t, base, userToken(t, "alice"))
	if res.Client == "" || !res.Expires || res.Ttl == 0 || res.Ttl > 3600 {
		t.Fatalf("connect result %+v: want a client id and the token's expiry", res)
	}
	if code := subscribeCode(c, "chat:room"); code != 0 {
		t.Fatalf("subscribe chat:room: error %d", code)
	}
	// A namespace that does not allow client subscriptions refuses.
	if code := subscribeCode(c, "locked:room"); code != 103 {
		t.Fatalf("subscribe locked:room: error %d, want 103", code)
	}
	// So does an unknown namespace.
	if code := subscribeCode(c, "nope:room"); code != 102 {
		t.Fatalf("subscribe nope:room: error %d, want 102", code)
	}

	var pub struct {
		Offset uint64 `json:"offset"`
		Epoch  string `json:"epoch"`
	}
	apiCall(t, base, testAPIKey, "publish", `{"channel":"chat:room","data":{"text":"hi"}}`, &pub)
	if pub.Offset != 1 || pub.Epoch == "" {
		t.Fatalf("publish result %+v", pub)
	}
	got := c.WaitPubs("chat:room", 1)[0]
	if string(got.Data) != `{"text":"hi"}` || got.Offset != 1 {
		t.Fatalf("publication %s at %d", got.Data, got.Offset)
	}

	var hist struct {
		Publications []struct {
			Data   json.RawMessage `json:"data"`
			Offset uint64          `json:"offset"`
		} `json:"publications"`
		Epoch  string `json:"epoch"`
		Offset uint64 `json:"offset"`
	}
	apiCall(t, base, testAPIKey, "history", `{"channel":"chat:room","limit":-1}`, &hist)
	if len(hist.Publications) != 1 || string(hist.Publications[0].Data) != `{"text":"hi"}` || hist.Epoch != pub.Epoch || hist.Offset != 1 {
		t.Fatalf("history %+v", hist)
	}

	var pres struct {
		Presence map[string]struct {
			User   string `json:"user"`
			Client string `json:"client"`
		} `json:"presence"`
	}
	apiCall(t, base, testAPIKey, "presence", `{"channel":"chat:room"}`, &pres)
	if len(pres.Presence) != 1 || pres.Presence[res.Client].User != "alice" {
		t.Fatalf("presence %+v, want alice's client %s", pres.Presence, res.Client)
	}

	// History over the client protocol, as the namespace allows it to
	// subscribers.
	r := c.Call(&protocol.Command{History: &protocol.HistoryRequest{Channel: "chat:room", Limit: -1}})
	if r.Error != nil || len(r.History.Publications) != 1 {
		t.Fatalf("client history: %+v", r)
	}

	// The namespace keeps history_size publications.
	for range 12 {
		apiCall(t, base, testAPIKey, "publish", `{"channel":"chat:room","data":{}}`, nil)
	}
	apiCall(t, base, testAPIKey, "history", `{"channel":"chat:room","limit":-1}`, &hist)
	if len(hist.Publications) != 10 || hist.Offset != 13 {
		t.Fatalf("history after 13 publishes: %d publications, top %d; want 10, 13", len(hist.Publications), hist.Offset)
	}

	// A token signed with another secret is refused.
	bad := dialWS(t, base)
	br, closed := bad.TryCall(&protocol.Command{Connect: &protocol.ConnectRequest{Token: signToken(t, "other", map[string]any{"sub": "eve"})}})
	if closed == nil {
		t.Fatalf("connect with a foreign token: reply %+v, want close 3500", br)
	}
	if closed.Code != 3500 {
		t.Fatalf("connect with a foreign token: closed %d %q, want 3500", closed.Code, closed.Reason)
	}

	// The wrong API key is refused.
	if status, _ := httpPost(t, base+"/api/info", "wrong", `{}`); status != http.StatusUnauthorized {
		t.Fatalf("wrong API key: status %d, want 401", status)
	}
}

func TestPortFromEnvAndFlags(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.json", `{"http_server":{"port":1}}`)
	envPort, flagPort := freePort(t), freePort(t)
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"env over file", []string{"GYRE_HTTP_SERVER_PORT=" + envPort}, []string{"-c", path}, envPort},
		{"flag over env", []string{"GYRE_HTTP_SERVER_PORT=1"}, []string{"-c", path, "--http_server.port", flagPort}, flagPort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.env, tt.args...)
			addr := p.addrs()[0]
			if _, port, _ := net.SplitHostPort(addr); port != tt.want {
				t.Fatalf("listening on %s, want port %s", addr, tt.want)
			}
			if status, _ := httpPost(t, "http://"+addr+"/api/info", "", `{}`); status != http.StatusUnauthorized {
				t.Fatalf("API on %s: status %d, want 401 (no key configured)", addr, status)
			}
		})
	}
}

func TestEnvWithoutFile(t *testing.T) {
	t.Parallel()
	// Without a config file, variables are layered over the development
	// defaults as flags are: the key they set changes (here the API key,
	// from Centrifugo's name, and the history size, where GYRE_ wins), the
	// other development defaults stay, and the log says so.
	p := start(t, []string{
		"GYRE_HTTP_SERVER_PORT=0",
		"CENTRIFUGO_HTTP_API_KEY=env-key",
		"CENTRIFUGO_CHANNEL_WITHOUT_NAMESPACE_HISTORY_SIZE=2",
		"GYRE_CHANNEL_WITHOUT_NAMESPACE_HISTORY_SIZE=3",
	})
	l := p.waitLog("no config file: running on development defaults (open channels, fresh secrets); give one with -c, even an empty {} file, to leave them", nil)
	if env := fmt.Sprint(l["environment_over_defaults"]); !strings.Contains(env, "CENTRIFUGO_HTTP_API_KEY") || !strings.Contains(env, "GYRE_HTTP_SERVER_PORT") {
		t.Errorf("development-defaults log names the variables %q, want the API key and port variables", env)
	}
	p.waitFor("welcome", func() bool { return strings.Contains(p.stdout.String(), "env-key") })
	for i := range 5 {
		body := fmt.Sprintf(`{"channel":"demo","data":{"n":%d}}`, i)
		if status, b := httpPost(t, p.url()+"/api/publish", "env-key", body); status != http.StatusOK {
			t.Fatalf("publish with the key from the environment: status %d: %s", status, b)
		}
	}
	status, b := httpPost(t, p.url()+"/api/history", "env-key", `{"channel":"demo","limit":-1}`)
	if status != http.StatusOK {
		t.Fatalf("history: status %d: %s", status, b)
	}
	var hist struct {
		Result struct {
			Publications []json.RawMessage `json:"publications"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &hist); err != nil || len(hist.Result.Publications) != 3 {
		t.Fatalf("history %s: want 3 publications (history_size from GYRE_, over CENTRIFUGO_)", b)
	}
	if status, _ := httpGet(t, p.url()+"/"); status != http.StatusOK {
		t.Fatalf("demo page: status %d, want 200 (development defaults kept)", status)
	}
}

func TestEnvWithEmptyFile(t *testing.T) {
	t.Parallel()
	// An empty config file leaves development mode, environment or not.
	p := start(t, []string{"CENTRIFUGO_HTTP_API_KEY=env-key"}, "-c", writeFile(t, "config.json", `{}`), "--http_server.port", "0")
	if status, _ := httpPost(t, p.url()+"/api/info", "env-key", `{}`); status != http.StatusOK {
		t.Fatalf("API with the key from CENTRIFUGO_HTTP_API_KEY: status %d", status)
	}
	if status, _ := httpGet(t, p.url()+"/"); status != http.StatusNotFound {
		t.Fatalf("demo page: status %d, want 404", status)
	}
	if out := p.stdoutText(); out != "" {
		t.Fatalf("stdout %q, want nothing", out)
	}
}

func TestUnsupportedKeyWarnsAtStart(t *testing.T) {
	t.Parallel()
	// The server starts, and says which key it ignores and what to do,
	// once per key: client.concurrency is set by the file and by both
	// prefixes.
	p := start(t, []string{
		"CENTRIFUGO_CLIENT_CHANNEL_POSITION_MAX_TIME_LAG=5s",
		"CENTRIFUGO_CLIENT_CONCURRENCY=2",
		"GYRE_CLIENT_CONCURRENCY=3",
	}, "-c", writeFile(t, "config.json", `{"websocket":{"write_buffer_size":8192},"client":{"concurrency":4}}`), "--http_server.port", "0")
	for _, key := range []string{"websocket.write_buffer_size", "client.channel_position_max_time_lag", "client.concurrency"} {
		var lines []string
		for _, line := range strings.Split(p.stderrText(), "\n") {
			if strings.Contains(line, key) {
				lines = append(lines, line)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], `"WARN"`) || !strings.Contains(lines[0], `\"`+key+`\" is not implemented by Gyre`) {
			t.Errorf("lines naming %s: %q; want one warning", key, lines)
		}
	}
	if status, _ := httpPost(t, p.url()+"/api/info", "", `{}`); status == 0 {
		t.Fatal("server not serving")
	}
}

func TestDevDefaults(t *testing.T) {
	t.Parallel()
	p := start(t, nil, "--http_server.port", "0")
	var key string
	p.waitFor("welcome", func() bool {
		for _, line := range strings.Split(p.stdout.String(), "\n") {
			if k, ok := strings.CutPrefix(strings.TrimSpace(line), "API key:"); ok {
				key = strings.TrimSpace(k)
				return true
			}
		}
		return false
	})
	if status, b := httpPost(t, p.url()+"/api/publish", key, `{"channel":"demo","data":{"text":"hi"}}`); status != http.StatusOK || !strings.Contains(string(b), `"offset":1`) {
		t.Fatalf("publish with the printed key: status %d: %s", status, b)
	}
	for _, path := range []string{"/", "/health"} {
		if status, _ := httpGet(t, p.url()+path); status != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, status)
		}
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	p := start(t, nil, "-c", writeFile(t, "config.json", `{"health":{"enabled":true}}`), "--http_server.port", "0")
	status, b := httpGet(t, p.url()+"/health")
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, b)
	}
	off := start(t, nil, "-c", writeFile(t, "config.json", `{}`), "--http_server.port", "0")
	if status, _ := httpGet(t, off.url()+"/health"); status != http.StatusNotFound {
		t.Fatalf("health disabled: status %d, want 404", status)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.json", centrifugoConfig)
	p := start(t, nil, "-c", path, "--http_server.port", "0")
	c, _ := connect(t, p.url(), userToken(t, "alice"))
	subscribeCode(c, "chat:m")
	apiCall(t, p.url(), testAPIKey, "publish", `{"channel":"chat:m","data":{}}`, nil)
	c.WaitPubs("chat:m", 1)

	status, b := httpGet(t, p.url()+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	text := string(b)
	for _, want := range []string{
		"gyre_node_connections 1",
		"gyre_node_subscriptions 1",
		`gyre_api_calls_total{method="publish",protocol="http",result="ok"} 1`,
		`gyre_client_commands_total{method="subscribe",transport="websocket"} 1`,
		"gyre_client_messages_sent_total",
		"go_goroutines",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", text)
	}

	off := start(t, nil, "-c", writeFile(t, "config.json", `{}`), "--http_server.port", "0")
	if status, _ := httpGet(t, off.url()+"/metrics"); status != http.StatusNotFound {
		t.Fatalf("prometheus disabled: status %d, want 404", status)
	}
}

func TestInternalPort(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.json", centrifugoConfig)
	internal := freePort(t)
	p := start(t, nil, "-c", path, "--http_server.port", "0", "--http_server.internal_port", internal)
	l := p.waitLog("listening", func(l map[string]any) bool { return strings.HasSuffix(l["address"].(string), ":"+internal) })
	// The log says what went to the internal port.
	if got, want := fmt.Sprint(l["listener"], " ", l["serves"]), "http_server.internal_port [api /api (X-API-Key required) health /health metrics /metrics]"; got != want {
		t.Errorf("internal port's listening line: %s, want %s", got, want)
	}
	addrs := p.addrs()
	if len(addrs) != 2 {
		t.Fatalf("listening on %v, want two addresses", addrs)
	}
	client, internalURL := "http://"+addrs[0], "http://"+addrs[1]

	tests := []struct {
		name   string
		base   string
		path   string
		post   bool
		status int
	}{
		{"API on internal", internalURL, "/api/info", true, http.StatusOK},
		{"metrics on internal", internalURL, "/metrics", false, http.StatusOK},
		{"health on internal", internalURL, "/health", false, http.StatusOK},
		{"no API on client port", client, "/api/info", true, http.StatusNotFound},
		{"no metrics on client port", client, "/metrics", false, http.StatusNotFound},
		{"no health on client port", client, "/health", false, http.StatusNotFound},
		{"no WebSocket on internal", internalURL, "/connection/websocket", false, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var status int
			var b []byte
			if tt.post {
				status, b = httpPost(t, tt.base+tt.path, testAPIKey, `{}`)
			} else {
				status, b = httpGet(t, tt.base+tt.path)
			}
			if status != tt.status {
				t.Fatalf("status %d, want %d: %.200s", status, tt.status, b)
			}
		})
	}
	// Clients still connect on the client port.
	c, _ := connect(t, client, userToken(t, "alice"))
	if code := subscribeCode(c, "chat:x"); code != 0 {
		t.Fatalf("subscribe: error %d", code)
	}
}

func TestBadConfigExits(t *testing.T) {
	t.Parallel()
	for _, tt := range badConfigs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"-c", writeFile(t, tt.file, tt.content)}
			if !strings.HasPrefix(tt.key, "http_server.port") {
				// A flag would override the port at fault.
				args = append(args, "--http_server.port", "0")
			}
			p := startNoWait(t, nil, args...)
			if code := p.wait(time.Minute); code == 0 {
				t.Fatal("exit 0 with a bad config")
			}
			if s := p.stderrText(); !strings.Contains(s, tt.key) {
				t.Fatalf("stderr does not name %s: %s", tt.key, s)
			}
		})
	}
	t.Run("bad flag value", func(t *testing.T) {
		t.Parallel()
		p := startNoWait(t, nil, "--http_server.port", "eighty")
		if code := p.wait(time.Minute); code == 0 || !strings.Contains(p.stderrText(), "http_server.port") {
			t.Fatalf("exit %d: %s", code, p.stderrText())
		}
	})
	t.Run("bad env value", func(t *testing.T) {
		t.Parallel()
		p := startNoWait(t, []string{"GYRE_CLIENT_PING_INTERVAL=often"})
		if code := p.wait(time.Minute); code == 0 || !strings.Contains(p.stderrText(), "client.ping_interval") {
			t.Fatalf("exit %d: %s", code, p.stderrText())
		}
	})
	t.Run("port in use", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		p := startNoWait(t, nil, "-c", writeFile(t, "c.json", `{}`), "--http_server.address", "127.0.0.1", "--http_server.port", port)
		if code := p.wait(time.Minute); code == 0 || !strings.Contains(p.stderrText(), port) {
			t.Fatalf("exit %d: %s", code, p.stderrText())
		}
	})
}

func TestPIDAndLogFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile, logFile := filepath.Join(dir, "gyre.pid"), filepath.Join(dir, "gyre.log")
	cfg := writeFile(t, "config.json", `{"pid_file":"`+pidFile+`","log":{"file":"`+logFile+`"}}`)
	p := startNoWait(t, nil, "-c", cfg, "--http_server.port", "0")
	// Nothing goes to stderr: wait for the log file to say it listens.
	var logs string
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs, `"msg":"listening"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line in %s: %q; stderr: %s", logFile, logs, p.stderrText())
		}
		time.Sleep(20 * time.Millisecond)
		b, _ := os.ReadFile(logFile)
		logs = string(b)
	}
	if s := p.stderrText(); s != "" {
		t.Fatalf("stderr %q, want the logs in the file only", s)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(p.cmd.Process.Pid) {
		t.Fatalf("pid file holds %q, want %d", got, p.cmd.Process.Pid)
	}
}
