package otel_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestHostileTraceparent publishes under trace headers that are not to be
// followed: each call succeeds, and its API span starts a trace of its
// own (a root span, not in the trace the header names). A valid
// traceparent with a tracestate too big to read still continues the
// caller's trace.
func TestHostileTraceparent(t *testing.T) {
	requireJaeger(t)
	t.Parallel()
	service := serviceName(t)
	n := startNode(t, "A", nodeConfig("A"), toJaeger("http/protobuf", service))

	traceID, spanID := newID(16), newID(8)
	cases := []struct {
		name        string
		traceparent string
		tracestate  string
		continues   bool // the API span is the child of spanID in traceID
	}{
		{name: "bad hex", traceparent: "00-" + "zz" + traceID[2:] + "-" + spanID + "-01"},
		{name: "version ff", traceparent: "ff-" + traceID + "-" + spanID + "-01"},
		{name: "version 00 with more fields", traceparent: "00-" + traceID + "-" + spanID + "-01-extra"},
		// A later version may add fields, which a W3C parser accepts: only
		// the limit on the header's size refuses this one.
		{name: "oversized", traceparent: "01-" + traceID + "-" + spanID + "-01-" + strings.Repeat("a", 600)},
		{name: "zero trace id", traceparent: "00-" + strings.Repeat("0", 32) + "-" + spanID + "-01"},
		{name: "zero span id", traceparent: "00-" + traceID + "-" + strings.Repeat("0", 16) + "-01"},
		{name: "short", traceparent: "00-" + traceID[:20] + "-" + spanID + "-01"},
		{name: "oversized tracestate", traceparent: traceparent(traceID, spanID), tracestate: "k=" + strings.Repeat("v", 9000), continues: true},
	}
	channel := func(i int) string { return fmt.Sprintf("hostile-%d", i) }
	for i, c := range cases {
		h := map[string][]string{"Traceparent": {c.traceparent}}
		if c.tracestate != "" {
			h["Tracestate"] = []string{c.tracestate}
		}
		if _, err := n.CallWithHeader("publish", map[string]any{"channel": channel(i), "data": map[string]any{"case": c.name}}, h); err != nil {
			t.Errorf("%s: publish: %v; want a success", c.name, err)
		}
	}

	waitSpans(t, "an API span of each publish", func() ([]span, error) { return serviceSpans(service) }, func(spans []span) string {
		for i, c := range cases {
			var api *span
			for j, s := range spans {
				if s.Name == "POST /api/publish" && s.Attrs["gyre.channel"] == channel(i) {
					api = &spans[j]
				}
			}
			if api == nil {
				return "no API span of the publish " + c.name
			}
			if c.continues {
				if api.TraceID != traceID || api.ParentID != spanID {
					return c.name + ": the API span does not continue the caller's trace: " + api.String()
				}
				continue
			}
			if api.TraceID == traceID || api.ParentID != "" {
				return c.name + ": the API span is not the root of a new trace: " + api.String()
			}
		}
		return ""
	})
}
