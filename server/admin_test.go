package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/token"
)

// TestAdminRoutes: admin.enabled serves the admin interface (it answered
// 404 before), on the internal port when there is one unless
// admin.external.
func TestAdminRoutes(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.Admin.Enabled = true
	c.Admin.Password = "pw"
	c.Admin.Secret = "secret"
	c.Admin.HandlerPrefix = "/ops"
	_, base := newServer(t, c)
	if status, body := get(t, base+"/ops/admin/init"); status != 200 || !strings.Contains(body, `"edition":"oss"`) {
		t.Fatalf("init: %d %s", status, body)
	}
	if status, body := get(t, base+"/ops/"); status != 200 || !strings.Contains(body, "<html") {
		t.Fatalf("app: %d %s", status, body)
	}
	resp, err := http.PostForm(base+"/ops/admin/auth", url.Values{"password": {"pw"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("login: %d", resp.StatusCode)
	}

	internal := testConfig()
	internal.Admin = c.Admin
	internal.HTTPServer.InternalPort = 1 // any: only the routing is looked at
	_, base = newServer(t, internal)
	if status, _ := get(t, base+"/ops/admin/init"); status != 404 {
		t.Fatalf("admin on the external port with an internal port set: %d", status)
	}
	internal.Admin.External = true
	_, base = newServer(t, internal)
	if status, _ := get(t, base+"/ops/admin/init"); status != 200 {
		t.Fatalf("admin.external: %d", status)
	}

	off := testConfig()
	_, base = newServer(t, off)
	if status, _ := get(t, base+"/admin/init"); status != 404 {
		t.Fatalf("admin disabled: %d", status)
	}
}

// TestAdminTokenReload: the token route signs with the HMAC key a reload
// set, as the node then verifies with it.
func TestAdminTokenReload(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.Admin.Enabled, c.Admin.Insecure = true, true
	s, base := newServer(t, c)
	next := testConfig()
	next.Admin = c.Admin
	next.Client.Token.HMACSecretKey = "reloaded-secret"
	if err := s.Reload(next); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/admin/token", "application/json", strings.NewReader(`{"kind":"connection","user":"u"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	v, err := token.NewVerifier(token.Config{HMACSecretKey: "reloaded-secret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyConnectToken(got.Token, false); err != nil {
		t.Fatalf("token not signed with the reloaded key: %v", err)
	}
}

// TestAdminPrefixConflict: a prefix another endpoint has is an error at
// start, not a panic.
func TestAdminPrefixConflict(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.Admin.Enabled, c.Admin.Insecure, c.Admin.HandlerPrefix = true, true, "/api"
	if _, err := New(c, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "admin.handler_prefix") {
		t.Fatalf("admin prefix /api: %v", err)
	}
}

// TestAdminAtRootNotFound: with the admin interface at the root, the
// paths of disabled endpoints and unknown API paths answer as without it
// (404), and enabled endpoints still answer for themselves.
func TestAdminAtRootNotFound(t *testing.T) {
	t.Parallel()
	plain := testConfig()
	_, plainBase := newServer(t, plain)
	c := testConfig()
	c.Admin.Enabled, c.Admin.Password, c.Admin.Secret = true, "pw", "secret"
	_, base := newServer(t, c)
	for _, path := range []string{"/health", "/metrics", "/debug/pprof/", "/debug/pprof/cmdline", "/nothing", "/connection/nothing"} {
		if status, body := get(t, base+path); status != 404 || strings.Contains(body, "<html") {
			t.Errorf("disabled %s: %d %.80s", path, status, body)
		}
	}
	// Unknown API paths get the API's own answer.
	for _, path := range []string{"/api/nothing", "/api/publish/more"} {
		wantStatus, wantBody := post(t, plainBase+path, `{}`)
		if status, body := post(t, base+path, `{}`); status != wantStatus || body != wantBody || status != 404 {
			t.Errorf("POST %s: %d %q, without admin %d %q", path, status, body, wantStatus, wantBody)
		}
	}
	if status, body := get(t, base+"/"); status != 200 || !strings.Contains(body, "<html") {
		t.Fatalf("app: %d %.80s", status, body)
	}

	on := testConfig()
	on.Admin = c.Admin
	on.Health.Enabled, on.Prometheus.Enabled, on.Debug.Enabled = true, true, true
	_, base = newServer(t, on)
	for path, want := range map[string]string{"/health": "{}", "/metrics": "gyre_", "/debug/pprof/": "goroutine", "/debug/pprof/cmdline": ""} {
		if status, body := get(t, base+path); status != 200 || !strings.Contains(body, want) || strings.Contains(body, "Gyre admin") {
			t.Errorf("enabled %s: %d %.80s", path, status, body)
		}
	}
}

// TestAdminTrustedProxies: admin.trusted_proxies takes CIDRs and single
// IPs; anything else is reported by validation and refused by New.
func TestAdminTrustedProxies(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.Admin.Enabled, c.Admin.Password, c.Admin.Secret = true, "pw", "secret"
	c.Admin.TrustedProxies = []string{"10.0.0.0/8", "192.0.2.1", "fd00::/8"}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid trusted proxies: %v", err)
	}
	newServer(t, c)
	c.Admin.TrustedProxies = []string{"10.0.0.0/33"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "admin.trusted_proxies") {
		t.Fatalf("bad CIDR: %v", err)
	}
	if _, err := New(c, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "admin.trusted_proxies") {
		t.Fatalf("New with a bad CIDR: %v", err)
	}
}
