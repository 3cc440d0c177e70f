package gyreproc

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestConfigSet: dotted paths make nested maps, keep what is beside them,
// and replace a value that is in the way of a deeper key.
func TestConfigSet(t *testing.T) {
	c := Config{}
	c.Set("http_api.key", "k").Set("client.token.hmac_secret_key", "s").Set("client.allowed_origins", []string{"*"})
	c.Set("engine", "memory").Set("engine.type", "redis")
	got, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"client":{"allowed_origins":["*"],"token":{"hmac_secret_key":"s"}},"engine":{"type":"redis"},"http_api":{"key":"k"}}`
	if string(got) != want {
		t.Errorf("config %s, want %s", got, want)
	}
	if k := c.get("http_api.key"); k != "k" {
		t.Errorf(`get("http_api.key") = %v, want k`, k)
	}
	if v := c.get("engine.type.deeper"); v != nil {
		t.Errorf(`get("engine.type.deeper") = %v, want nil`, v)
	}
}

// TestInheritedEnv: a node sees the test's environment but for what would
// configure it.
func TestInheritedEnv(t *testing.T) {
	got := inheritedEnv([]string{"PATH=/bin", "GYRE_ENGINE_TYPE=redis", "CENTRIFUGO_LOG_LEVEL=debug", "OTEL_SERVICE_NAME=x", "HOME=/root", "XGYRE_=1"})
	want := []string{"PATH=/bin", "HOME=/root", "XGYRE_=1"}
	if !slices.Equal(got, want) {
		t.Errorf("inheritedEnv = %q, want %q", got, want)
	}
}
