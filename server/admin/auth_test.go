package admin_test

import (
	"encoding/json"
	"log/slog"
	"mime/multipart"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/admin"
)

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, s)
	}
}

func TestLogin(t *testing.T) {
	e := newEnv(t, admin.Config{})
	if r := e.login("wrong"); r.status != 400 {
		t.Fatalf("wrong password: %d %s", r.status, r.body)
	}
	if len(e.logs.Find(slog.LevelWarn, "admin login refused: wrong password", nil)) != 1 {
		t.Fatal("no log line for the wrong password")
	}
	tok := e.token()
	if r := e.postJSON("/admin/api", tok, `{"method":"info","params":{}}`); r.status != 200 || !strings.Contains(r.body, `"nodes"`) {
		t.Fatalf("api with token: %d %s", r.status, r.body)
	}
	// GET is not a login.
	if r := e.get("/admin/auth", ""); r.status != 405 {
		t.Fatalf("GET auth: %d %s", r.status, r.body)
	}
}

func TestLoginNotConfigured(t *testing.T) {
	// Validation refuses this configuration; the handler stays safe
	// with it all the same.
	e2 := newEnvNoDefaults(t, admin.Config{Secret: "s"})
	if r := e2.login(""); r.status != 400 {
		t.Fatalf("no password configured, empty password sent: %d %s", r.status, r.body)
	}
	if len(e2.logs.Find(slog.LevelError, "admin login refused: admin.password and admin.secret must be set", nil)) != 1 {
		t.Fatal("no log line")
	}
	e3 := newEnvNoDefaults(t, admin.Config{Password: "p"})
	if r := e3.login("p"); r.status != 400 {
		t.Fatalf("no secret configured: %d %s", r.status, r.body)
	}
	// Without a secret no token is accepted.
	if r := e3.get("/admin/nodes", "v1.9999999999.x"); r.status != 401 {
		t.Fatalf("no secret, token: %d %s", r.status, r.body)
	}
}

func TestTokenExpiry(t *testing.T) {
	e := newEnv(t, admin.Config{SessionTTL: time.Hour})
	tok := e.token()
	if r := e.get("/admin/nodes", tok); r.status != 200 {
		t.Fatalf("fresh token: %d", r.status)
	}
	e.clock.advance(time.Hour - time.Second)
	if r := e.get("/admin/nodes", tok); r.status != 200 {
		t.Fatalf("token before expiry: %d", r.status)
	}
	e.clock.advance(time.Second)
	if r := e.get("/admin/nodes", tok); r.status != 401 {
		t.Fatalf("expired token: %d %s", r.status, r.body)
	}
	if len(e.logs.Find(slog.LevelInfo, "admin request refused", map[string]string{"reason": "token expired"})) != 1 {
		t.Fatal("no log line for the expired token")
	}
	var init struct{ Authenticated bool }
	mustJSON(t, e.get("/admin/init", tok).body, &init)
	if init.Authenticated {
		t.Fatal("init: authenticated with an expired token")
	}
}

func TestTokenRefused(t *testing.T) {
	e := newEnv(t, admin.Config{})
	tok := e.token()
	parts := strings.Split(tok, ".")
	later := "v1.99999999999." + parts[2]
	other := newEnvNoDefaults(t, admin.Config{Password: testPassword, Secret: "another-secret", Now: e.clock.Now})
	foreign := other.token()
	for name, bad := range map[string]string{
		"expiry changed":    later,
		"signature changed": tok[:len(tok)-2] + "xx",
		"other secret":      foreign,
		"garbage":           "garbage",
		"none":              "",
	} {
		for _, path := range []string{"/admin/nodes", "/admin/tail?channel=x"} {
			if r := e.get(path, bad); r.status != 401 {
				t.Errorf("%s, %s: %d %s", name, path, r.status, r.body)
			}
		}
		if r := e.postJSON("/admin/api", bad, `{"method":"info","params":{}}`); r.status != 401 {
			t.Errorf("%s, api: %d %s", name, r.status, r.body)
		}
	}
	// A header of another scheme is no token.
	r := e.do("GET", "/admin/nodes", "", "", "")
	if r.status != 401 {
		t.Fatalf("no token: %d", r.status)
	}
}

func TestInsecure(t *testing.T) {
	e := newEnvNoDefaults(t, admin.Config{Insecure: true})
	if r := e.postJSON("/admin/api", "", `{"method":"publish","params":{"channel":"news","data":{"x":1}}}`); r.status != 200 || !strings.Contains(r.body, `"result"`) {
		t.Fatalf("insecure api: %d %s", r.status, r.body)
	}
	var init map[string]any
	mustJSON(t, e.get("/admin/init", "").body, &init)
	if init["insecure"] != true || init["authenticated"] != true {
		t.Fatalf("insecure init: %v", init)
	}
}

func TestInit(t *testing.T) {
	e := newEnv(t, admin.Config{TokenKey: testHMAC})
	var init map[string]any
	mustJSON(t, e.get("/admin/init", "").body, &init)
	want := map[string]any{"insecure": false, "edition": "oss", "authenticated": false, "version": "test-version", "node_name": "node-a", "tokens": true}
	for k, v := range want {
		if init[k] != v {
			t.Errorf("init[%s] = %v, want %v", k, init[k], v)
		}
	}
	mustJSON(t, e.get("/admin/init", e.token()).body, &init)
	if init["authenticated"] != true {
		t.Fatalf("init with a token: %v", init)
	}
	e2 := newEnv(t, admin.Config{})
	mustJSON(t, e2.get("/admin/init", "").body, &init)
	if init["tokens"] != false {
		t.Fatalf("init without an HMAC key: %v", init)
	}
}

// TestLoginMultipart: the password may come as multipart form data, as
// browsers send a FormData.
func TestLoginMultipart(t *testing.T) {
	e := newEnv(t, admin.Config{})
	var body strings.Builder
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("password", testPassword)
	_ = mw.Close()
	if r := e.do("POST", "/admin/auth", "", mw.FormDataContentType(), body.String()); r.status != 200 || !strings.Contains(r.body, `"token"`) {
		t.Fatalf("multipart login: %d %s", r.status, r.body)
	}
}
