// Package deploy_test checks what operators deploy gyre with: the systemd
// unit, the container file and the Helm chart, against the server's own
// defaults and with the real tools where the machine has them
// (systemd-analyze; helm through scripts/release-check).
package deploy_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/config"
)

// gyreBinary builds the gyre command once for the tests that run it.
var gyreBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gyre-deploy-test")
	if err != nil {
		return "", err
	}
	tmpDirs = append(tmpDirs, dir)
	bin := filepath.Join(dir, "gyre")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "../cmd/gyre")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build gyre: %w\n%s", err, out)
	}
	return bin, nil
})

var tmpDirs []string

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range tmpDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

func buildGyre(t *testing.T) string {
	t.Helper()
	bin, err := gyreBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// unitFile is a systemd unit: section, key, values in order.
type unitFile map[string]map[string][]string

func readUnit(t *testing.T, path string) unitFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: line %q is no key=value in a section", path, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// last is the value of a key that systemd takes (the last one set).
func (u unitFile) last(section, key string) (string, bool) {
	vs := u[section][key]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

const unitPath = "systemd/gyre.service"

func TestSystemdUnitSettings(t *testing.T) {
	u := readUnit(t, unitPath)
	want := map[string]string{
		"ExecStart":               "/usr/local/bin/gyre -c /etc/gyre/config.json",
		"KillSignal":              "SIGTERM",
		"Restart":                 "on-failure",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"CapabilityBoundingSet":   "",
		"DynamicUser":             "yes",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
	}
	for k, v := range want {
		if got, ok := u.last("Service", k); !ok || got != v {
			t.Errorf("[Service] %s=%q (set: %v), want %q", k, got, ok, v)
		}
	}
	if !slices.Contains(u["Service"]["SystemCallFilter"], "@system-service") {
		t.Errorf("SystemCallFilter %q lacks @system-service", u["Service"]["SystemCallFilter"])
	}
	// The server reloads its config on SIGHUP (cmd/gyre waitSignals).
	if r, _ := u.last("Service", "ExecReload"); !strings.Contains(r, "-HUP $MAINPID") {
		t.Errorf("ExecReload=%q does not send SIGHUP", r)
	}
	nofile, _ := u.last("Service", "LimitNOFILE")
	if n, err := strconv.Atoi(nofile); err != nil || n < 65536 {
		t.Errorf("LimitNOFILE=%q: want a number of at least 65536 for many connections", nofile)
	}
	// systemd must not kill the process while its graceful shutdown,
	// bounded by shutdown.timeout, may still run.
	stop, _ := u.last("Service", "TimeoutStopSec")
	d, err := systemdSeconds(stop)
	shutdown := config.Default().Shutdown.Timeout
	if err != nil || d <= shutdown {
		t.Errorf("TimeoutStopSec=%q (%v): want more than the default shutdown.timeout %v", stop, err, shutdown)
	}
}

// systemdSeconds reads a systemd time span of the forms the unit uses:
// "35", "35s", "1min".
func systemdSeconds(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(strings.Replace(s, "min", "m", 1))
}

// TestSystemdVerify runs systemd-analyze verify on the unit, its ExecStart
// pointed at a gyre binary built for the test (verify checks that the
// command exists). Verify reports unknown keys and bad values as warnings
// with exit status 0, so any line about the unit fails the test.
func TestSystemdVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze not found (apt-get install systemd); CI must verify the unit")
		}
		t.Skip("systemd-analyze not found (apt-get install systemd): the unit is not verified")
	}
	bin := buildGyre(t)
	data, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	const exe = "/usr/local/bin/gyre"
	if !strings.Contains(string(data), "ExecStart="+exe+" ") {
		t.Fatalf("%s: no ExecStart=%s", unitPath, exe)
	}
	unit := filepath.Join(t.TempDir(), "gyre.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(data), "ExecStart="+exe, "ExecStart="+bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "gyre.service") {
			t.Errorf("systemd-analyze verify: %s", strings.TrimSpace(line))
		}
	}
}

// instruction is one line of a container file: its keyword and the rest.
type instruction struct{ cmd, args string }

func readContainerfile(t *testing.T, path string) []instruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	// Continuation lines (a trailing backslash) join the next one.
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, args, _ := strings.Cut(line, " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
	}
	return out
}

func TestContainerfile(t *testing.T) {
	ins := readContainerfile(t, "container/Containerfile")
	got := map[string][]string{}
	for _, in := range ins {
		got[in.cmd] = append(got[in.cmd], in.args)
	}
	if from := got["FROM"]; len(from) != 1 || from[0] != "scratch" {
		t.Errorf("FROM %q, want scratch alone", from)
	}
	users := got["USER"]
	if len(users) == 0 {
		t.Fatal("no USER: the image would run as root")
	}
	// Numeric, so that Kubernetes' runAsNonRoot can check it without an
	// /etc/passwd in the image.
	uid, _, _ := strings.Cut(users[len(users)-1], ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric user other than 0", users[len(users)-1])
	}
	if hc := got["HEALTHCHECK"]; len(hc) != 1 || !strings.Contains(hc[0], `CMD ["/gyre", "health"]`) {
		t.Errorf("HEALTHCHECK %q, want one that runs /gyre health", hc)
	}
	if ep := got["ENTRYPOINT"]; len(ep) != 1 || ep[0] != `["/gyre"]` {
		t.Errorf("ENTRYPOINT %q, want [\"/gyre\"]", ep)
	}
	// gyre health without flags asks the default port.
	port := strconv.Itoa(config.Default().HTTPServer.Port)
	if !slices.Contains(got["EXPOSE"], port) {
		t.Errorf("EXPOSE %q lacks the default port %s", got["EXPOSE"], port)
	}
	if !slices.Contains(got["COPY"], "ca-certificates.crt /etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("no CA certificates copied to /etc/ssl/certs: TLS to Redis and backends fails")
	}
}
