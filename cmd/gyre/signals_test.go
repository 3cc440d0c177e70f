package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

func TestSIGHUPReload(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.json", centrifugoConfig)
	p := start(t, nil, "-c", path, "--http_server.port", "0")
	base := p.url()

	c, res := connect(t, base, userToken(t, "alice"))
	if code := subscribeCode(c, "chat:before"); code != 0 {
		t.Fatalf("subscribe chat:before: error %d", code)
	}
	if code := subscribeCode(c, "locked:a"); code != 103 {
		t.Fatalf("subscribe locked:a before reload: error %d, want 103", code)
	}

	opened := strings.Replace(centrifugoConfig, `"name": "locked",`, `"name": "locked", "allow_subscribe_for_client": true,`, 1)
	if opened == centrifugoConfig {
		t.Fatal("config edit did not apply")
	}
	if err := os.WriteFile(path, []byte(opened), 0o600); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGHUP)
	p.waitLog("config reloaded", nil)

	// The same connection now may subscribe, and what it had keeps
	// working.
	if code := subscribeCode(c, "locked:a"); code != 0 {
		t.Fatalf("subscribe locked:a after reload: error %d", code)
	}
	apiCall(t, base, testAPIKey, "publish", `{"channel":"chat:before","data":{"n":1}}`, nil)
	apiCall(t, base, testAPIKey, "publish", `{"channel":"locked:a","data":{"n":2}}`, nil)
	c.WaitPubs("chat:before", 1)
	if got := c.WaitPubs("locked:a", 1)[0]; got.Offset != 1 {
		t.Fatalf("locked:a publication at offset %d, want 1 (history on)", got.Offset)
	}
	var info struct {
		Nodes []struct {
			NumClients int `json:"num_clients"`
		} `json:"nodes"`
	}
	apiCall(t, base, testAPIKey, "info", `{}`, &info)
	if info.Nodes[0].NumClients != 1 {
		t.Fatalf("%d clients after reload, want the one that never left", info.Nodes[0].NumClients)
	}
	if r := c.Call(&protocol.Command{Presence: &protocol.PresenceRequest{Channel: "chat:before"}}); r.Error != nil || r.Presence.Presence[res.Client] == nil {
		t.Fatalf("presence after reload: %+v", r)
	}

	// A broken file on SIGHUP keeps the running config.
	if err := os.WriteFile(path, []byte(`{"client":`), 0o600); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGHUP)
	p.waitLog("config reload failed; keeping the running config", nil)
	if code := subscribeCode(c, "locked:b"); code != 0 {
		t.Fatalf("subscribe locked:b after a failed reload: error %d", code)
	}
}

func TestSIGTERMShutdown(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, "config.json", centrifugoConfig)
			p := start(t, nil, "-c", path, "--http_server.port", "0")
			c, _ := connect(t, p.url(), userToken(t, "alice"))
			if code := subscribeCode(c, "chat:x"); code != 0 {
				t.Fatalf("subscribe: error %d", code)
			}
			p.signal(sig)
			ce := c.WaitClose()
			if ce.Code != 3001 {
				t.Fatalf("closed with %d %q, want 3001", ce.Code, ce.Reason)
			}
			// shutdown.timeout is 10s; a minute only catches a hang.
			if code := p.wait(time.Minute); code != 0 {
				t.Fatalf("exit %d after %v; stderr:\n%s", code, sig, p.stderrText())
			}
			// Durations are logged as durations, not nanoseconds.
			if l := p.waitLog("shutting down", nil); l["timeout"] != "10s" {
				t.Fatalf("shutting down logged timeout %#v, want \"10s\"", l["timeout"])
			}
		})
	}
}

func TestSIGHUPWithoutFile(t *testing.T) {
	t.Parallel()
	p := start(t, []string{"GYRE_HTTP_SERVER_PORT=0"})
	p.signal(syscall.SIGHUP)
	p.waitLog("SIGHUP ignored: no config file to reload", nil)
	p.signal(syscall.SIGTERM)
	if code := p.wait(time.Minute); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
