package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
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
