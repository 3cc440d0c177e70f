package otel_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/wstest"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
	"github.com/gyrehq/gyre/token"
)

const (
	hmacSecret = "gyre-otel-test-secret-0123456789abcdef"
	apiKey     = "gyre-otel-test-api-key"
	// waitLimit bounds every wait for a client's reply or push.
	waitLimit = 30 * time.Second
)

// nodeConfig is the configuration of a node named name on the memory
// engine with every kind of telemetry on: spans of the API, the proxies
// and the fan-out, and the metrics pushed over OTLP.
func nodeConfig(name string) gyreproc.Config {
	c := gyreproc.Config{}
	c.Set("log.level", "info")
	c.Set("client.token.hmac_secret_key", hmacSecret)
	c.Set("client.allowed_origins", []string{"*"})
	c.Set("http_api.key", apiKey)
	c.Set("health.enabled", true)
	c.Set("prometheus.enabled", true)
	c.Set("node.name", name)
	c.Set("channel.without_namespace.allow_subscribe_for_client", true)
	c.Set("opentelemetry", map[string]any{
		"enabled":  true,
		"api":      true,
		"proxy":    true,
		"delivery": true,
		"metrics":  true,
	})
	return c
}

// exporter is the OTLP export of a node: the standard environment of the
// OpenTelemetry SDK.
type exporter struct {
	protocol string // http/protobuf or grpc
	endpoint string // http://host:port
	service  string // OTEL_SERVICE_NAME
	extra    []string
}

// toJaeger is the export of a node named service to the test's Jaeger
// over protocol.
func toJaeger(protocol, service string) exporter {
	addr := jaeger.otlpHTTP
	if protocol == "grpc" {
		addr = jaeger.otlpGRPC
	}
	return exporter{protocol: protocol, endpoint: "http://" + addr, service: service}
}

func (e exporter) env() []string {
	return append([]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + e.endpoint,
		"OTEL_EXPORTER_OTLP_PROTOCOL=" + e.protocol,
		"OTEL_SERVICE_NAME=" + e.service,
		// Spans and metrics leave every fraction of a second, so that
		// the tests poll for less time.
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_METRIC_EXPORT_INTERVAL=500",
	}, e.extra...)
}

// noTelemetry is what a gyre built before tracing existed logs about the
// opentelemetry section.
const noTelemetry = `key \"opentelemetry\" is not implemented by Gyre`

// startNode runs a node named name on cfg, exporting to exp, until the
// test ends. A gyre that ignores the opentelemetry section (one built
// before tracing existed) skips the test.
func startNode(t testing.TB, name string, cfg gyreproc.Config, exp exporter) *gyreproc.Node {
	t.Helper()
	n := gyreproc.Start(t, name, cfg, exp.env()...)
	if strings.Contains(n.Log(), noTelemetry) {
		t.Skipf("this gyre has no OpenTelemetry support: it ignores the opentelemetry section (%s)", noTelemetry)
	}
	return n
}

// publish publishes data into channel through the HTTP API of n, with a
// traceparent header unless it is "", and fails the test unless the
// reply is a success.
func publish(t testing.TB, n *gyreproc.Node, channel, data, tp string) {
	t.Helper()
	h := http.Header{}
	if tp != "" {
		h.Set("Traceparent", tp)
	}
	if _, err := n.CallWithHeader("publish", map[string]any{"channel": channel, "data": json.RawMessage(data)}, h); err != nil {
		t.Fatalf("node %s: publish with traceparent %q: %v", n.Name, tp, err)
	}
}

// metrics scrapes the Prometheus endpoint of n.
func metrics(n *gyreproc.Node) ([]sample, error) {
	return scrape(n.Base + "/metrics")
}

// connectUser dials node n and connects as user.
func connectUser(t testing.TB, n *gyreproc.Node, user string) *wstest.Client {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(hmacSecret), map[string]any{
		"sub": user,
		"exp": time.Now().Add(time.Hour).Unix(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := dialNode(t, n)
	r := c.Call(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok, Name: "otel-test"}})
	if r.Error != nil {
		t.Fatalf("connect to %s: error %d %s", n.Name, r.Error.Code, r.Error.Message)
	}
	return c
}

// dialNode opens a WebSocket to n, speaking the JSON protocol.
func dialNode(t testing.TB, n *gyreproc.Node) *wstest.Client {
	t.Helper()
	return wstest.Dial(t, n.WSURL(), protocol.TypeJSON, wstest.WaitLimit(waitLimit))
}
