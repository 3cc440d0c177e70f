package consume

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre/server/api"
)

// Tracing (the opentelemetry.consuming key): each consumed message is a
// CONSUMER span "consume <consumer name>", a child of the trace context
// the message carries, if any. Its commands run in it (api.Command.SetSpan),
// so that their publications carry its context into the fan-out on every
// node, while the messages of a batch still run as one batch.

// SetTracerProvider makes d trace its messages with tp; nil (the
// default) traces nothing. Call it before the consumer runs.
func (d *Dispatcher) SetTracerProvider(tp trace.TracerProvider) {
	if tp == nil {
		d.trace = tracing{}
		return
	}
	d.trace = tracing{
		tracer: tp.Tracer("github.com/gyrehq/gyre/server/consume"),
		name:   "consume " + d.name,
		attrs: []attribute.KeyValue{
			attribute.String("gyre.consumer.name", d.name),
			attribute.String("gyre.consumer.type", d.typ),
			attribute.String("messaging.system", messagingSystem(d.typ)),
		},
	}
}

// Traced reports whether d traces its messages: only then need a
// consumer fill in the tracing fields of a Message.
func (d *Dispatcher) Traced() bool { return d.trace.tracer != nil }

// messagingSystem is the messaging.system of a consumer type.
func messagingSystem(typ string) string {
	switch typ {
	case "redis_stream":
		return "redis"
	case "nats_jetstream":
		return "nats"
	}
	return typ // kafka, postgresql
}

// tracing makes the spans of a dispatcher's messages.
type tracing struct {
	tracer trace.Tracer
	name   string
	// attrs are the attributes of every span of the consumer.
	attrs []attribute.KeyValue
}

// start starts the span of each of msgs.
func (t *tracing) start(msgs []Message) []trace.Span {
	spans := make([]trace.Span, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		attrs := make([]attribute.KeyValue, 0, len(t.attrs)+2)
		attrs = append(attrs, t.attrs...)
		if m.Destination != "" {
			attrs = append(attrs, attribute.String("messaging.destination.name", m.Destination))
		}
		if m.Partition != "" {
			attrs = append(attrs, attribute.String("messaging.destination.partition.id", m.Partition))
		}
		ctx := api.RemoteContext(context.Background(), m.TraceParent, m.TraceState)
		_, spans[i] = t.tracer.Start(ctx, t.name, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
	}
	return spans
}

// inSpan runs the commands cmds of message m in its span s. A message of
// several commands (a batch) is named as one, with their number; a
// single command names its own method and channel (the executor does).
func inSpan(s trace.Span, m *Message, cmds []api.Command) {
	if len(cmds) > 1 || m.Method == "batch" {
		s.SetAttributes(api.AttrMethod.String("batch"), api.AttrCommands.Int(len(cmds)))
		for i := range cmds {
			cmds[i].SetSpan(s, false)
		}
		return
	}
	if name := cmds[0].Method(); name != "" {
		s.SetAttributes(api.AttrMethod.String(name))
	}
	cmds[0].SetSpan(s, true)
}

// skippedSpan records on the span s of message m that it was skipped,
// its command answered with e.
func skippedSpan(s trace.Span, m *Message, e *api.Error) {
	api.TraceError(s, e)
	if m.Err != nil {
		s.SetStatus(codes.Error, "malformed message: "+m.Err.Error())
	}
}

// retrying records on s that its message runs again after reason.
func retrying(s trace.Span, reason string) {
	s.AddEvent("retry", trace.WithAttributes(attribute.String("reason", reason)))
}

// endDone ends the spans of messages done.
func endDone(spans []trace.Span) {
	for _, s := range spans {
		s.End()
	}
}

// endUndone ends the spans of messages Dispatch returns without: they
// are not acknowledged and come again, in a span of their own.
func endUndone(spans []trace.Span) {
	for _, s := range spans {
		s.SetStatus(codes.Error, "not done: delivered again")
		s.End()
	}
}
