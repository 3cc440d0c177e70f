// Package tracectx is the binary form in which a publication carries the
// context of the span that published it (gyre.PublishOptions.Trace): the
// API writes it, the telemetry reads it on every node. It depends on the
// OpenTelemetry API only, not the SDK.
package tracectx

import "go.opentelemetry.io/otel/trace"

// Size is the length of an encoded span context: 16 bytes of trace id, 8
// of span id, 1 of trace flags.
const Size = 16 + 8 + 1

// Encode is sc in binary: nil unless sc is valid and sampled, so that
// only what will be traced travels. The trace state does not travel.
func Encode(sc trace.SpanContext) []byte {
	if !sc.IsValid() || !sc.IsSampled() {
		return nil
	}
	b := make([]byte, Size)
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b, tid[:])
	copy(b[16:], sid[:])
	b[24] = byte(sc.TraceFlags())
	return b
}

// Decode reads what Encode wrote, as the context of a remote span. It
// reports false for anything else: a wrong length, an all-zero trace or
// span id.
func Decode(b []byte) (trace.SpanContext, bool) {
	if len(b) != Size {
		return trace.SpanContext{}, false
	}
	var c trace.SpanContextConfig
	copy(c.TraceID[:], b)
	copy(c.SpanID[:], b[16:])
	c.TraceFlags = trace.TraceFlags(b[24])
	c.Remote = true
	sc := trace.NewSpanContext(c)
	if !sc.IsValid() {
		return trace.SpanContext{}, false
	}
	return sc, true
}
