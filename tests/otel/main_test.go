package otel_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/internal/testproc"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// collector is where Jaeger listens, each a host:port.
type collector struct {
	otlpGRPC string // OTLP over gRPC
	otlpHTTP string // OTLP over HTTP
	query    string // the query API (HTTP)
	prom     string // the Prometheus exporter of the metrics received
}

// jaeger is the Jaeger every test of the binary shares; jaegerMissing
// says why there is none.
var (
	jaeger        collector
	jaegerMissing error
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gyre-otel-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	stop, err := setupJaeger(filepath.Join(dir, "jaeger"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "jaeger:", err)
		return 1
	}
	defer stop()
	if jaegerMissing != nil {
		// Every test skips or fails on it: no need for a binary.
		return m.Run()
	}
	if err := gyreproc.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// requireJaeger skips t with GYRE_SKIP_JAEGER=1 where there is no Jaeger,
// and fails it otherwise.
func requireJaeger(t testing.TB) {
	t.Helper()
	if jaegerMissing == nil {
		return
	}
	if os.Getenv("GYRE_SKIP_JAEGER") == "1" {
		t.Skipf("%v, and GYRE_SKIP_JAEGER=1", jaegerMissing)
	}
	t.Fatalf("%v: build it with scripts/install-jaeger, point GYRE_TEST_JAEGER_OTLP_GRPC, _OTLP_HTTP, _QUERY and _PROM at a running one (scripts/start-jaeger), or set GYRE_SKIP_JAEGER=1 to skip the OpenTelemetry tests", jaegerMissing)
}

var jaegerEnv = []string{"GYRE_TEST_JAEGER_OTLP_GRPC", "GYRE_TEST_JAEGER_OTLP_HTTP", "GYRE_TEST_JAEGER_QUERY", "GYRE_TEST_JAEGER_PROM"}

// setupJaeger sets jaeger: from the environment when it names one, else
// a Jaeger started in dir, which the returned function stops. Where
// neither can be had it sets jaegerMissing.
func setupJaeger(dir string) (stop func(), err error) {
	var set []string
	for _, k := range jaegerEnv {
		if os.Getenv(k) != "" {
			set = append(set, k)
		}
	}
	switch len(set) {
	case len(jaegerEnv):
		jaeger = collector{
			otlpGRPC: os.Getenv("GYRE_TEST_JAEGER_OTLP_GRPC"),
			otlpHTTP: os.Getenv("GYRE_TEST_JAEGER_OTLP_HTTP"),
			query:    os.Getenv("GYRE_TEST_JAEGER_QUERY"),
			prom:     os.Getenv("GYRE_TEST_JAEGER_PROM"),
		}
		return func() {}, nil
	case 0:
	default:
		return nil, fmt.Errorf("%s set, but not all of %s", strings.Join(set, ", "), strings.Join(jaegerEnv, ", "))
	}
	scripts, err := scriptsDir()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(filepath.Join(scripts, "install-jaeger"), "--path").Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/install-jaeger --path: %w", err)
	}
	bin := strings.TrimSpace(string(out))
	if _, err := os.Stat(bin); err != nil {
		jaegerMissing = fmt.Errorf("Jaeger is not installed at %s", bin)
		return func() {}, nil
	}
	// A port taken between the choice and the start: new ports, again.
	for attempt := 1; ; attempt++ {
		p, err := startJaeger(scripts, bin, dir)
		if err == nil {
			return p.Stop, nil
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
		_ = os.RemoveAll(dir)
	}
}

// startJaeger has scripts/start-jaeger write a configuration into dir and
// runs Jaeger on it, a process that dies with the test binary however it
// ends.
func startJaeger(scripts, bin, dir string) (*testproc.Proc, error) {
	out, err := exec.Command(filepath.Join(scripts, "start-jaeger"), "--configure", dir).Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/start-jaeger --configure: %w", err)
	}
	c, err := parseAddresses(string(out))
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "jaeger.log")
	p := &testproc.Proc{
		Name:          "/bin/sh",
		Args:          []string{"-c", `exec "$0" --config "$1" >"$2" 2>&1`, bin, filepath.Join(dir, "config.yaml"), logPath},
		Addr:          c.query,
		DieWithParent: true,
		Ready:         func() error { return c.ready() },
		Log: func() string {
			b, _ := os.ReadFile(logPath)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			return string(b)
		},
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	jaeger = c
	return p, nil
}

// parseAddresses reads the line scripts/start-jaeger prints.
func parseAddresses(line string) (collector, error) {
	var c collector
	for f := range strings.FieldsSeq(line) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "otlp_grpc":
			c.otlpGRPC = v
		case "otlp_http":
			c.otlpHTTP = v
		case "query":
			c.query = v
		case "prom":
			c.prom = v
		}
	}
	if c.otlpGRPC == "" || c.otlpHTTP == "" || c.query == "" || c.prom == "" {
		return c, fmt.Errorf("scripts/start-jaeger printed %q", line)
	}
	return c, nil
}

// ready reports whether every listener of c takes connections and the
// query API answers.
func (c collector) ready() error {
	for _, a := range []string{c.otlpGRPC, c.otlpHTTP, c.prom} {
		conn, err := net.Dial("tcp", a)
		if err != nil {
			return err
		}
		conn.Close()
	}
	resp, err := quickHTTP.Get("http://" + c.query + "/api/services")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("query API: HTTP %d", resp.StatusCode)
	}
	return nil
}

// scriptsDir is the scripts directory of the source tree this package is
// in.
func scriptsDir() (string, error) {
	var dirs []string
	if _, file, _, ok := runtime.Caller(0); ok {
		dirs = append(dirs, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	for _, d := range dirs {
		for ; ; d = filepath.Dir(d) {
			s := filepath.Join(d, "scripts")
			if _, err := os.Stat(filepath.Join(s, "start-jaeger")); err == nil {
				return s, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("scripts/start-jaeger not found above the test's directory")
}
