package otel_test

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// TestMetricsOverOTLP has a node push its Prometheus metrics over OTLP,
// by each protocol, and finds the count of its API publishes among the
// metrics Jaeger received, labelled with the node's service name.
func TestMetricsOverOTLP(t *testing.T) {
	requireJaeger(t)
	t.Parallel()
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			service := serviceName(t)
			n := startNode(t, "A", nodeConfig("A"), toJaeger(proto, service))
			for i := range 3 {
				publish(t, n, "metered", fmt.Sprintf(`{"n":%d}`, i), "")
			}
			ofNode := func(l map[string]string) bool {
				return (l["service_name"] == service || l["job"] == service) && l["method"] == "publish"
			}
			waitMetric(t, "gyre_api_calls_total of the node's publishes", func(samples []sample) bool {
				v, ok := sum(samples, "gyre_api_calls_total", ofNode)
				if !ok {
					// The name without the suffix, should the exporter not
					// add it.
					v, ok = sum(samples, "gyre_api_calls", ofNode)
				}
				return ok && v >= 3
			})
		})
	}
}

// TestCollectorDown runs a node whose collector address has nothing
// listening: publishes still succeed, and the spans they made are counted
// as dropped (gyre_otel_spans_dropped_total), none as exported.
func TestCollectorDown(t *testing.T) {
	requireJaeger(t)
	t.Parallel()
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			// A port that was free a moment ago and that nobody listens on:
			// the listener is closed at once.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			dead := l.Addr().String()
			l.Close()
			exp := exporter{
				protocol: proto,
				endpoint: "http://" + dead,
				service:  serviceName(t),
				// Each export gives up after a second instead of ten: the
				// test waits for the failures.
				extra: []string{"OTEL_EXPORTER_OTLP_TIMEOUT=1000"},
			}
			n := startNode(t, "A", nodeConfig("A"), exp)
			dropped := func() float64 {
				samples, err := metrics(n)
				if err != nil {
					t.Fatalf("node metrics: %v", err)
				}
				v, _ := sum(samples, "gyre_otel_spans_dropped_total", nil)
				return v
			}
			before := dropped()

			const publishes = 20
			for i := range publishes {
				publish(t, n, "unheard", fmt.Sprintf(`{"n":%d}`, i), traceparent(newID(16), newID(8)))
			}

			deadline := time.Now().Add(traceLimit)
			for dropped() <= before {
				if time.Now().After(deadline) {
					t.Fatalf("gyre_otel_spans_dropped_total still %v %v after %d traced publishes to a collector that is down", before, traceLimit, publishes)
				}
				time.Sleep(250 * time.Millisecond)
			}
			samples, err := metrics(n)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := sum(samples, "gyre_otel_spans_exported_total", nil); !ok || v != 0 {
				t.Errorf("gyre_otel_spans_exported_total = %v (served: %v), want 0 with no collector", v, ok)
			}
		})
	}
}
