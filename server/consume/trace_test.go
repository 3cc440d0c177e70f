package consume_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/consume"
)

const (
	producerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	producerSpan   = "00f067aa0ba902b7"
	producerParent = "00-" + producerTrace + "-" + producerSpan + "-01"
)

// tracedDispatcher is a dispatcher of consumer "orders" (kafka) on exec
// whose spans rec records.
func tracedDispatcher(t *testing.T, exec *api.Executor) (*consume.Dispatcher, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	d := consume.NewDispatcher("orders", "kafka", exec, nil)
	if d.Traced() {
		t.Fatal("a dispatcher traces before it is given a TracerProvider")
	}
	d.SetTracerProvider(tp)
	if !d.Traced() {
		t.Fatal("a dispatcher with a TracerProvider does not trace")
	}
	return d, rec
}

func attrMap(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func TestTraceDispatch(t *testing.T) {
	n := newNode(t, gyre.Config{})
	var rpcSpan trace.SpanContext
	exec := api.NewExecutor(n, api.Config{RPC: func(ctx context.Context, _ string, _ []byte) ([]byte, error) {
		rpcSpan = trace.SpanContextFromContext(ctx)
		return []byte(`{}`), nil
	}})
	d, rec := tracedDispatcher(t, exec)
	kafka := func(m consume.Message) consume.Message {
		m.Destination, m.Partition = "orders-topic", "3"
		return m
	}
	msgs := []consume.Message{
		kafka(consume.Message{Method: "publish", Payload: []byte(`{"channel":"a","data":1}`), TraceParent: producerParent, TraceState: "p=1"}),
		kafka(consume.Message{Method: "publish", Payload: []byte(`{"channel":"a","data":2}`)}),
		kafka(consume.Message{Method: "batch", Payload: []byte(`{"commands":[{"publish":{"channel":"b","data":3}},{"publish":{"channel":"a","data":4}}]}`), TraceParent: producerParent}),
		kafka(consume.Message{Method: "publish", Payload: []byte(`{"channel":"nope:x","data":5}`)}),
		kafka(consume.Message{Err: errors.New("bad header")}),
		kafka(consume.Message{Payload: []byte(`6`), Publication: &consume.Publication{Channels: []string{"a", "b"}}}),
		kafka(consume.Message{Method: "rpc", Payload: []byte(`{"method":"m"}`), TraceParent: "00-zz-zz-01"}),
	}
	if done, err := d.Dispatch(context.Background(), msgs); done != len(msgs) || err != nil {
		t.Fatalf("Dispatch = %d, %v", done, err)
	}
	if got := history(t, n, "a"); got != "1 2 4 6" {
		t.Fatalf("history of a = %q, want 1 2 4 6", got)
	}
	spans := rec.Ended()
	if len(spans) != len(msgs) || len(rec.Started()) != len(msgs) {
		t.Fatalf("%d spans ended, %d started; want one per message, %d", len(spans), len(rec.Started()), len(msgs))
	}
	for i, s := range spans {
		if s.Name() != "consume orders" || s.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("span %d: %q of kind %v, want consume orders CONSUMER", i, s.Name(), s.SpanKind())
		}
		a := attrMap(s)
		for k, v := range map[string]string{
			"gyre.consumer.name": "orders", "gyre.consumer.type": "kafka", "messaging.system": "kafka",
			"messaging.destination.name": "orders-topic", "messaging.destination.partition.id": "3",
		} {
			if a[k] != v {
				t.Errorf("span %d: %s = %q, want %q", i, k, a[k], v)
			}
		}
		continues := msgs[i].TraceParent == producerParent
		if got := s.Parent().SpanID().String() == producerSpan && s.SpanContext().TraceID().String() == producerTrace; got != continues {
			t.Errorf("span %d: under %v; want under the producer's span: %v", i, s.Parent(), continues)
		}
		if !continues && s.Parent().IsValid() {
			t.Errorf("span %d: under %v, want a root", i, s.Parent())
		}
	}
	want := []map[string]string{
		{"gyre.api.method": "publish", "gyre.channel": "a"},
		{"gyre.api.method": "publish", "gyre.channel": "a"},
		{"gyre.api.method": "batch", "gyre.api.commands": "2", "gyre.channel": ""},
		{"gyre.api.method": "publish", "gyre.channel": "nope:x", "gyre.api.error_code": "102"},
		{"gyre.api.error_code": "104"},
		{"gyre.api.method": "broadcast", "gyre.channels.count": "2", "gyre.channel": "a"},
		{"gyre.api.method": "rpc"},
	}
	for i, w := range want {
		a := attrMap(spans[i])
		for k, v := range w {
			if a[k] != v {
				t.Errorf("span %d: %s = %q, want %q", i, k, a[k], v)
			}
		}
	}
	if ts := spans[0].SpanContext().TraceState().String(); ts != "p=1" {
		t.Errorf("tracestate %q, want the producer's p=1", ts)
	}
	for _, i := range []int{3, 4} {
		if spans[i].Status().Code != codes.Error {
			t.Errorf("span %d of a skipped message: status %v, want Error", i, spans[i].Status())
		}
	}
	if spans[4].Status().Description != "malformed message: bad header" {
		t.Errorf("malformed message's span: %q, want why", spans[4].Status().Description)
	}
	// A command runs in its message's span.
	if rpcSpan.SpanID() != spans[6].SpanContext().SpanID() {
		t.Errorf("rpc ran in span %v, want its message's %v", rpcSpan.SpanID(), spans[6].SpanContext().SpanID())
	}
}

// TestTraceDispatchRetries: a message that waits on a broker that is down
// has its retries on its span, which ends as not done when Dispatch gives
// up.
func TestTraceDispatchRetries(t *testing.T) {
	srv := redistest.Start(t)
	e, err := redis.New(redis.Config{Addresses: []string{srv.Addr}, Prefix: "consumetrace", IOTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t, gyre.Config{Broker: e.Broker(), PresenceManager: e.PresenceManager()})
	d, rec := tracedDispatcher(t, api.NewExecutor(n, api.Config{}))
	srv.Kill()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for consumeSnapshot(t, d).Retries < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	msgs := []consume.Message{
		{Method: "publish", Payload: []byte(`{"channel":"r","data":1}`), TraceParent: producerParent},
		{Method: "publish", Payload: []byte(`{"channel":"r","data":2}`)},
	}
	if done, err := d.Dispatch(ctx, msgs); done != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Dispatch = %d, %v; want 0, canceled", done, err)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want 2", len(spans))
	}
	retries := 0
	for _, ev := range spans[0].Events() {
		if ev.Name == "retry" {
			retries++
		}
	}
	if retries < 2 {
		t.Errorf("%d retry events on the failing message's span, want at least 2", retries)
	}
	for i, s := range spans {
		if s.Status().Code != codes.Error || s.Status().Description != "not done: delivered again" {
			t.Errorf("span %d: status %v, want Error, not done", i, s.Status())
		}
	}
}
