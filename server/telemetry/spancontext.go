package telemetry

import "go.opentelemetry.io/otel/trace"

// SpanContextSize is the length of an encoded span context: 16 bytes of
// trace id, 8 of span id, 1 of trace flags.
const SpanContextSize = 25

// EncodeSpanContext is the binary form in which a publication carries the
// context of the span that published it (gyre.PublishOptions.Trace): nil
// unless sc is valid and sampled, so that only what will be traced
// travels. The trace state does not travel.
func EncodeSpanContext(sc trace.SpanContext) []byte {
	if !sc.IsValid() || !sc.IsSampled() {
		return nil
	}
	b := make([]byte, SpanContextSize)
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b, tid[:])
	copy(b[16:], sid[:])
	b[24] = byte(sc.TraceFlags())
	return b
}

// DecodeSpanContext reads what EncodeSpanContext wrote, as the context of
// a remote span. It reports false for anything else: a wrong length, an
// all-zero trace or span id.
func DecodeSpanContext(b []byte) (trace.SpanContext, bool) {
	if len(b) != SpanContextSize {
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
