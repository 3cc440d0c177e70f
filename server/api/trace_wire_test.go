package api_test

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/server/api"
)

// fanouts records the fan-outs a node reports.
type fanouts struct {
	mu  sync.Mutex
	got map[string][][]byte // channel: the traces of its fanned-out publications
}

func (f *fanouts) FannedOut(fo *gyre.FanOut) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.got == nil {
		f.got = map[string][][]byte{}
	}
	// One report may be of several publications (a batch's): one trace
	// each.
	for range fo.Publications {
		f.got[fo.Channel] = append(f.got[fo.Channel], bytes.Clone(fo.Trace))
	}
}

// wait waits for the fan-outs of n publications of channel and returns
// their traces.
func (f *fanouts) wait(t *testing.T, channel string, n int) [][]byte {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		got := append([][]byte(nil), f.got[channel]...)
		f.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d fan-outs of %s, want %d", len(got), channel, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// traceBytes is the trace context a publication made in s carries.
func traceBytes(s sdktrace.ReadOnlySpan) []byte {
	tid, sid := s.SpanContext().TraceID(), s.SpanContext().SpanID()
	return append(append(append([]byte{}, tid[:]...), sid[:]...), byte(s.SpanContext().TraceFlags()))
}

// TestTracePublicationsCarryTheSpan: what the API publishes carries its
// call's span to the fan-out: a publish, a broadcast, a batch's commands
// (the batch's span) and a consumer's commands (each its own span).
func TestTracePublicationsCarryTheSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var fo fanouts
	e := newEnvWith(t, api.Config{TracerProvider: tp}, gyre.Config{DeliveryTracer: &fo})
	c, _ := e.dial("u1")
	for _, ch := range []string{"plain:p", "plain:b1", "plain:b2", "plain:batch", "plain:c1", "plain:c2"} {
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: ch}); r.Error != nil {
			t.Fatalf("subscribe %s: %v", ch, r.Error)
		}
	}
	post := func(method, body string) sdktrace.ReadOnlySpan {
		t.Helper()
		before := len(rec.Ended())
		if status, b := e.post(method, body, "traceparent", callerParent); status != http.StatusOK {
			t.Fatalf("%s: %d %s", method, status, b)
		}
		return rec.Ended()[before]
	}
	pub := post("publish", `{"channel":"plain:p","data":{}}`)
	if got := fo.wait(t, "plain:p", 1)[0]; !bytes.Equal(got, traceBytes(pub)) {
		t.Errorf("publish: fan-out trace %x, want the API span's %x", got, traceBytes(pub))
	}
	bc := post("broadcast", `{"channels":["plain:b1","plain:b2"],"data":{}}`)
	for _, ch := range []string{"plain:b1", "plain:b2"} {
		if got := fo.wait(t, ch, 1)[0]; !bytes.Equal(got, traceBytes(bc)) {
			t.Errorf("broadcast %s: fan-out trace %x, want %x", ch, got, traceBytes(bc))
		}
	}
	batch := post("batch", `{"commands":[{"publish":{"channel":"plain:batch","data":1}},{"publish":{"channel":"plain:batch","data":2}}]}`)
	for _, got := range fo.wait(t, "plain:batch", 2) {
		if !bytes.Equal(got, traceBytes(batch)) {
			t.Errorf("batch: fan-out trace %x, want %x", got, traceBytes(batch))
		}
	}

	// A consumer's commands, run as one batch, each in its own span.
	tracer := tp.Tracer("test")
	_, s1 := tracer.Start(context.Background(), "message 1")
	_, s2 := tracer.Start(context.Background(), "message 2")
	c1 := api.NewCommand("publish", &api.PublishRequest{Channel: "plain:c1", Data: api.Payload(`{}`)})
	c1.SetSpan(s1, true)
	c2 := api.NewCommand("publish", &api.PublishRequest{Channel: "plain:c2", Data: api.Payload(`{}`)})
	c2.SetSpan(s2, true)
	e.handler.Executor().Run(context.Background(), []api.Command{c1, c2})
	s1.End()
	s2.End()
	ended := rec.Ended()
	for i, ch := range []string{"plain:c1", "plain:c2"} {
		want := traceBytes(ended[len(ended)-2+i])
		if got := fo.wait(t, ch, 1)[0]; !bytes.Equal(got, want) {
			t.Errorf("consumed %s: fan-out trace %x, want its own span's %x", ch, got, want)
		}
	}
}
