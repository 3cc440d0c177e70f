package api

import (
	"bytes"
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre/internal/tracectx"
)

func spanContext(t *testing.T, flags trace.TraceFlags) trace.SpanContext {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags})
}

// TestTraceOf: a publication carries trace id, span id and flags of a
// sampled span, and nothing for any other.
func TestTraceOf(t *testing.T) {
	sampled := spanContext(t, trace.FlagsSampled)
	want := append(append(append([]byte{}, 0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c),
		0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31), 0x01)
	if got := traceOf(trace.ContextWithSpanContext(context.Background(), sampled)); !bytes.Equal(got, want) {
		t.Errorf("traceOf(sampled) = %x, want %x", got, want)
	}
	for name, ctx := range map[string]context.Context{
		"no span":   context.Background(),
		"unsampled": trace.ContextWithSpanContext(context.Background(), spanContext(t, 0)),
	} {
		if got := traceOf(ctx); got != nil {
			t.Errorf("traceOf(%s) = %x, want nil", name, got)
		}
	}
}

// TestCommandTrace: a command given a span carries that span's context,
// whatever the batch's.
func TestCommandTrace(t *testing.T) {
	batch := []byte("batch")
	c := NewCommand("publish", &PublishRequest{Channel: "a"})
	if got := c.trace(batch); !bytes.Equal(got, batch) {
		t.Errorf("trace without a span of its own = %q, want the batch's", got)
	}
	c.SetSpan(trace.SpanFromContext(trace.ContextWithSpanContext(context.Background(), spanContext(t, trace.FlagsSampled))), true)
	if got := c.trace(batch); len(got) != tracectx.Size || got[24] != 1 {
		t.Errorf("trace with a span = %x, want its context", got)
	}
	c.SetSpan(trace.SpanFromContext(trace.ContextWithSpanContext(context.Background(), spanContext(t, 0))), true)
	if got := c.trace(batch); got != nil {
		t.Errorf("trace with an unsampled span = %x, want none", got)
	}
}
