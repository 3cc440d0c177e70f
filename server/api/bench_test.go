package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/server/api"
)

// benchServe runs body through the handler's ServeHTTP, as a request to
// /api/<method> with the key, once per iteration, without a network: the
// cost measured is the API's own (decode, run, encode) plus the node's.
func benchServe(b *testing.B, method, body string) {
	e := newEnv(b, api.Config{})
	req := httptest.NewRequest(http.MethodPost, "/api/"+method, nil)
	req.Header.Set("X-API-Key", testKey)
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
