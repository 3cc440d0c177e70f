package telemetry

import (
	"context"
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// FanOut is what the engine tells of one fan-out of a traced publication
// on this node: the fields of gyre.FanOut, which it stands for until the
// engine declares it (then: type FanOut = gyre.FanOut).
type FanOut struct {
	Trace       []byte // the publisher's span context (EncodeSpanContext)
	Channel     string
	Pattern     string // the wildcard pattern, for a pattern run; "" otherwise
	Offset      uint64
	Start, End  time.Time
	Subscribers int // subscribers on this path when the run arrived
	Reached     int // given the publication
	Filtered    int // held back by their tag filter
	Dropped     int // could not be given it (encoding failed, queue full or closed)
}

// DeliveryTracer is told of the fan-out of every traced publication: the
// interface of gyre.DeliveryTracer, which it stands for until the engine
// declares it (then: type DeliveryTracer = gyre.DeliveryTracer).
type DeliveryTracer interface {
	FannedOut(f *FanOut)
}

var _ DeliveryTracer = (*Telemetry)(nil)

// Attribute keys of the fanout span (docs/opentelemetry.md).
const (
	attrChannel     = attribute.Key("gyre.channel")
	attrPattern     = attribute.Key("gyre.pattern")
	attrNode        = attribute.Key("gyre.node")
	attrSubscribers = attribute.Key("gyre.fanout.subscribers")
	attrReached     = attribute.Key("gyre.fanout.reached")
	attrFiltered    = attribute.Key("gyre.fanout.filtered")
	attrDropped     = attribute.Key("gyre.fanout.dropped")
	attrOffset      = attribute.Key("gyre.offset")
)

// FannedOut records f as a span named fanout, of kind CONSUMER, the child
// of the span that published, from f.Start to f.End. It does nothing when
// f carries no valid trace or delivery is off; it does not keep f.
func (t *Telemetry) FannedOut(f *FanOut) {
	if t == nil || t.delivery == nil {
		return
	}
	parent, ok := DecodeSpanContext(f.Trace)
	if !ok {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attrChannel.String(f.Channel))
	if f.Pattern != "" {
		attrs = append(attrs, attrPattern.String(f.Pattern))
	}
	attrs = append(attrs,
		attrNode.String(t.cfg.NodeID),
		attrSubscribers.Int(f.Subscribers),
		attrReached.Int(f.Reached),
		attrFiltered.Int(f.Filtered),
		attrDropped.Int(f.Dropped),
	)
	if f.Offset > 0 {
		attrs = append(attrs, attrOffset.Int64(int64(min(f.Offset, math.MaxInt64))))
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	_, span := t.delivery.Start(ctx, "fanout",
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithTimestamp(f.Start),
		trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(f.End))
}
