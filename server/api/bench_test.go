package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gyrehq/gyre/server/api"
)

// benchServe runs body through the handler's ServeHTTP, as a request to
// /api/<method> with the key, once per iteration, without a network: the
// cost measured is the API's own (decode, run, encode) plus the node's.
func benchServe(b *testing.B, method, body string) {
	benchServeWith(b, api.Config{}, method, body)
}

// benchServeWith is benchServe with the API configured by cfg and the
// request carrying header (name, value pairs).
func benchServeWith(b *testing.B, cfg api.Config, method, body string, header ...string) {
	e := newEnv(b, cfg)
	req := httptest.NewRequest(http.MethodPost, "/api/"+method, nil)
	req.Header.Set("X-API-Key", testKey)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	b.ReportAllocs()
	for b.Loop() {
		r := req.Clone(req.Context())
		r.Body = nopBody{strings.NewReader(body)}
		w := httptest.NewRecorder()
		e.handler.ServeHTTP(w, r)
		if w.Code != http.StatusOK || strings.Contains(w.Body.String(), `"error"`) {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

type nopBody struct{ *strings.Reader }

func (nopBody) Close() error { return nil }

// BenchmarkHTTPPublish is one publish into a channel without history or
// subscribers: the API's fixed cost per call.
func BenchmarkHTTPPublish(b *testing.B) {
	benchServe(b, "publish", `{"channel":"plain:bench","data":{"text":"hello, world","n":42}}`)
}

// BenchmarkHTTPPublishHistory publishes into a channel with history.
func BenchmarkHTTPPublishHistory(b *testing.B) {
	benchServe(b, "publish", `{"channel":"hist:bench","data":{"text":"hello, world","n":42}}`)
}

// BenchmarkHTTPBatch10 is a sequential batch of ten publishes.
func BenchmarkHTTPBatch10(b *testing.B) {
	cmd := `{"publish":{"channel":"plain:bench","data":{"text":"hello, world","n":42}}}`
	body := `{"commands":[` + strings.Repeat(cmd+",", 9) + cmd + `]}`
	benchServe(b, "batch", body)
}

// BenchmarkHTTPHistory reads ten publications.
func BenchmarkHTTPHistory(b *testing.B) {
	e := newEnv(b, api.Config{})
	for range 10 {
		e.node.Publish("hist:read", []byte(`{"text":"hello, world"}`))
	}
	req := httptest.NewRequest(http.MethodPost, "/api/history", nil)
	req.Header.Set("X-API-Key", testKey)
	body := `{"channel":"hist:read","limit":10}`
	b.ReportAllocs()
	for b.Loop() {
		r := req.Clone(req.Context())
		r.Body = nopBody{strings.NewReader(body)}
		w := httptest.NewRecorder()
		e.handler.ServeHTTP(w, r)
		if w.Code != http.StatusOK || strings.Contains(w.Body.String(), `"error"`) {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkHTTPPublishTracing is BenchmarkHTTPPublish without tracing
// (tracer=nil: no TracerProvider) and with the SDK's (tracer=sdk: every
// span sampled, batched and handed to an exporter that drops it), with
// and without an incoming traceparent. Compare with
// benchstat -col /tracer.
func BenchmarkHTTPPublishTracing(b *testing.B) {
	const body = `{"channel":"plain:bench","data":{"text":"hello, world","n":42}}`
	for _, tc := range []struct {
		name   string
		traced bool
		header []string
	}{
		{"tracer=nil/traceparent=no", false, nil},
		{"tracer=sdk/traceparent=no", true, nil},
		{"tracer=nil/traceparent=yes", false, []string{"traceparent", callerParent}},
		{"tracer=sdk/traceparent=yes", true, []string{"traceparent", callerParent}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var cfg api.Config
			if tc.traced {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				cfg.TracerProvider = tp
			}
			benchServeWith(b, cfg, "publish", body, tc.header...)
		})
	}
}

// discardExporter drops what it is given.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }
