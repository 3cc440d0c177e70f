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
