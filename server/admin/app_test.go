package admin_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/admin"
)

func TestPrefix(t *testing.T) {
	for _, prefix := range []string{"/ops", "/ops/", "ops"} {
		e := newEnv(t, admin.Config{Prefix: prefix})
		if !strings.HasSuffix(e.base, "/ops") {
			t.Fatalf("prefix %q served at %s", prefix, e.base)
		}
		if r := e.get("/", ""); r.status != 200 || !strings.Contains(r.body, "<html") {
			t.Fatalf("prefix %q, app: %d %s", prefix, r.status, r.body)
		}
		// The application's pages are in the fragment: a deep link loads
		// the prefix itself.
		if r := e.get("/#/channels/chat:index", ""); r.status != 200 || !strings.Contains(r.body, "<html") {
			t.Fatalf("prefix %q, deep link: %d %s", prefix, r.status, r.body)
		}
		// A build's file that is not there is a 404, not the application.
		if r := e.get("/assets/app-OLD.js", ""); r.status != 404 {
			t.Fatalf("prefix %q, stale asset: %d", prefix, r.status)
		}
		tok := e.token()
		if r := e.postJSON("/admin/api", tok, `{"method":"info","params":{}}`); r.status != 200 {
			t.Fatalf("prefix %q, api: %d %s", prefix, r.status, r.body)
		}
		// Unknown admin routes are 404, not the application.
		if r := e.get("/admin/nothing", tok); r.status != 404 || !strings.Contains(r.body, `"error"`) {
			t.Fatalf("prefix %q, unknown route: %d %s", prefix, r.status, r.body)
		}
		// Nothing outside the prefix.
		root := strings.TrimSuffix(e.base, "/ops")
		e.base = root
		if r := e.postJSON("/admin/auth", "", ""); r.status != 404 {
			t.Fatalf("prefix %q: auth outside the prefix answers %d", prefix, r.status)
		}
	}
}

// TestNotFound: whatever the prefix, a path that is neither the
// application's page, a file of its build, nor an admin route answers 404,
// so that the admin at the root cannot pass for a disabled endpoint
// (/health, /metrics, /debug/pprof/) or an unknown API path.
func TestNotFound(t *testing.T) {
	for _, prefix := range []string{"", "/admin"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			e := newEnv(t, admin.Config{Prefix: prefix})
			tok := e.token()
			for _, path := range []string{
				"/health", "/metrics", "/debug/pprof/", "/debug/pprof/cmdline", "/api", "/api/publish",
				"/connection/websocket", "/status", "/channels/chat:1", "/favicon.ico", "/assets/",
				"/assets/app-OLD.js", "/index.htm", "/a/b/c",
			} {
				for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodHead} {
					if r := e.do(method, path, tok, "", ""); r.status != 404 || strings.Contains(r.body, "<html") {
						t.Errorf("%s %s%s: %d %.80s", method, prefix, path, r.status, r.body)
					}
				}
			}
			if r := e.get("/admin/nothing", tok); r.status != 404 || !strings.Contains(r.body, `"error"`) {
				t.Errorf("unknown admin route: %d %s", r.status, r.body)
			}
			// What the application is made of is there.
			for _, path := range []string{"/", "/index.html", "/#/channels/chat:1", "/favicon.svg", "/" + assetOf(t, e)} {
				if r := e.get(path, ""); r.status != 200 {
					t.Errorf("GET %s%s: %d", prefix, path, r.status)
				}
			}
			if r := e.do(http.MethodPost, "/", "", "", ""); r.status != 405 {
				t.Errorf("POST %s/: %d", prefix, r.status)
			}
		})
	}
}

// assetOf is the path of the script the embedded index.html loads.
func assetOf(t *testing.T, e *env) string {
	t.Helper()
	m := regexp.MustCompile(`src="\./(assets/[^"]+)"`).FindStringSubmatch(e.get("/", "").body)
	if m == nil {
		t.Fatal("the embedded index.html loads no script from assets/")
	}
	return m[1]
}

func TestWebPath(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("index.html", "<html>custom build</html>")
	write("assets/app.js", "console.log('custom')")
	e := newEnv(t, admin.Config{WebPath: dir})
	if r := e.get("/", ""); r.status != 200 || r.body != "<html>custom build</html>" {
		t.Fatalf("index: %d %q", r.status, r.body)
	}
	if r := e.get("/assets/app.js", ""); r.status != 200 || r.body != "console.log('custom')" {
		t.Fatalf("asset: %d %q", r.status, r.body)
	}
	if r := e.get("/#/status", ""); r.status != 200 || r.body != "<html>custom build</html>" {
		t.Fatalf("deep link: %d %q", r.status, r.body)
	}
	if r := e.get("/status", ""); r.status != 404 {
		t.Fatalf("a path that is no file: %d %q", r.status, r.body)
	}
	if r := e.get("/../../etc/passwd", ""); strings.Contains(r.body, "root:") {
		t.Fatal("a path outside web_path was served")
	}
	// A directory without index.html is refused at start.
	if _, err := admin.New(e.node, nil, admin.Config{Insecure: true, WebPath: t.TempDir()}); err == nil {
		t.Fatal("web_path without index.html accepted")
	}
	if _, err := admin.New(e.node, nil, admin.Config{Insecure: true, WebPath: filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("missing web_path accepted")
	}
}

func TestWebProxy(t *testing.T) {
	dev := newEnv(t, admin.Config{WebPath: writeApp(t, "<html>dev server</html>")})
	e := newEnv(t, admin.Config{WebProxyAddress: dev.srv.URL})
	if r := e.get("/", ""); r.status != 200 || r.body != "<html>dev server</html>" {
		t.Fatalf("proxied app: %d %q", r.status, r.body)
	}
	// The admin routes are still this server's.
	if r := e.get("/admin/init", ""); r.status != 200 || !strings.Contains(r.body, `"edition"`) {
		t.Fatalf("init through the proxying handler: %d %s", r.status, r.body)
	}
	if _, err := admin.New(e.node, nil, admin.Config{Insecure: true, WebProxyAddress: "not a url"}); err == nil {
		t.Fatal("bad web_proxy_address accepted")
	}
}

func writeApp(t *testing.T, index string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
