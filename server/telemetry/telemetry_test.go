package telemetry_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/telemetry"
)

// clearOTelEnv empties the variables these tests set, so that the
// environment the tests run in does not choose for them.
func clearOTelEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_INSECURE",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
		"OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT",
		"OTEL_METRIC_EXPORT_INTERVAL", "OTEL_METRIC_EXPORT_TIMEOUT",
	} {
		t.Setenv(name, "")
	}
}

// request is one OTLP/HTTP request a receiver got.
type request struct {
	path, contentType string
	body              []byte
}

// receiver is an OTLP/HTTP endpoint: it answers each request with
// status() and hands it to the test.
type receiver struct {
	*httptest.Server
	requests chan request
	status   atomic.Int32
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{requests: make(chan request, 100)}
	r.status.Store(http.StatusOK)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		select {
		case r.requests <- request{path: req.URL.Path, contentType: req.Header.Get("Content-Type"), body: body}:
		default:
		}
		w.Header().Set("Content-Type", req.Header.Get("Content-Type"))
		w.WriteHeader(int(r.status.Load()))
	}))
	t.Cleanup(r.Close)
	return r
}

// next is the next request, or fails the test when none comes.
func (r *receiver) next(t *testing.T) request {
	t.Helper()
	select {
	case req := <-r.requests:
		return req
	case <-time.After(30 * time.Second):
		t.Fatal("no OTLP request arrived")
		return request{}
	}
}

// traceRequest decodes an OTLP/HTTP protobuf trace request.
func traceRequest(t *testing.T, req request) *colltrace.ExportTraceServiceRequest {
	t.Helper()
	if req.path != "/v1/traces" || req.contentType != "application/x-protobuf" {
		t.Fatalf("request to %s as %s, want /v1/traces as application/x-protobuf", req.path, req.contentType)
	}
	var m colltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(req.body, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// spanNames and resource read an export request.
func spanNames(m *colltrace.ExportTraceServiceRequest) []string {
	var out []string
	for _, rs := range m.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				out = append(out, s.Name)
			}
		}
	}
	return out
}

func resourceOf(m *colltrace.ExportTraceServiceRequest) map[string]string {
	out := map[string]string{}
	for _, rs := range m.ResourceSpans {
		for _, kv := range rs.Resource.GetAttributes() {
			out[kv.Key] = kv.Value.GetStringValue()
		}
	}
	return out
}

// newTelemetry starts telemetry o with the environment as set.
func newTelemetry(t *testing.T, o config.OpenTelemetry, reg *prometheus.Registry, log *slog.Logger) *telemetry.Telemetry {
	t.Helper()
	cfg := telemetry.Config{OpenTelemetry: o, NodeID: "node-7", Version: "9.9.9", Logger: log}
	if reg != nil {
		cfg.Registerer, cfg.Gatherer = reg, reg
	}
	tel, err := telemetry.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

func span(tel *telemetry.Telemetry, name string) {
	_, s := tel.TracerProvider().Tracer("test").Start(context.Background(), name)
	s.End()
}

func TestDisabled(t *testing.T) {
	reg := prometheus.NewRegistry()
	tel, err := telemetry.New(t.Context(), telemetry.Config{OpenTelemetry: config.OpenTelemetry{API: true, Delivery: true, Metrics: true}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if tel.TracerProvider() != nil || tel.APITracerProvider() != nil || tel.DeliveryTracer() != nil {
		t.Error("a disabled Telemetry hands out providers")
	}
	tel.FannedOut(&telemetry.FanOut{Trace: telemetry.EncodeSpanContext(sampledContext())})
	if err := tel.Shutdown(t.Context()); err != nil {
		t.Error(err)
	}
	if n, _ := testutil.GatherAndCount(reg); n != 0 {
		t.Errorf("a disabled Telemetry registered %d series", n)
	}
	var none *telemetry.Telemetry
	if none.TracerProvider() != nil || none.ProxyTracerProvider() != nil || none.DeliveryTracer() != nil || none.Shutdown(t.Context()) != nil {
		t.Error("a nil Telemetry is not off")
	}
}

// TestProtocols: the environment picks the exporter, and each sends what
// a collector expects, to where the variables say.
func TestProtocols(t *testing.T) {
	t.Run("http/protobuf by default", func(t *testing.T) {
		clearOTelEnv(t)
		r := newReceiver(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL)
		t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test,service.namespace=rt")
		tel := newTelemetry(t, config.OpenTelemetry{Enabled: true}, nil, nil)
		span(tel, "one")
		if err := tel.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		m := traceRequest(t, r.next(t))
		if names := spanNames(m); len(names) != 1 || names[0] != "one" {
			t.Errorf("spans %v, want [one]", names)
		}
		res := resourceOf(m)
		for k, v := range map[string]string{"service.name": "gyre", "service.instance.id": "node-7", "service.version": "9.9.9", "deployment.environment": "test", "service.namespace": "rt"} {
			if res[k] != v {
				t.Errorf("resource %s = %q, want %q", k, res[k], v)
			}
		}
	})
	t.Run("http/json", func(t *testing.T) {
		clearOTelEnv(t)
		r := newReceiver(t)
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", r.URL+"/custom/path")
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
		t.Setenv("OTEL_SERVICE_NAME", "edge")
		tel := newTelemetry(t, config.OpenTelemetry{Enabled: true}, nil, nil)
		span(tel, "json-span")
		if err := tel.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		req := r.next(t)
		if req.path != "/custom/path" || req.contentType != "application/json" {
			t.Fatalf("request to %s as %s, want /custom/path as application/json", req.path, req.contentType)
		}
		for _, want := range []string{`"json-span"`, `"edge"`} {
			if !bytes.Contains(req.body, []byte(want)) {
				t.Errorf("body lacks %s: %s", want, req.body)
			}
		}
	})
	t.Run("grpc", func(t *testing.T) {
		clearOTelEnv(t)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		got := &traceService{requests: make(chan *colltrace.ExportTraceServiceRequest, 10)}
		colltrace.RegisterTraceServiceServer(srv, got)
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(srv.Stop)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
		tel := newTelemetry(t, config.OpenTelemetry{Enabled: true}, nil, nil)
		span(tel, "grpc-span")
		if err := tel.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-got.requests:
			if names := spanNames(m); len(names) != 1 || names[0] != "grpc-span" {
				t.Errorf("spans %v, want [grpc-span]", names)
			}
		default:
			t.Fatal("the gRPC collector got nothing")
		}
	})
}

type traceService struct {
	colltrace.UnimplementedTraceServiceServer
	requests chan *colltrace.ExportTraceServiceRequest
}

func (s *traceService) Export(_ context.Context, m *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	s.requests <- m
	return &colltrace.ExportTraceServiceResponse{}, nil
}

func TestRefusedEnv(t *testing.T) {
	for _, tt := range []struct {
		name, variable, value, want string
		metrics                     bool
	}{
		{"http/json for metrics", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", `"http/json" is not supported for metrics`, true},
		{"unknown protocol", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift", `unknown OTLP protocol "thrift"`, false},
		{"unknown sampler", "OTEL_TRACES_SAMPLER", "sometimes", `unknown sampler "sometimes"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clearOTelEnv(t)
			t.Setenv(tt.variable, tt.value)
			reg := prometheus.NewRegistry()
			_, err := telemetry.New(t.Context(), telemetry.Config{OpenTelemetry: config.OpenTelemetry{Enabled: true, Metrics: tt.metrics}, Registerer: reg, Gatherer: reg})
			if err == nil || !strings.Contains(err.Error(), tt.variable) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error naming %s: %s", err, tt.variable, tt.want)
			}
		})
	}
}

// syncBuffer is a log destination for a test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(substr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), substr)
}

// waitFor polls cond until it holds; it fails the test after a long while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func dropped(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	return counter(t, reg, "gyre_otel_spans_dropped_total", reason)
}

// counter reads a series of reg: name, with the reason label when given.
func counter(t *testing.T, reg *prometheus.Registry, name, reason string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if reason == "" || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == reason) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("%s{reason=%q} is not registered", name, reason)
	return 0
}

// TestHangingCollector: a collector that takes requests and never answers
// does not hold up the code that ends spans; what cannot be queued or
// exported is counted, every span once, and the failures are logged once.
func TestHangingCollector(t *testing.T) {
	clearOTelEnv(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	t.Setenv("OTEL_BSP_EXPORT_TIMEOUT", "100")
	reg := prometheus.NewRegistry()
	var logs syncBuffer
	tel := newTelemetry(t, config.OpenTelemetry{Enabled: true}, reg, slog.New(slog.NewTextHandler(&logs, nil)))

	const n = 500
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for range n {
			span(tel, "s")
		}
	}()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("ending spans blocked on a collector that does not answer")
	}
	waitFor(t, "a failed export", func() bool { return dropped(t, reg, "export_failed") > 0 })
	if dropped(t, reg, "queue_full") == 0 {
		t.Error("no span dropped for a full queue of 8 while the exports hang")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// It may have nothing left to flush; either way every span is counted
	// once it returns.
	_ = tel.Shutdown(ctx)
	exported := counter(t, reg, "gyre_otel_spans_exported_total", "")
	full, failed := dropped(t, reg, "queue_full"), dropped(t, reg, "export_failed")
	if exported != 0 || full+failed != n {
		t.Errorf("exported %v, dropped %v for a full queue and %v failed: want 0 and %d in all", exported, full, failed, n)
	}
	if c := logs.count("span export failed"); c != 1 {
		t.Errorf("%d lines about failed exports, want one for the episode:\n%s", c, logs.b.String())
	}
	if logs.count("span queue full") == 0 {
		t.Errorf("no line about the full queue:\n%s", logs.b.String())
	}
}

// TestExportRecovers: a collector that refuses, then takes, gives one line
// for the failures and one when exports work again.
func TestExportRecovers(t *testing.T) {
	clearOTelEnv(t)
	r := newReceiver(t)
	r.status.Store(http.StatusBadRequest) // not retried
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL)
	reg := prometheus.NewRegistry()
	var logs syncBuffer
	tel := newTelemetry(t, config.OpenTelemetry{Enabled: true}, reg, slog.New(slog.NewTextHandler(&logs, nil)))
	for range 3 {
		span(tel, "refused")
		if err := tel.ForceFlush(t.Context()); err == nil {
			t.Error("ForceFlush reported no error from a refusing collector")
		}
	}
	r.status.Store(http.StatusOK)
	span(tel, "taken")
	if err := tel.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := dropped(t, reg, "export_failed"); got != 3 {
		t.Errorf("export_failed = %v, want 3", got)
	}
	if got := counter(t, reg, "gyre_otel_spans_exported_total", ""); got != 1 {
		t.Errorf("exported = %v, want 1", got)
	}
	if f, ok := logs.count("span export failed"), logs.count("span export recovered"); f != 1 || ok != 1 {
		t.Errorf("%d failure and %d recovery lines, want 1 and 1:\n%s", f, ok, logs.b.String())
	}
}

// TestMetricsPush: with metrics on, what the Prometheus registry holds is
// pushed over OTLP too.
func TestMetricsPush(t *testing.T) {
	clearOTelEnv(t)
	r := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL)
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "20")
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "gyre_test_things_total", Help: "Things."})
	reg.MustRegister(c)
	c.Add(5)
	newTelemetry(t, config.OpenTelemetry{Enabled: true, Metrics: true}, reg, nil)
	for {
		req := r.next(t)
		if req.path != "/v1/metrics" {
			continue
		}
		var m collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(req.body, &m); err != nil {
			t.Fatal(err)
		}
		for _, rm := range m.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, metric := range sm.Metrics {
					if metric.Name == "gyre_test_things_total" {
						if v := metric.GetSum().GetDataPoints()[0].GetAsDouble(); v != 5 {
							t.Errorf("pushed %v, want 5", v)
						}
						return
					}
				}
			}
		}
	}
}
