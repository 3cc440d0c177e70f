package consumetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// TraceWant is what Trace expects of a source's spans.
type TraceWant struct {
	// New makes the consumer of c with dispatcher d, as the server does.
	New func(c config.Consumer, d *consume.Dispatcher) (consume.Consumer, error)
	// System is messaging.system.
	System string
	// Destination is messaging.destination.name for place p read by
	// consumer c.
	Destination func(p Place, c config.Consumer) string
	// Partition: the spans name the partition (0).
	Partition bool
	// Carries: the source carries trace context (headers or fields
	// traceparent and tracestate), which the spans continue.
	Carries bool
}

// producerParent is the traceparent the producer of Trace's first
// message sends.
const (
	producerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	producerSpan   = "00f067aa0ba902b7"
	producerParent = "00-" + producerTrace + "-" + producerSpan + "-01"
)

// Trace consumes three messages of src with tracing on, each publishing
// into a channel of its own: the first carries a traceparent and
// tracestate, the second nothing, the third an oversized traceparent. It
// checks that each is one CONSUMER span "consume <name>" with the span
// model's attributes, the first a child of its traceparent when the
// source carries one, the others new roots.
func Trace(t *testing.T, src Source, want TraceWant) {
	n, err := gyre.NewNode(gyre.Config{Channels: gyre.ChannelConfig{Namespaces: []gyre.Namespace{{
		Name: ns, ChannelOptions: gyre.ChannelOptions{HistorySize: 100, HistoryTTL: time.Minute},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	place := src.Open(t, 1, false)
	c, ok := place.Consumer(unique("traced"), unique("trace"), false)
	if !ok {
		t.Fatal("consumetest: the source has no consumer for the place")
	}
	d := consume.NewDispatcher(c.Name, c.Type, api.NewExecutor(n, api.Config{}), nil)
	d.SetTracerProvider(tp)
	cons, err := want.New(c, d)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := cons.Run(ctx); err != nil {
			t.Errorf("consumetest: consumer: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-stopped })

	ch := ns + ":" + unique("trace")
	oversized := "01-" + producerTrace + "-" + producerSpan + "-01-" + strings.Repeat("a", 600)
	place.Produce(t, 0,
		Msg{Method: "publish", Payload: []byte(`{"channel":"` + ch + `a","data":1}`),
			Headers: map[string]string{"traceparent": producerParent, "tracestate": "p=1"}},
		Msg{Method: "publish", Payload: []byte(`{"channel":"` + ch + `b","data":2}`)},
		Msg{Method: "publish", Payload: []byte(`{"channel":"` + ch + `c","data":3}`),
			Headers: map[string]string{"traceparent": oversized}},
	)
	waitFor(t, "span of every message", func() bool { return len(rec.Ended()) >= 3 })

	byChannel := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.Name() != "consume "+c.Name || s.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("span %q of kind %v, want consume %s CONSUMER", s.Name(), s.SpanKind(), c.Name)
		}
		a := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			a[kv.Key] = kv.Value.Emit()
		}
		wantAttrs := map[attribute.Key]string{
			"gyre.consumer.name": c.Name, "gyre.consumer.type": src.Type(), "messaging.system": want.System,
			"messaging.destination.name": want.Destination(place, c), "gyre.api.method": "publish",
		}
		if want.Partition {
			wantAttrs["messaging.destination.partition.id"] = "0"
		}
		for k, v := range wantAttrs {
			if a[k] != v {
				t.Errorf("span of %s: %s = %q, want %q", a["gyre.channel"], k, a[k], v)
			}
		}
		if _, ok := a["messaging.destination.partition.id"]; ok && !want.Partition {
			t.Errorf("span of %s names a partition, which the source has not", a["gyre.channel"])
		}
		byChannel[a["gyre.channel"]] = s
	}
	first, second, third := byChannel[ch+"a"], byChannel[ch+"b"], byChannel[ch+"c"]
	if first == nil || second == nil || third == nil || len(byChannel) != 3 {
		t.Fatalf("spans by channel %v, want one for each of %sa, %sb, %sc", byChannel, ch, ch, ch)
	}
	if want.Carries {
		if first.SpanContext().TraceID().String() != producerTrace || first.Parent().SpanID().String() != producerSpan {
			t.Errorf("span of a message with a traceparent: under %v, want under the producer's span", first.Parent())
		}
		if ts := first.SpanContext().TraceState().String(); ts != "p=1" {
			t.Errorf("span of a message with a tracestate: %q, want p=1", ts)
		}
	} else if first.Parent().IsValid() {
		t.Errorf("span under %v, want a root: the source carries no trace context", first.Parent())
	}
	for _, s := range []sdktrace.ReadOnlySpan{second, third} {
		if s.Parent().IsValid() {
			t.Errorf("span of a message without a usable traceparent: under %v, want a root", s.Parent())
		}
	}
}
