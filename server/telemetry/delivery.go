package telemetry

import (
	"context"
	"github.com/gyrehq/gyre"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// FanOut is what the engine tells of one fan-out of a traced publication
// on a node, and DeliveryTracer what it tells it to.
type (
	FanOut         = gyre.FanOut
	DeliveryTracer = gyre.DeliveryTracer
)

var _ DeliveryTracer = (*Telemetry)(nil)

// Attribute keys of the fanout span (docs/observability.md).
const (
	attrChannel     = attribute.Key("gyre.channel")
	attrPattern     = attribute.Key("gyre.pattern")
	attrNode        = attribute.Key("gyre.node")
	attrSubscribers = attribute.Key("gyre.fanout.subscribers")
	attrReached     = attribute.Key("gyre.fanout.reached")
	attrFiltered    = attribute.Key("gyre.fanout.filtered")
	attrDropped     = attribute.Key("gyre.fanout.dropped")
	attrOffset      = attribute.Key("gyre.offset")
	attrPubs        = attribute.Key("gyre.fanout.publications")
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
	attrs := make([]attribute.KeyValue, 0, 10)
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
	if f.Publications > 1 {
		attrs = append(attrs, attrPubs.Int(f.Publications))
	}
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
