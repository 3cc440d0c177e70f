package cluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	hmacSecret = "gyre-cluster-test-secret-0123456789abcdef"
	apiKey     = "gyre-cluster-test-api-key"
	// startLimit bounds how long a node may take to become healthy; a
	// race-enabled binary on a loaded machine is slow to start.
	startLimit = 60 * time.Second
)

// config is a gyre configuration file as nested maps.
type config map[string]any

// set puts v at a dotted key path, creating the maps on the way.
func (c config) set(path string, v any) config {
	keys := strings.Split(path, ".")
	m := map[string]any(c)
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
	return c
}

// chatNamespace is the namespace every test uses: presence, join/leave to
// every subscriber, and a history long enough that recovery never runs
// out of it.
func chatNamespace() map[string]any {
	return map[string]any{
		"name":                          "chat",
		"presence":                      true,
		"join_leave":                    true,
		"force_push_join_leave":         true,
		"history_size":                  20000,
		"history_ttl":                   "600s",
		"force_recovery":                true,
		"allow_subscribe_for_client":    true,
		"allow_presence_for_subscriber": true,
		"allow_history_for_subscriber":  true,
	}
}

// nodeConfig is the configuration of a node named name on the Redis
// engine with the given engine.redis keys.
func nodeConfig(name string, redis map[string]any) config {
	c := config{}
	c.set("log.level", "info")
	c.set("client.token.hmac_secret_key", hmacSecret)
	c.set("client.allowed_origins", []string{"*"})
	c.set("http_api.key", apiKey)
	c.set("health.enabled", true)
	c.set("node.name", name)
	c.set("engine.type", "redis")
	c.set("engine.redis", redis)
	c.set("channel.namespaces", []any{chatNamespace()})
	return c
}

// redisAt is the engine.redis section for standalone servers.
func redisAt(addrs ...string) map[string]any {
	return map[string]any{"address": addrs}
}

// gyreNode is one running gyre process.
type gyreNode struct {
	t    testing.TB
	name string
	base string // http://127.0.0.1:port
	log  string // path of its log (standard error)

	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited
	waitErr error
}

// startNode writes cfg (with a free port) and runs gyre on it until it
// answers /health; the process is stopped when the test ends.
func startNode(t testing.TB, name string, cfg config) *gyreNode {
	t.Helper()
	for attempt := 1; ; attempt++ {
		n, err := tryStartNode(t, name, cfg)
		if err == nil {
			return n
		}
		// The free port can be taken by someone else before gyre binds.
		if attempt < 3 && strings.Contains(err.Error(), "address already in use") {
			continue
		}
		t.Fatalf("start node %s: %v", name, err)
	}
}

func tryStartNode(t testing.TB, name string, cfg config) (*gyreNode, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg.set("http_server.port", port)
	dir := t.TempDir()
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "gyre.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(gyreBinary, "-c", cfgPath)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run gyre: %w", err)
	}
	n := &gyreNode{t: t, name: name, base: "http://127.0.0.1:" + strconv.Itoa(port), log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		n.waitErr = cmd.Wait()
		close(n.done)
	}()
	if err := n.waitHealthy(); err != nil {
		n.kill()
		return nil, err
	}
	t.Cleanup(func() {
		n.stop()
		n.checkRaces()
		if t.Failed() {
			t.Logf("log of node %s (%s):\n%s", n.name, n.base, n.tailLog(6000))
		}
	})
	return n, nil
}

// cleanEnv is the environment without GYRE_ and CENTRIFUGO_ variables,
// which would change the node's configuration.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GYRE_") && !strings.HasPrefix(kv, "CENTRIFUGO_") {
			env = append(env, kv)
		}
	}
	return env
}

func (n *gyreNode) waitHealthy() error {
	deadline := time.Now().Add(startLimit)
	for {
		select {
		case <-n.done:
			return fmt.Errorf("gyre exited at start (%v): %s", n.waitErr, n.tailLog(3000))
		default:
		}
		resp, err := quickHTTP.Get(n.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gyre not healthy within %v: %s", startLimit, n.tailLog(3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wsURL is the node's WebSocket endpoint.
func (n *gyreNode) wsURL() string {
	return "ws" + strings.TrimPrefix(n.base, "http") + "/connection/websocket"
}

// kill ends the process with SIGKILL, as a crash would.
func (n *gyreNode) kill() {
	_ = n.cmd.Process.Kill()
	<-n.done
}

// stop ends the process with SIGTERM, and with SIGKILL if it hangs.
func (n *gyreNode) stop() {
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		n.t.Errorf("node %s still running 20s after SIGTERM", n.name)
		// SIGQUIT makes the Go runtime write every goroutine's stack to
		// the node's log, which the failure report shows.
		_ = n.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-n.done:
		case <-time.After(5 * time.Second):
			n.kill()
		}
	}
}

func (n *gyreNode) logText() string {
	b, _ := os.ReadFile(n.log)
	return string(b)
}

func (n *gyreNode) tailLog(max int) string {
	s := n.logText()
	if len(s) > max {
		s = "..." + s[len(s)-max:]
	}
	return s
}

// checkRaces fails the test when the race detector reported in the node.
func (n *gyreNode) checkRaces() {
	if s := n.logText(); strings.Contains(s, "WARNING: DATA RACE") {
		n.t.Errorf("data race in node %s:\n%s", n.name, s)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	quickHTTP = &http.Client{Timeout: 2 * time.Second}
	apiHTTP   = &http.Client{Timeout: 20 * time.Second}
)

// apiError is an error answered by the server API.
type apiError struct {
	Code    uint32 `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("api error %d: %s", e.Code, e.Message) }

// call posts body to the API method and returns the raw result; an error
// is a failed request, an HTTP status other than 200, or an API error.
func (n *gyreNode) call(method string, body any) (json.RawMessage, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, n.base+"/api/"+method, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := apiHTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, out)
	}
	if method == "batch" {
		return out, nil
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *apiError       `json:"error"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("%s: decode %q: %w", method, out, err)
	}
	if r.Error != nil {
		return nil, fmt.Errorf("%s: %w", method, r.Error)
	}
	return r.Result, nil
}

// mustCall is call that fails the test on an error; the result goes into
// out unless out is nil.
func (n *gyreNode) mustCall(t testing.TB, method string, body, out any) {
	t.Helper()
	res, err := n.call(method, body)
	if err != nil {
		t.Fatalf("node %s: %v", n.name, err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("node %s: %s: decode result %s: %v", n.name, method, res, err)
		}
	}
}

// presenceClients asks node n for the client IDs present in channel.
func (n *gyreNode) presenceClients(t testing.TB, channel string) map[string]string {
	t.Helper()
	var res struct {
		Presence map[string]struct {
			User   string `json:"user"`
			Client string `json:"client"`
		} `json:"presence"`
	}
	n.mustCall(t, "presence", map[string]any{"channel": channel}, &res)
	out := map[string]string{}
	for id, ci := range res.Presence {
		out[id] = ci.User
	}
	return out
}

// streamTop asks node n for the stream position of channel.
func (n *gyreNode) streamTop(t testing.TB, channel string) (uint64, string) {
	t.Helper()
	var res struct {
		Offset uint64 `json:"offset"`
		Epoch  string `json:"epoch"`
	}
	n.mustCall(t, "history", map[string]any{"channel": channel, "limit": 0}, &res)
	return res.Offset, res.Epoch
}

// historyNumbers asks node n for the whole history of channel and returns
// the "n" of the publication at each offset, with the stream's epoch.
func (n *gyreNode) historyNumbers(t testing.TB, channel string) (map[uint64]int, string) {
	t.Helper()
	var res struct {
		Publications []struct {
			Offset uint64 `json:"offset"`
			Data   struct {
				N int `json:"n"`
			} `json:"data"`
		} `json:"publications"`
		Epoch string `json:"epoch"`
	}
	n.mustCall(t, "history", map[string]any{"channel": channel, "limit": -1}, &res)
	out := make(map[uint64]int, len(res.Publications))
	for _, p := range res.Publications {
		out[p.Offset] = p.Data.N
	}
	return out, res.Epoch
}
