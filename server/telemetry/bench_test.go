package telemetry_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/telemetry"
)

// discard is an exporter that takes every span and keeps none.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkFannedOut is the cost of one traced fan-out on the goroutine
// that fanned out: decoding the context, starting and ending the span,
// queueing it.
func BenchmarkFannedOut(b *testing.B) {
	o := config.OpenTelemetry{Enabled: true, Delivery: true}
	env, err := o.ReadOTelEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	tel, err := telemetry.StartWithExporter(context.Background(), telemetry.Config{OpenTelemetry: o, NodeID: "n"}, env, discard{})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	now := time.Now()
	f := &telemetry.FanOut{Trace: telemetry.EncodeSpanContext(sampledContext()), Channel: "chat:index", Offset: 7, Start: now, End: now, Subscribers: 100, Reached: 100}
	b.ReportAllocs()
	for b.Loop() {
		tel.FannedOut(f)
	}
}

// BenchmarkSpan is a bare span, for comparison: what the SDK costs alone.
func BenchmarkSpan(b *testing.B) {
	o := config.OpenTelemetry{Enabled: true}
	env, err := o.ReadOTelEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	tel, err := telemetry.StartWithExporter(context.Background(), telemetry.Config{OpenTelemetry: o}, env, discard{})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	tr := tel.TracerProvider().Tracer("bench")
	b.ReportAllocs()
	for b.Loop() {
		_, s := tr.Start(context.Background(), "s")
		s.End()
	}
}
