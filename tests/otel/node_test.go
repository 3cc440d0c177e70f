package otel_test

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

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

const (
	hmacSecret = "gyre-otel-test-secret-0123456789abcdef"
	apiKey     = "gyre-otel-test-api-key"
	// startLimit bounds how long a node may take to become healthy; a
	// race-enabled binary on a loaded machine is slow to start.
	startLimit = 60 * time.Second
	// waitLimit bounds every wait for a client's reply or push.
	waitLimit = 30 * time.Second
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

// nodeConfig is the configuration of a node named name on the memory
// engine with every kind of telemetry on: spans of the API, the proxies
// and the fan-out, and the metrics pushed over OTLP.
func nodeConfig(name string) config {
	c := config{}
	c.set("log.level", "info")
	c.set("client.token.hmac_secret_key", hmacSecret)
	c.set("client.allowed_origins", []string{"*"})
	c.set("http_api.key", apiKey)
	c.set("health.enabled", true)
	c.set("prometheus.enabled", true)
	c.set("node.name", name)
	c.set("channel.without_namespace.allow_subscribe_for_client", true)
	c.set("opentelemetry", map[string]any{
		"enabled":  true,
		"api":      true,
		"proxy":    true,
		"delivery": true,
		"metrics":  true,
	})
	return c
}

// exporter is the OTLP export of a node: the standard environment of the
// OpenTelemetry SDK.
type exporter struct {
	protocol string // http/protobuf or grpc
	endpoint string // http://host:port
	service  string // OTEL_SERVICE_NAME
	extra    []string
}

// toJaeger is the export of a node named service to the test's Jaeger
// over protocol.
func toJaeger(protocol, service string) exporter {
	addr := jaeger.otlpHTTP
	if protocol == "grpc" {
		addr = jaeger.otlpGRPC
	}
	return exporter{protocol: protocol, endpoint: "http://" + addr, service: service}
}

func (e exporter) env() []string {
	return append([]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + e.endpoint,
		"OTEL_EXPORTER_OTLP_PROTOCOL=" + e.protocol,
		"OTEL_SERVICE_NAME=" + e.service,
		// Spans and metrics leave every fraction of a second, so that
		// the tests poll for less time.
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_METRIC_EXPORT_INTERVAL=500",
	}, e.extra...)
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

// noTelemetry is what a gyre built before tracing existed logs about the
// opentelemetry section.
const noTelemetry = `key \"opentelemetry\" is not implemented by Gyre`

// startNode writes cfg (with a free port) and runs gyre on it, exporting
// to exp, until it answers /health; the process is stopped when the test
// ends. A gyre that ignores the opentelemetry section (one built before
// tracing existed) skips the test.
func startNode(t testing.TB, name string, cfg config, exp exporter) *gyreNode {
	t.Helper()
	for attempt := 1; ; attempt++ {
		n, err := tryStartNode(t, name, cfg, exp)
		if err == nil {
			if strings.Contains(n.logText(), noTelemetry) {
				t.Skipf("this gyre has no OpenTelemetry support: it ignores the opentelemetry section (%s)", noTelemetry)
			}
			return n
		}
		// The free port can be taken by someone else before gyre binds.
		if attempt < 3 && strings.Contains(err.Error(), "address already in use") {
			continue
		}
		t.Fatalf("start node %s: %v", name, err)
	}
}

func tryStartNode(t testing.TB, name string, cfg config, exp exporter) (*gyreNode, error) {
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
	cmd.Env = append(cleanEnv(), exp.env()...)
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
		_ = cmd.Process.Kill()
		<-n.done
		return nil, err
	}
	t.Cleanup(func() {
		n.stop()
		if s := n.logText(); strings.Contains(s, "WARNING: DATA RACE") {
			t.Errorf("data race in node %s:\n%s", n.name, s)
		}
		if t.Failed() {
			t.Logf("log of node %s (%s):\n%s", n.name, n.base, n.tailLog(6000))
		}
	})
	return n, nil
}

// cleanEnv is the environment without GYRE_, CENTRIFUGO_ and OTEL_
// variables, which would change the node's configuration or its export.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GYRE_") && !strings.HasPrefix(kv, "CENTRIFUGO_") && !strings.HasPrefix(kv, "OTEL_") {
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
	case <-time.After(30 * time.Second):
		n.t.Errorf("node %s still running 30s after SIGTERM", n.name)
		// SIGQUIT makes the Go runtime write every goroutine's stack to
		// the node's log, which the failure report shows.
		_ = n.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-n.done:
		case <-time.After(5 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.done
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

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// apiReply is the reply of an HTTP API call.
type apiReply struct {
	Status int
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    uint32 `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post calls the HTTP API method of n with body and the given request
// headers.
func (n *gyreNode) post(method string, body any, header http.Header) (*apiReply, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, n.base+"/api/"+method, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
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
	r := &apiReply{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(out, r); err != nil {
			return nil, fmt.Errorf("%s: decode %q: %w", method, out, err)
		}
	}
	return r, nil
}

// publish publishes data into channel through the HTTP API of n, with a
// traceparent header unless it is "", and fails the test unless the
// reply is a success.
func (n *gyreNode) publish(t testing.TB, channel, data, tp string) {
	t.Helper()
	h := http.Header{}
	if tp != "" {
		h.Set("Traceparent", tp)
	}
	r, err := n.post("publish", map[string]any{"channel": channel, "data": json.RawMessage(data)}, h)
	if err != nil {
		t.Fatalf("node %s: publish: %v", n.name, err)
	}
	if r.Status != http.StatusOK || r.Error != nil {
		t.Fatalf("node %s: publish with traceparent %q: HTTP %d, error %+v", n.name, tp, r.Status, r.Error)
	}
}

// metrics scrapes the Prometheus endpoint of n.
func (n *gyreNode) metrics() ([]sample, error) {
	return scrape(n.base + "/metrics")
}

// wsURL is the node's WebSocket endpoint.
func (n *gyreNode) wsURL() string {
	return "ws" + strings.TrimPrefix(n.base, "http") + "/connection/websocket"
}

// connectUser dials node n and connects as user.
func connectUser(t testing.TB, n *gyreNode, user string) *wstest.Client {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(hmacSecret), map[string]any{
		"sub": user,
		"exp": time.Now().Add(time.Hour).Unix(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := dialNode(t, n)
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok, Name: "otel-test"}})
	if r.Error != nil {
		t.Fatalf("connect to %s: error %d %s", n.name, r.Error.Code, r.Error.Message)
	}
	return c
}

// dialNode opens a WebSocket to n, speaking the JSON protocol.
func dialNode(t testing.TB, n *gyreNode) *wstest.Client {
	t.Helper()
	return wstest.Dial(t, n.wsURL(), protocol.TypeJSON, wstest.WaitLimit(waitLimit))
}
