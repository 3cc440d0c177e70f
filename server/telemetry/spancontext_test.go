package telemetry_test

import (
	"bytes"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre/server/telemetry"
)

func sampledContext() trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
}

func TestSpanContextRoundTrip(t *testing.T) {
	sc := sampledContext()
	b := telemetry.EncodeSpanContext(sc)
	if len(b) != telemetry.SpanContextSize {
		t.Fatalf("encoded %d bytes, want %d", len(b), telemetry.SpanContextSize)
	}
	got, ok := telemetry.DecodeSpanContext(b)
	if !ok {
		t.Fatal("DecodeSpanContext refused what EncodeSpanContext wrote")
	}
	if got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || got.TraceFlags() != sc.TraceFlags() || !got.IsRemote() {
		t.Errorf("decoded %+v, want %+v, remote", got, sc)
	}
}

func TestEncodeSpanContextOnlySampled(t *testing.T) {
	unsampled := sampledContext().WithTraceFlags(0)
	for name, sc := range map[string]trace.SpanContext{"unsampled": unsampled, "empty": {}} {
		if b := telemetry.EncodeSpanContext(sc); b != nil {
			t.Errorf("%s: encoded %x, want nil", name, b)
		}
	}
}

func TestDecodeSpanContextRefuses(t *testing.T) {
	good := telemetry.EncodeSpanContext(sampledContext())
	zeroTrace := bytes.Clone(good)
	clear(zeroTrace[:16])
	zeroSpan := bytes.Clone(good)
	clear(zeroSpan[16:24])
	for name, b := range map[string][]byte{
		"nil": nil, "short": good[:24], "long": append(bytes.Clone(good), 0),
		"zero trace id": zeroTrace, "zero span id": zeroSpan,
	} {
		if sc, ok := telemetry.DecodeSpanContext(b); ok || sc.IsValid() {
			t.Errorf("%s: decoded %v, %v; want refused", name, sc, ok)
		}
	}
}

func FuzzDecodeSpanContext(f *testing.F) {
	f.Add(telemetry.EncodeSpanContext(sampledContext()))
	f.Add(make([]byte, telemetry.SpanContextSize))
	f.Add([]byte{1, 2, 3})
	unsampled := telemetry.EncodeSpanContext(sampledContext())
	unsampled[24] = 0
	f.Add(unsampled)
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, ok := telemetry.DecodeSpanContext(b)
		if !ok {
			if sc.IsValid() {
				t.Fatalf("refused %x but returned a valid context", b)
			}
			return
		}
		if !sc.IsValid() || !sc.IsRemote() {
			t.Fatalf("accepted %x as %v: not a valid remote context", b, sc)
		}
		enc := telemetry.EncodeSpanContext(sc)
		switch {
		case sc.IsSampled() && !bytes.Equal(enc, b):
			t.Fatalf("%x decoded and encoded again is %x", b, enc)
		case !sc.IsSampled() && enc != nil:
			t.Fatalf("%x is not sampled, yet encoded again as %x", b, enc)
		}
	})
}
