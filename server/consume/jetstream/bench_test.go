package jetstream_test

import (
	"context"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/consume/consumetest"
	"github.com/gyrehq/gyre/server/consume/jetstream"
)

// BenchmarkThroughput: 100,000 publish messages waiting in a stream, one
// node on the memory engine runs them; run with -benchtime=1x and read
// msgs/s.
func BenchmarkThroughput(b *testing.B) {
	consumetest.Throughput(b, source, 1, 100_000)
}

// BenchmarkLatency: 10,000 messages a second (half the throughput budget
// of docs/benchmarks.md) for 10 seconds, from the write into the stream
// to a subscribed client; -benchtime=1x.
func BenchmarkLatency(b *testing.B) {
	consumetest.Latency(b, source, 1, 10_000, 10*time.Second)
}

// BenchmarkMessage is the reading of one fetched message into a
// consume.Message: a method header and its request, or a publication of
// publication data mode with its headers.
func BenchmarkMessage(b *testing.B) {
	p := source.OpenPlace(b, false)
	p.Produce(b, 0,
		consumetest.Msg{Method: "publish", Payload: []byte(`{"channel":"news","data":{"text":"hello"}}`)},
		consumetest.Msg{Payload: []byte(`{"text":"hello"}`), Headers: map[string]string{
			"centrifugo-channels": "news", "centrifugo-idempotency-key": "k1",
			"centrifugo-version": "7", "centrifugo-tag-color": "red",
		}},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := p.JS.CreateConsumer(ctx, p.Stream, natsjs.ConsumerConfig{Durable: "bench", AckPolicy: natsjs.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	mb, err := cons.Fetch(2)
	if err != nil {
		b.Fatal(err)
	}
	var msgs []natsjs.Msg
	for m := range mb.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) != 2 {
		b.Fatalf("fetched %d messages, want 2", len(msgs))
	}
	for i, name := range []string{"command", "publication"} {
		b.Run(name, func(b *testing.B) {
			c, _ := p.Consumer("bench", "bench", i == 1)
			d := consume.NewDispatcher(c.Name, c.Type, nil, nil)
			jc, err := jetstream.New(c.NatsJetStream, nil, d)
			if err != nil {
				b.Fatal(err)
			}
			m := jetstream.MessageOf(jc, msgs[i])
			if m.Err != nil || (i == 0) != (m.Method == "publish") || (i == 1) != (m.Publication != nil) {
				b.Fatalf("read %+v", m)
			}
			b.ReportAllocs()
			for b.Loop() {
				m = jetstream.MessageOf(jc, msgs[i])
			}
			_ = m
		})
	}
}
