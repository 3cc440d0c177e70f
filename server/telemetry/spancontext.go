package telemetry

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre/internal/tracectx"
)

// SpanContextSize is the length of an encoded span context (tracectx.Size).
const SpanContextSize = tracectx.Size

// EncodeSpanContext is the binary form in which a publication carries the
// context of the span that published it (tracectx.Encode).
func EncodeSpanContext(sc trace.SpanContext) []byte { return tracectx.Encode(sc) }

// DecodeSpanContext reads what EncodeSpanContext wrote (tracectx.Decode).
func DecodeSpanContext(b []byte) (trace.SpanContext, bool) { return tracectx.Decode(b) }
