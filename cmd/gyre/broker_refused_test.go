package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A broker Gyre cannot run decides where publications go: a node must not
// start on its own memory broker instead (two nodes would never see each
// other's publications), whichever way the setting arrives.
func TestNATSBrokerRefused(t *testing.T) {
	t.Parallel()
	const nats = `{"broker": {"enabled": true, "type": "nats"}}`
	cases := []struct {
		name string
		env  []string
		args func(t *testing.T) []string
	}{
		{"file", nil, func(t *testing.T) []string {
			return []string{"-c", writeFile(t, "config.json", nats)}
		}},
		{"environment", []string{"GYRE_BROKER_ENABLED=true", "GYRE_BROKER_TYPE=nats"}, func(t *testing.T) []string {
			return []string{"-c", writeFile(t, "config.json", `{}`)}
		}},
		{"flags", nil, func(t *testing.T) []string {
			return []string{"-c", writeFile(t, "config.json", `{}`), "--broker.enabled", "true", "--broker.type", "nats"}
		}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startNoWait(t, tt.env, append(tt.args(t), "--http_server.port", "0")...)
			if code := p.wait(20 * time.Second); code != 1 {
				t.Fatalf("exit code %d, want 1; stderr:\n%s", code, p.stderrText())
			}
			if out := p.stderrText(); !strings.Contains(out, "broker.type") || !strings.Contains(out, "nats is not supported") {
				t.Fatalf("stderr does not say why:\n%s", out)
			}
			if strings.Contains(p.stderrText(), `"listening"`) {
				t.Fatal("the server listened before refusing")
			}
		})
	}

	t.Run("checkconfig", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := writeFile(t, "config.json", nats)
		for _, args := range [][]string{{"checkconfig", "-c", path}, {"checkconfig", "--allow-unsupported", "-c", path}} {
			code, _, stderr := runTool(t, dir, args...)
			if code == 0 || !strings.Contains(stderr, "nats is not supported") {
				t.Fatalf("%v: exit %d, stderr:\n%s", args, code, stderr)
			}
		}
	})

	t.Run("reload", func(t *testing.T) {
		t.Parallel()
		path := writeFile(t, "config.json", centrifugoConfig)
		p := start(t, nil, "-c", path, "--http_server.port", "0")
		withNATS := strings.Replace(centrifugoConfig, "{", `{"broker": {"enabled": true, "type": "nats"},`, 1)
		if err := os.WriteFile(path, []byte(withNATS), 0o600); err != nil {
			t.Fatal(err)
		}
		p.signal(syscall.SIGHUP)
		line := p.waitLog("config reload failed; keeping the running config", nil)
		if err, _ := line["error"].(string); !strings.Contains(err, "nats is not supported") {
			t.Fatalf("reload failed for another reason: %v", line)
		}
		apiCall(t, p.url(), testAPIKey, "publish", `{"channel":"chat:after","data":{}}`, nil)
	})
}
