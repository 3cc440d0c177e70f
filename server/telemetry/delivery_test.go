package telemetry_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/telemetry"
)

// defaultEnv is the environment with no OTEL_ variable set.
func defaultEnv(t *testing.T, o config.OpenTelemetry) *config.OTelEnv {
	t.Helper()
	env, err := o.ReadOTelEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// startInMemory starts telemetry o that exports to memory.
func startInMemory(t *testing.T, o config.OpenTelemetry) (*telemetry.Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.StartWithExporter(t.Context(), telemetry.Config{OpenTelemetry: o, NodeID: "node-1", Version: "1.2.3"}, defaultEnv(t, o), exp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, exp
}

func TestFanOutSpan(t *testing.T) {
	tel, exp := startInMemory(t, config.OpenTelemetry{Enabled: true, API: true, Delivery: true})
	dt := tel.DeliveryTracer()
	if dt == nil {
		t.Fatal("DeliveryTracer is nil with delivery on")
	}
	// The publisher's span, as the API would make it.
	_, pub := tel.APITracerProvider().Tracer("test").Start(context.Background(), "POST /api/publish")
	pub.End()
	start := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	runs := []*telemetry.FanOut{
		{Trace: telemetry.EncodeSpanContext(pub.SpanContext()), Channel: "chat:1", Offset: 42, Publications: 1, Start: start, End: start.Add(3 * time.Millisecond), Subscribers: 10, Reached: 7, Filtered: 2, Dropped: 1},
		{Trace: telemetry.EncodeSpanContext(pub.SpanContext()), Channel: "chat:2", Pattern: "chat:*", Publications: 3, Start: start, End: start.Add(time.Millisecond), Subscribers: 1, Reached: 3},
		{Trace: nil, Channel: "untraced"},
		{Trace: []byte("not a span context"), Channel: "garbage"},
	}
	for _, f := range runs {
		dt.FannedOut(f)
	}
	if err := tel.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("exported %d spans, want the publisher's and two fanout spans: %v", len(spans), spans)
	}
	for i, want := range []map[attribute.Key]attribute.Value{
		{
			"gyre.channel": attribute.StringValue("chat:1"), "gyre.node": attribute.StringValue("node-1"),
			"gyre.fanout.subscribers": attribute.IntValue(10), "gyre.fanout.reached": attribute.IntValue(7),
			"gyre.fanout.filtered": attribute.IntValue(2), "gyre.fanout.dropped": attribute.IntValue(1),
			"gyre.offset": attribute.Int64Value(42),
		},
		{
			"gyre.channel": attribute.StringValue("chat:2"), "gyre.pattern": attribute.StringValue("chat:*"), "gyre.node": attribute.StringValue("node-1"),
			"gyre.fanout.subscribers": attribute.IntValue(1), "gyre.fanout.reached": attribute.IntValue(3),
			"gyre.fanout.filtered": attribute.IntValue(0), "gyre.fanout.dropped": attribute.IntValue(0),
			"gyre.fanout.publications": attribute.IntValue(3),
		},
	} {
		s, f := spans[i+1], runs[i]
		if s.Name != "fanout" || s.SpanKind != trace.SpanKindConsumer {
			t.Errorf("span %d: %q of kind %v, want fanout, consumer", i, s.Name, s.SpanKind)
		}
		if s.Parent.SpanID() != pub.SpanContext().SpanID() || s.SpanContext.TraceID() != pub.SpanContext().TraceID() || !s.Parent.IsRemote() {
			t.Errorf("span %d: parent %v in trace %v, want the publisher's span %v, remote", i, s.Parent.SpanID(), s.SpanContext.TraceID(), pub.SpanContext().SpanID())
		}
		if !s.StartTime.Equal(f.Start) || !s.EndTime.Equal(f.End) {
			t.Errorf("span %d: from %v to %v, want %v to %v", i, s.StartTime, s.EndTime, f.Start, f.End)
		}
		got := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes {
			got[kv.Key] = kv.Value
		}
		if len(got) != len(want) {
			t.Errorf("span %d: attributes %v, want %v", i, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("span %d: %s = %v, want %v", i, k, got[k].Emit(), v.Emit())
			}
		}
		res := map[attribute.Key]string{}
		for _, kv := range s.Resource.Attributes() {
			res[kv.Key] = kv.Value.Emit()
		}
		if res["service.name"] != "gyre" || res["service.instance.id"] != "node-1" || res["service.version"] != "1.2.3" {
			t.Errorf("span %d: resource %v, want gyre, node-1, 1.2.3", i, res)
		}
	}
}

// TestFanOutUnsampled: a publisher's context that is not sampled makes no
// fanout span (the sampler follows the parent), should one travel.
func TestFanOutUnsampled(t *testing.T) {
	tel, exp := startInMemory(t, config.OpenTelemetry{Enabled: true, Delivery: true})
	b := telemetry.EncodeSpanContext(sampledContext())
	b[24] = 0
	tel.FannedOut(&telemetry.FanOut{Trace: b, Channel: "c"})
	if err := tel.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("exported %d spans, want none", n)
	}
}

func TestParts(t *testing.T) {
	all := config.OpenTelemetry{Enabled: true, API: true, Consuming: true, Proxy: true, Delivery: true}
	for _, tt := range []struct {
		name string
		o    config.OpenTelemetry
	}{
		{"none", config.OpenTelemetry{Enabled: true}},
		{"api", config.OpenTelemetry{Enabled: true, API: true}},
		{"consuming", config.OpenTelemetry{Enabled: true, Consuming: true}},
		{"proxy", config.OpenTelemetry{Enabled: true, Proxy: true}},
		{"delivery", config.OpenTelemetry{Enabled: true, Delivery: true}},
		{"all", all},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tel, _ := startInMemory(t, tt.o)
			if tel.TracerProvider() == nil {
				t.Error("TracerProvider is nil while enabled")
			}
			for part, got := range map[string]bool{
				"api":       tel.APITracerProvider() != nil,
				"consuming": tel.ConsumerTracerProvider() != nil,
				"proxy":     tel.ProxyTracerProvider() != nil,
				"delivery":  tel.DeliveryTracer() != nil,
			} {
				want := map[string]bool{"api": tt.o.API, "consuming": tt.o.Consuming, "proxy": tt.o.Proxy, "delivery": tt.o.Delivery}[part]
				if got != want {
					t.Errorf("%s: provider given %v, want %v", part, got, want)
				}
			}
		})
	}
}
