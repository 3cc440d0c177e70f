package main

import (
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/nats/natstest"
)

// A nats broker without a store keeps no history: a namespace that keeps
// history would have every publication refused, so the node refuses to
// start with it, whichever way the setting arrives, and a reload that
// would bring it is refused.
func TestNATSWithoutStoreRefusesHistory(t *testing.T) {
	t.Parallel()
	const history = `{"channel": {"namespaces": [{"name": "chat", "history_size": 10, "history_ttl": "60s"}]}}`
	const natsAndHistory = `{"broker": {"enabled": true, "type": "nats"}, "channel": {"namespaces": [{"name": "chat", "history_size": 10, "history_ttl": "60s"}]}}`
	const why = "broker.type nats keeps no history"
	cases := []struct {
		name string
		env  []string
		args func(t *testing.T) []string
	}{
		{"file", nil, func(t *testing.T) []string {
			return []string{"-c", writeFile(t, "config.json", natsAndHistory)}
		}},
		{"environment", []string{"GYRE_BROKER_ENABLED=true", "GYRE_BROKER_TYPE=nats"}, func(t *testing.T) []string {
			return []string{"-c", writeFile(t, "config.json", history)}
		}},
		{"flags", nil, func(t *testing.T) []string {
			return []string{"-c", writeFile(t, "config.json", history), "--broker.enabled", "true", "--broker.type", "nats"}
		}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startNoWait(t, tt.env, append(tt.args(t), "--http_server.port", "0")...)
			if code := p.wait(20 * time.Second); code != 1 {
				t.Fatalf("exit code %d, want 1; stderr:\n%s", code, p.stderrText())
			}
			if out := p.stderrText(); !strings.Contains(out, "channel.namespaces[0].history_size") || !strings.Contains(out, why) {
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
		path := writeFile(t, "config.json", natsAndHistory)
		code, _, stderr := runTool(t, dir, "checkconfig", "-c", path)
		if code == 0 || !strings.Contains(stderr, why) {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
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
		if err, _ := line["error"].(string); !strings.Contains(err, why) {
			t.Fatalf("reload failed for another reason: %v", line)
		}
		apiCall(t, p.url(), testAPIKey, "publish", `{"channel":"chat:after","data":{}}`, nil)
	})
}

// TestNATSHealth: a node on a nats broker reports itself in its start
// lines, answers /health while NATS is up, fails it while NATS is down,
// and recovers once NATS is back.
func TestNATSHealth(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	cfg := `{"broker": {"enabled": true, "type": "nats", "nats": {"url": "` + n.URL + `", "jetstream": {"enabled": true}}},
		"health": {"enabled": true},
		"channel": {"namespaces": [{"name": "chat", "history_size": 10, "history_ttl": "60s", "allow_subscribe_for_client": true}]}}`
	p := start(t, nil, "-c", writeFile(t, "config.json", cfg), "--http_server.port", "0")
	line := p.waitLog("broker", nil)
	if line["type"] != "nats" || line["history"] != "jetstream" {
		t.Errorf("broker start line %v, want type nats with history in jetstream", line)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	url := p.url() + "/health" // waitFor holds p's lock, which url takes
	health := func() int {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("/health: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := health(); code != http.StatusOK {
		t.Fatalf("/health with NATS up: %d", code)
	}
	n.Kill()
	p.waitFor("/health to fail with NATS down", func() bool { return health() != http.StatusOK })
	n.Restart(t)
	p.waitFor("/health to pass with NATS back", func() bool { return health() == http.StatusOK })
}
