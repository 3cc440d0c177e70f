package kafka

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// defaults is a kafka consumer's config with the defaults of the keys the
// builder reads.
func defaults() config.KafkaConsumer {
	return config.KafkaConsumer{
		MethodHeader: "centrifugo-method",
		PublicationDataMode: config.PublicationHeaders{
			ChannelsHeader: "centrifugo-channels", IdempotencyKeyHeader: "centrifugo-idempotency-key",
			DeltaHeader: "centrifugo-delta", VersionHeader: "centrifugo-version",
			VersionEpochHeader: "centrifugo-version-epoch", TagsHeaderPrefix: "centrifugo-tag-",
		},
	}
}

func rec(offset int64, value string, headers ...string) *kgo.Record {
	r := &kgo.Record{Topic: "t", Partition: 3, Offset: offset, Value: []byte(value)}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: headers[i], Value: []byte(headers[i+1])})
	}
	return r
}

// TestBuildCommands: the method from its header, else the whole value;
// positions name topic, partition and offset.
func TestBuildCommands(t *testing.T) {
	cfg := defaults()
	b := newBuilder(&cfg, false)
	recs := []*kgo.Record{
		rec(7, `{"channel":"a","data":{}}`, "centrifugo-method", "publish"),
		rec(8, `{"method":"publish","payload":{"channel":"a","data":{}}}`),
		rec(9, `{"x":1}`, "other", "v", "centrifugo-method", "my_rpc", "centrifugo-method", "second"),
		rec(1881, `{}`, "centrifugo-method", ""),
	}
	got := b.build(recs, nil)
	want := []consume.Message{
		{Method: "publish", Payload: recs[0].Value, Position: "topic t partition 3 offset 7"},
		{Payload: recs[1].Value, Position: "topic t partition 3 offset 8"},
		{Method: "my_rpc", Payload: recs[2].Value, Position: "topic t partition 3 offset 9"},
		{Payload: recs[3].Value, Position: "topic t partition 3 offset 1881"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("build:\n got %+v\nwant %+v", got, want)
	}
	// A second batch reuses the builder's buffers: the first batch's
	// positions must not change.
	b.build([]*kgo.Record{rec(99999, `{}`)}, nil)
	if got[0].Position != "topic t partition 3 offset 7" {
		t.Fatalf("position of an earlier batch changed to %q", got[0].Position)
	}
}

// TestBuildPublications: publication data mode reads channels, options
// and tags from headers; a header it cannot read marks the message.
func TestBuildPublications(t *testing.T) {
	cfg := defaults()
	cfg.PublicationDataMode.Enabled = true
	b := newBuilder(&cfg, false)
	cases := []struct {
		name    string
		headers []string
		want    *consume.Publication
		err     bool
	}{
		{name: "one channel", headers: []string{"centrifugo-channels", "a"},
			want: &consume.Publication{Channels: []string{"a"}}},
		{name: "everything", headers: []string{
			"centrifugo-channels", "a, b,", "centrifugo-idempotency-key", "k1", "centrifugo-delta", "true",
			"centrifugo-version", "42", "centrifugo-version-epoch", "e", "centrifugo-tag-color", "red",
			"centrifugo-tag-size", "xl", "centrifugo-method", "ignored",
		}, want: &consume.Publication{
			Channels: []string{"a", "b"}, IdempotencyKey: "k1", Delta: true, Version: 42, VersionEpoch: "e",
			Tags: map[string]string{"color": "red", "size": "xl"},
		}},
		{name: "first value counts", headers: []string{
			"centrifugo-channels", "a", "centrifugo-channels", "b", "centrifugo-tag-x", "1", "centrifugo-tag-x", "2",
		}, want: &consume.Publication{Channels: []string{"a"}, Tags: map[string]string{"x": "1"}}},
		{name: "no channels", headers: []string{"centrifugo-method", "publish"}, err: true},
		{name: "empty channels", headers: []string{"centrifugo-channels", " , "}, err: true},
		{name: "bad version", headers: []string{"centrifugo-channels", "a", "centrifugo-version", "v2"}, err: true},
		{name: "bad delta", headers: []string{"centrifugo-channels", "a", "centrifugo-delta", "yes please"}, err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs := b.build([]*kgo.Record{rec(1, `{"n":1}`, c.headers...)}, nil)
			m := msgs[0]
			if c.err {
				if m.Err == nil {
					t.Fatalf("no error; publication %+v", m.Publication)
				}
				return
			}
			if m.Err != nil {
				t.Fatalf("error %v", m.Err)
			}
			if m.Method != "" || string(m.Payload) != `{"n":1}` || !reflect.DeepEqual(m.Publication, c.want) {
				t.Fatalf("got method %q payload %s publication %+v, want publication %+v", m.Method, m.Payload, m.Publication, c.want)
			}
		})
	}
}

// TestBuildAllocs: a batch of commands costs a fixed number of
// allocations (its positions), none per record.
func TestBuildAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under the race detector")
	}
	cfg := defaults()
	b := newBuilder(&cfg, false)
	recs := commandRecords(100)
	msgs := make([]consume.Message, 0, len(recs))
	allocs := testing.AllocsPerRun(100, func() { msgs = b.build(recs, msgs[:0]) })
	if allocs > 1 {
		t.Fatalf("%v allocations per batch of %d records, want 1", allocs, len(recs))
	}
}

func commandRecords(n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = rec(int64(1_000_000+i), `{"channel":"news","data":{"n":`+strconv.Itoa(i)+`}}`, "centrifugo-method", "publish")
	}
	return recs
}

// BenchmarkBuild: the consumer's own work per record, building messages
// from a poll's records (100 per batch).
func BenchmarkBuild(b *testing.B) {
	const batch = 100
	run := func(b *testing.B, cfg config.KafkaConsumer, recs []*kgo.Record) {
		bl := newBuilder(&cfg, false)
		msgs := make([]consume.Message, 0, len(recs))
		b.ReportAllocs()
		for b.Loop() {
			msgs = bl.build(recs, msgs[:0])
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
	}
	b.Run("method-header", func(b *testing.B) { run(b, defaults(), commandRecords(batch)) })
	b.Run("method-in-body", func(b *testing.B) {
		recs := make([]*kgo.Record, batch)
		for i := range recs {
			recs[i] = rec(int64(i), `{"method":"publish","payload":{"channel":"news","data":{}}}`)
		}
		run(b, defaults(), recs)
	})
	b.Run("publication-mode", func(b *testing.B) {
		cfg := defaults()
		cfg.PublicationDataMode.Enabled = true
		recs := make([]*kgo.Record, batch)
		for i := range recs {
			recs[i] = rec(int64(i), `{"n":1}`, "centrifugo-channels", "news", "centrifugo-idempotency-key", "k"+strconv.Itoa(i), "centrifugo-tag-kind", "x")
		}
		run(b, cfg, recs)
	})
}
