package main

import (
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/config"
)

// TestHealthCommand runs gyre health against real servers: one whose
// health endpoint is on, one without it, and none at all.
func TestHealthCommand(t *testing.T) {
	t.Parallel()
	t.Run("up", func(t *testing.T) {
		t.Parallel()
		p := start(t, nil, "-c", writeFile(t, "config.json", `{"health":{"enabled":true}}`), "--http_server.port", "0")
		code, out, errOut := runTool(t, t.TempDir(), "health", "--url", p.url()+"/health")
		if code != 0 || !strings.Contains(out, "200 OK") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
	t.Run("URL from the config", func(t *testing.T) {
		t.Parallel()
		// The internal port and another path: the URL must follow both.
		internal := freePort(t)
		path := writeFile(t, "config.json", `{
			"http_server": {"port": `+freePort(t)+`, "internal_port": `+internal+`},
			"health": {"enabled": true, "handler_prefix": "/ready"}
		}`)
		start(t, nil, "-c", path)
		code, out, errOut := runTool(t, t.TempDir(), "health", "-c", path)
		if code != 0 || !strings.Contains(out, "http://127.0.0.1:"+internal+"/ready: 200 OK") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
	t.Run("down", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := runTool(t, t.TempDir(), "health", "--url", "http://127.0.0.1:"+freePort(t)+"/health")
		if code != 1 || !strings.HasPrefix(errOut, "gyre: health: ") || out != "" {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
	t.Run("health off", func(t *testing.T) {
		t.Parallel()
		path := writeFile(t, "config.json", `{}`)
		p := start(t, nil, "-c", path, "--http_server.port", "0")
		code, out, errOut := runTool(t, t.TempDir(), "health", "--url", p.url()+"/health")
		if code != 1 || !strings.Contains(errOut, "404 Not Found") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		// From the config it says so without asking.
		code, out, errOut = runTool(t, t.TempDir(), "health", "-c", path)
		if code != 1 || !strings.Contains(errOut, "health.enabled is off in "+path) {
			t.Fatalf("-c: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
}

// TestHealthURL: the URL follows the server's choice of port, address and
// TLS for its internal endpoints.
func TestHealthURL(t *testing.T) {
	t.Parallel()
	on := config.TLS{Enabled: true}
	tests := []struct {
		name string
		hs   config.HTTPServer
		want string
	}{
		{"defaults", config.HTTPServer{Port: 8000}, "http://127.0.0.1:8000/health"},
		{"one address", config.HTTPServer{Address: "10.0.0.5", Port: 8000}, "http://10.0.0.5:8000/health"},
		{"IPv6 wildcard", config.HTTPServer{Address: "::", Port: 8000}, "http://[::1]:8000/health"},
		{"TLS", config.HTTPServer{Port: 8000, TLS: on}, "https://127.0.0.1:8000/health"},
		{"internal port", config.HTTPServer{Port: 8000, InternalPort: 9000, InternalAddress: "127.0.0.2"}, "http://127.0.0.2:9000/health"},
		{"internal port under tls", config.HTTPServer{Port: 8000, InternalPort: 9000, TLS: on}, "https://127.0.0.1:9000/health"},
		{"tls_external", config.HTTPServer{Port: 8000, InternalPort: 9000, TLS: on, TLSExternal: true}, "http://127.0.0.1:9000/health"},
		{"internal_tls", config.HTTPServer{Port: 8000, InternalPort: 9000, InternalTLS: on}, "https://127.0.0.1:9000/health"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := healthURL(tt.hs, "/health")
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := healthURL(config.HTTPServer{}, "/health"); err == nil {
		t.Fatal("port 0: no error")
	}
}
