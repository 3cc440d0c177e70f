package server

import (
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/config"
)

func TestInstrumentHTTPHandlers(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		c := testConfig()
		c.Prometheus.Enabled = true
		c.Prometheus.InstrumentHTTPHandlers = on
		_, base := newServer(t, c)
		// A WebSocket connection works through the instrumentation (it
		// keeps http.Hijacker), and an API call is counted.
		dialConnect(t, base, "alice")
		if status, body := post(t, base+"/api/info", `{}`); status != 200 {
			t.Fatalf("instrument %v: API: status %d: %s", on, status, body)
		}
		_, metrics := get(t, base+"/metrics")
		api := `gyre_http_requests_total{code="200",handler="api",method="post"} 1`
		if got := strings.Contains(metrics, api); got != on {
			t.Errorf("instrument_http_handlers %v: metrics contain %q: %v", on, api, got)
		}
		if !on && strings.Contains(metrics, "gyre_http_requests_total{") {
			t.Errorf("instrument_http_handlers off, yet HTTP requests are counted")
		}
	}
}

// The key is honoured, so the config must not report it.
func TestInstrumentHTTPHandlersSupported(t *testing.T) {
	c, _, err := config.LoadBytes([]byte(`{"prometheus": {"enabled": true, "instrument_http_handlers": true}}`), config.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if u := c.Unsupported(); len(u) != 0 {
		t.Fatalf("reported as unsupported: %v", u)
	}
}
