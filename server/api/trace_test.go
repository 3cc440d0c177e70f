package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre/server/api"
)

// A traceparent of trace 0af7...3319, span b7ad6b7169203331, sampled.
const (
	callerTrace      = "0af7651916cd43dd8448eb211c80319c"
	callerSpan       = "b7ad6b7169203331"
	callerParent     = "00-" + callerTrace + "-" + callerSpan + "-01"
	callerTraceState = "gyre=t61rcWkgMzE"
)

// newTracedEnv is newEnv with an API that records its spans.
func newTracedEnv(t *testing.T, cfg api.Config) (*env, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	cfg.TracerProvider = tp
	return newEnv(t, cfg), rec
}

// onlySpan is the one span rec holds, which has ended.
func onlySpan(t *testing.T, rec *tracetest.SpanRecorder) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := rec.Ended()
	if len(spans) != 1 || len(rec.Started()) != 1 {
		var names []string
		for _, s := range rec.Started() {
			names = append(names, s.Name())
		}
		t.Fatalf("want one span, got %d started (%v), %d ended", len(rec.Started()), names, len(spans))
	}
	return spans[0]
}

// attrs are the attributes of s by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// wantAttrs fails unless s has each of want (strings and ints compared
// by their emitted form) and none of the keys of absent.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]any, absent ...string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		g, ok := got[attribute.Key(k)]
		if !ok {
			t.Errorf("span %q: no attribute %s (has %v)", s.Name(), k, s.Attributes())
			continue
		}
		if g.Emit() != attribute.StringValue(toString(v)).Emit() {
			t.Errorf("span %q: %s = %s, want %v", s.Name(), k, g.Emit(), v)
		}
	}
	for _, k := range absent {
		if g, ok := got[attribute.Key(k)]; ok {
			t.Errorf("span %q: attribute %s = %s, want none", s.Name(), k, g.Emit())
		}
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// wantChildOfCaller fails unless s continues the caller's trace.
func wantChildOfCaller(t *testing.T, s sdktrace.ReadOnlySpan) {
	t.Helper()
	if got := s.SpanContext().TraceID().String(); got != callerTrace {
		t.Errorf("span %q: trace %s, want the caller's %s", s.Name(), got, callerTrace)
	}
	if got := s.Parent().SpanID().String(); got != callerSpan || !s.Parent().IsRemote() {
		t.Errorf("span %q: parent %s (remote %v), want the caller's %s", s.Name(), got, s.Parent().IsRemote(), callerSpan)
	}
}

func TestTracePublish(t *testing.T) {
	e, rec := newTracedEnv(t, api.Config{})
	status, body := e.post("publish", `{"channel":"hist:a","data":{"n":1}}`,
		"traceparent", callerParent, "tracestate", callerTraceState)
	if status != http.StatusOK || strings.Contains(string(body), "error") {
		t.Fatalf("status %d: %s", status, body)
	}
	s := onlySpan(t, rec)
	if s.Name() != "POST /api/publish" || s.SpanKind() != trace.SpanKindServer {
		t.Fatalf("span %q of kind %v, want POST /api/publish SERVER", s.Name(), s.SpanKind())
	}
	wantChildOfCaller(t, s)
	if got := s.SpanContext().TraceState().String(); got != callerTraceState {
		t.Errorf("tracestate %q, want the caller's %q", got, callerTraceState)
	}
	wantAttrs(t, s, map[string]any{
		"gyre.api.method": "publish", "gyre.channel": "hist:a",
		"http.request.method": "POST", "url.path": "/api/publish", "http.response.status_code": 200,
	}, "gyre.api.error_code", "gyre.channels.count")
	if s.Status().Code != codes.Unset {
		t.Errorf("status %v, want unset", s.Status())
	}
}

func TestTraceNewRootWithoutTraceparent(t *testing.T) {
	e, rec := newTracedEnv(t, api.Config{Prefix: "/api"})
	e.call("presence", `{"channel":"pres:a"}`, nil)
	s := onlySpan(t, rec)
	if s.Name() != "POST /api/presence" || s.Parent().IsValid() {
		t.Fatalf("span %q with parent %v, want POST /api/presence, a root", s.Name(), s.Parent())
	}
	wantAttrs(t, s, map[string]any{"gyre.api.method": "presence", "gyre.channel": "pres:a"})
}

func TestTraceBroadcast(t *testing.T) {
	e, rec := newTracedEnv(t, api.Config{})
	e.call("broadcast", `{"channels":["plain:a","plain:b","plain:c"],"data":{}}`, nil)
	s := onlySpan(t, rec)
	wantAttrs(t, s, map[string]any{"gyre.api.method": "broadcast", "gyre.channels.count": 3, "gyre.channel": "plain:a"})
}

func TestTraceErrorReply(t *testing.T) {
	for _, mode := range []string{"default", "transport"} {
		t.Run(mode, func(t *testing.T) {
			e, rec := newTracedEnv(t, api.Config{})
			wantStatus := http.StatusOK
			var hdr []string
			if mode == "transport" {
				hdr = []string{"X-Centrifugo-Error-Mode", "transport"}
				wantStatus = http.StatusNotFound
			}
			status, _ := e.post("publish", `{"channel":"nope:a","data":{}}`, hdr...)
			if status != wantStatus {
				t.Fatalf("status %d, want %d", status, wantStatus)
			}
			s := onlySpan(t, rec)
			wantAttrs(t, s, map[string]any{"gyre.api.error_code": 102, "http.response.status_code": wantStatus})
			if s.Status().Code != codes.Error {
				t.Errorf("status %v, want Error", s.Status())
			}
		})
	}
}

func TestTraceBatch(t *testing.T) {
	e, rec := newTracedEnv(t, api.Config{})
	status, body := e.post("batch", `{"commands":[
		{"publish":{"channel":"plain:a","data":{}}},
		{"presence":{"channel":"pres:a"}},
		{"publish":{"channel":"plain:b","data":{}}}]}`, "traceparent", callerParent)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	// One span for the batch: its commands get none of their own and do
	// not name their channels on it.
	s := onlySpan(t, rec)
	if s.Name() != "POST /api/batch" {
		t.Fatalf("span %q, want POST /api/batch", s.Name())
	}
	wantChildOfCaller(t, s)
	wantAttrs(t, s, map[string]any{"gyre.api.method": "batch", "gyre.api.commands": 3}, "gyre.channel")
}

func TestTraceLegacy(t *testing.T) {
	t.Run("one command", func(t *testing.T) {
		e, rec := newTracedEnv(t, api.Config{})
		status, body := e.postPath("/api", `{"method":"publish","params":{"channel":"plain:a","data":{}}}`, "traceparent", callerParent)
		if status != http.StatusOK || strings.Contains(string(body), "error") {
			t.Fatalf("status %d: %s", status, body)
		}
		s := onlySpan(t, rec)
		if s.Name() != "POST /api" {
			t.Fatalf("span %q, want POST /api", s.Name())
		}
		wantChildOfCaller(t, s)
		wantAttrs(t, s, map[string]any{"gyre.api.method": "publish", "gyre.channel": "plain:a", "url.path": "/api"})
	})
	t.Run("several commands", func(t *testing.T) {
		e, rec := newTracedEnv(t, api.Config{})
		status, body := e.postPath("/api", `{"method":"publish","params":{"channel":"plain:a","data":{}}}
{"method":"publish","params":{"channel":"plain:b","data":{}}}`)
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		s := onlySpan(t, rec)
		wantAttrs(t, s, map[string]any{"gyre.api.method": "batch", "gyre.api.commands": 2}, "gyre.channel")
	})
	t.Run("error", func(t *testing.T) {
		e, rec := newTracedEnv(t, api.Config{})
		e.postPath("/api", `{"method":"publish","params":{"channel":"nope:a","data":{}}}`)
		s := onlySpan(t, rec)
		wantAttrs(t, s, map[string]any{"gyre.api.error_code": 102})
	})
}

func TestTraceCustomPrefix(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEnv(t, api.Config{})
	h := api.NewHandlerFor(e.handler.Executor(), api.Config{Key: testKey, Prefix: "/v6/api", TracerProvider: tp})
	for _, path := range []string{"/v6/api/info", "/v6/api/nosuch", "/v6/api"} {
		req, _ := http.NewRequest(http.MethodPost, path, strings.NewReader(`{}`))
		req.Header.Set("X-API-Key", testKey)
		h.ServeHTTP(discard{}, req)
	}
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name()+" "+attrs(s)["url.path"].Emit())
	}
	want := []string{"POST /v6/api/info /v6/api/info", "POST /v6/api/{method} /v6/api/{method}", "POST /v6/api /v6/api"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Fatalf("spans %q, want %q", names, want)
	}
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// TestTraceHostileHeaders: a trace header that cannot be used starts a
// new trace, and the call is answered as without it.
func TestTraceHostileHeaders(t *testing.T) {
	// Valid but for its length: a future version may carry more fields,
	// which the propagator would accept.
	long := "01-" + callerTrace + "-" + callerSpan + "-01-" + strings.Repeat("a", 520)
	cases := []struct {
		name, parent, state string
		// continues: the traceparent is honoured (only the tracestate
		// was bad).
		continues bool
	}{
		{"oversized traceparent", long, "", false},
		{"wrong version", "ff-" + callerTrace + "-" + callerSpan + "-01", "", false},
		{"bad hex", "00-" + strings.Repeat("z", 32) + "-" + callerSpan + "-01", "", false},
		{"upper-case hex", "00-" + strings.ToUpper(callerTrace) + "-" + callerSpan + "-01", "", false},
		{"zero trace id", "00-" + strings.Repeat("0", 32) + "-" + callerSpan + "-01", "", false},
		{"zero span id", "00-" + callerTrace + "-" + strings.Repeat("0", 16) + "-01", "", false},
		{"short", "00-" + callerTrace[:30] + "-" + callerSpan + "-01", "", false},
		{"extra field in version 00", callerParent + "-00", "", false},
		{"garbage", "not a traceparent, {}[]~", "", false},
		{"dashes only", "---", "", false},
		{"oversized tracestate", callerParent, "a=" + strings.Repeat("b", 9000), true},
		{"malformed tracestate", callerParent, "=,=,not a member", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, rec := newTracedEnv(t, api.Config{})
			hdr := []string{"traceparent", tc.parent}
			if tc.state != "" {
				hdr = append(hdr, "tracestate", tc.state)
			}
			status, body := e.post("publish", `{"channel":"plain:a","data":{}}`, hdr...)
			if status != http.StatusOK || strings.Contains(string(body), "error") {
				t.Fatalf("status %d: %s", status, body)
			}
			s := onlySpan(t, rec)
			if tc.continues {
				wantChildOfCaller(t, s)
				if ts := s.SpanContext().TraceState().String(); ts != "" {
					t.Errorf("tracestate %q kept, want none", ts)
				}
				return
			}
			if s.Parent().IsValid() || s.SpanContext().TraceID().String() == callerTrace {
				t.Fatalf("span continues %v, want a new root", s.Parent())
			}
		})
	}
}

// TestTraceRefused: requests refused before any method runs get their
// span too, with the status they were answered.
func TestTraceRefused(t *testing.T) {
	e, rec := newTracedEnv(t, api.Config{})
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/publish", strings.NewReader(`{}`))
	status, _ := do(t, req) // no key
	if status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", status)
	}
	s := onlySpan(t, rec)
	wantAttrs(t, s, map[string]any{"http.response.status_code": 401}, "gyre.api.method")
}

func TestTraceSplitTraceState(t *testing.T) {
	e, rec := newTracedEnv(t, api.Config{})
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/info", strings.NewReader(`{}`))
	req.Header.Set("X-API-Key", testKey)
	req.Header.Set("traceparent", callerParent)
	req.Header.Add("tracestate", "a=1")
	req.Header.Add("tracestate", "b=2")
	if status, body := do(t, req); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := onlySpan(t, rec).SpanContext().TraceState().String(); got != "a=1,b=2" {
		t.Fatalf("tracestate %q, want a=1,b=2", got)
	}
}
