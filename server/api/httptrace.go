package api

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// serveTraced is serve in a SERVER span that continues the trace of the
// request's traceparent header, or starts one.
func (h *Handler) serveTraced(w http.ResponseWriter, r *http.Request, name string) {
	ctx := RemoteContext(r.Context(), r.Header.Get("Traceparent"), TraceState(r.Header.Values("Tracestate")))
	method := requestMethod(r.Method)
	path := r.URL.Path
	spanName, known := h.spanNames[name]
	if !known {
		// An unknown method: its path is the sender's, any length, which
		// must not become a name per request.
		path = h.cfg.Prefix + "/{method}"
		spanName = path
		if method != "_OTHER" {
			spanName = method + " " + path
		}
	} else if method != http.MethodPost {
		spanName = method + strings.TrimPrefix(spanName, http.MethodPost)
	}
	ctx, span := h.tracer.Start(ctx, spanName,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", method),
			attribute.String("url.path", path),
		))
	defer span.End()
	sw := &statusWriter{ResponseWriter: w}
	h.serve(sw, r.WithContext(ctx), name)
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
}

// TraceState is the tracestate of a request whose header (or gRPC
// metadata) has the values v: joined, as W3C allows a sender to split
// it over several lines; "" when they are longer together than
// MaxTraceState.
func TraceState(v []string) string {
	switch len(v) {
	case 0:
		return ""
	case 1:
		return v[0]
	}
	n := 0
	for _, s := range v {
		n += len(s) + 1
	}
	if n > MaxTraceState+1 {
		return ""
	}
	return strings.Join(v, ",")
}

// requestMethod is the HTTP method as the span tells it: one of the
// standard methods, or "_OTHER", so that a sender cannot fill the
// attribute with what it likes.
func requestMethod(m string) string {
	switch m {
	case http.MethodPost, http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// statusWriter remembers the status of the response it writes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
