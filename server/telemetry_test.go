package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/gyrehq/gyre/server/telemetry"
)

// TestTelemetryServer starts a server with opentelemetry on against an
// OTLP/HTTP endpoint: the start-up line says where spans go and what is
// traced, without the headers; the span counters are served as
// docs/metrics.md documents them; and the spans ended before Shutdown,
// the delivery tracer's among them, reach the endpoint with the node's id.
func TestTelemetryServer(t *testing.T) {
	spans := make(chan *colltrace.ExportTraceServiceRequest, 10)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m colltrace.ExportTraceServiceRequest
		if r.URL.Path == "/v1/traces" && proto.Unmarshal(body, &m) == nil {
			spans <- &m
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")

	c := testConfig()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.Prometheus.Enabled = true
	c.OpenTelemetry.Enabled = true
	c.OpenTelemetry.API = true
	c.OpenTelemetry.Delivery = true
	s, logs := startLogged(t, c)

	on := logs.Find(slog.LevelInfo, "opentelemetry tracing on", map[string]string{
		"protocol": "http/protobuf", "endpoint": collector.URL + "/v1/traces",
	})
	if len(on) != 1 {
		t.Errorf("%d start-up lines saying tracing is on, where, want 1", len(on))
	} else if traced := on[0].Attr("traced"); traced != "[api delivery]" {
		t.Errorf("traced = %s, want [api delivery]", traced)
	}
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		for _, r := range logs.Find(level, "", nil) {
			for k, v := range r.Attrs {
				if strings.Contains(v.String(), "s3cret") {
					t.Errorf("%q logs the exporter's headers in %s", r.Message, k)
				}
			}
		}
	}

	page := scrapeMetrics(t, "http://"+s.Addr().String())
	for _, row := range parseMetricsDoc(t).gyre {
		if row.otel {
			page.checkFamily(t, row.name, row.typ, row.labels, nil)
		}
	}

	if s.tel.APITracerProvider() == nil || s.tel.ProxyTracerProvider() != nil {
		t.Error("the providers handed out do not follow the api and proxy keys")
	}
	_, pub := s.tel.APITracerProvider().Tracer("test").Start(context.Background(), "POST /api/publish")
	pub.End()
	s.delivery.FannedOut(&telemetry.FanOut{Trace: telemetry.EncodeSpanContext(pub.SpanContext()), Channel: "news", Reached: 1, Subscribers: 1})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for len(spans) > 0 {
		m := <-spans
		for _, rs := range m.ResourceSpans {
			var instance string
			for _, kv := range rs.Resource.GetAttributes() {
				if kv.Key == "service.instance.id" {
					instance = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					got[sp.Name] = instance
					if sp.Name == "fanout" && trace.SpanID(sp.ParentSpanId) != pub.SpanContext().SpanID() {
						t.Errorf("fanout's parent is %x, want the publisher's %v", sp.ParentSpanId, pub.SpanContext().SpanID())
					}
				}
			}
		}
	}
	for _, name := range []string{"POST /api/publish", "fanout"} {
		if got[name] != s.Node().ID() {
			t.Errorf("span %q arrived from instance %q, want the node's id %q (got %v)", name, got[name], s.Node().ID(), got)
		}
	}
}

// TestTelemetryOff: without opentelemetry.enabled nothing is handed out.
func TestTelemetryOff(t *testing.T) {
	t.Parallel()
	c := testConfig()
	c.OpenTelemetry.API = true // no effect while off
	s, _ := newServer(t, c)
	if s.tel.TracerProvider() != nil || s.tel.APITracerProvider() != nil || s.delivery != nil {
		t.Error("telemetry set up while opentelemetry.enabled is false")
	}
}
