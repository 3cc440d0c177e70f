package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/api"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	tests := []struct {
		name   string
		header [2]string
		query  string
		want   int
	}{
		{"X-API-Key", [2]string{"X-API-Key", testKey}, "", 200},
		{"Authorization apikey", [2]string{"Authorization", "apikey " + testKey}, "", 200},
		{"Authorization apikey any case", [2]string{"Authorization", "APIKey " + testKey}, "", 200},
		{"query api_key", [2]string{}, "?api_key=" + testKey, 200},
		{"missing", [2]string{}, "", 401},
		{"wrong X-API-Key", [2]string{"X-API-Key", "nope"}, "", 401},
		{"wrong query", [2]string{}, "?api_key=nope", 401},
		{"prefix of the key", [2]string{"X-API-Key", testKey[:4]}, "", 401},
		{"bearer", [2]string{"Authorization", "Bearer " + testKey}, "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/api/info"+tt.query, strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if tt.header[0] != "" {
				req.Header.Set(tt.header[0], tt.header[1])
			}
			if status, b := do(t, req); status != tt.want {
				t.Fatalf("status %d, want %d: %s", status, tt.want, b)
			}
		})
	}
}

func TestAuthConfig(t *testing.T) {
	t.Parallel()
	n, err := gyre.NewNode(gyre.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  api.Config
		key  string
		want int
	}{
		{"insecure without key", api.Config{Insecure: true}, "", 200},
		{"insecure with any key", api.Config{Insecure: true, Key: "k"}, "other", 200},
		// No key configured and not insecure: nobody gets in, not even
		// with an empty key.
		{"no key configured", api.Config{}, "", 401},
		{"custom prefix", api.Config{Key: "k", Prefix: "/v1/api"}, "k", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := tt.cfg.Prefix
			if prefix == "" {
				prefix = "/api"
			}
			req := httptest.NewRequest(http.MethodPost, prefix+"/info", strings.NewReader(`{}`))
			req.Header.Set("X-API-Key", tt.key)
			rec := httptest.NewRecorder()
			api.NewHandler(n, tt.cfg).ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
		})
	}
}
