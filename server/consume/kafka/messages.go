package kafka

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume"
)

// builder turns the records of one partition's batch into the messages
// the dispatcher runs. It is the hot path of the consumer: it copies no
// record value, and the positions of a batch share one string.
type builder struct {
	methodHeader string
	// pub is the publication data mode's headers; nil when it is off.
	pub *config.PublicationHeaders
	// traced: the messages' spans want the fields of tracing.
	traced bool

	// buf holds the positions of the batch being built.
	buf []byte
	// ends[i] is where the position of the batch's record i ends in buf.
	ends []int
}

func newBuilder(cfg *config.KafkaConsumer, traced bool) *builder {
	b := &builder{methodHeader: cfg.MethodHeader, traced: traced}
	if cfg.PublicationDataMode.Enabled {
		pub := cfg.PublicationDataMode
		b.pub = &pub
	}
	return b
}

// build appends the messages of recs, all of one partition, to msgs.
func (b *builder) build(recs []*kgo.Record, msgs []consume.Message) []consume.Message {
	positions := b.positions(recs)
	for i, r := range recs {
		m := consume.Message{Payload: r.Value, Position: positions[b.start(i):b.ends[i]]}
		if b.pub != nil {
			m.Publication, m.Err = b.publication(r)
		} else {
			m.Method = b.method(r)
		}
		if b.traced {
			traceFields(&m, r)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// positions writes "topic t partition p offset o" of every record into one
// string: a message's position is read only in the log line of a failure,
// so one allocation per batch rather than one per record.
func (b *builder) positions(recs []*kgo.Record) string {
	b.buf, b.ends = b.buf[:0], b.ends[:0]
	for _, r := range recs {
		b.buf = append(b.buf, "topic "...)
		b.buf = append(b.buf, r.Topic...)
		b.buf = append(b.buf, " partition "...)
		b.buf = strconv.AppendInt(b.buf, int64(r.Partition), 10)
		b.buf = append(b.buf, " offset "...)
		b.buf = strconv.AppendInt(b.buf, r.Offset, 10)
		b.ends = append(b.ends, len(b.buf))
	}
	return string(b.buf)
}

func (b *builder) start(i int) int {
	if i == 0 {
		return 0
	}
	return b.ends[i-1]
}

// method is the value of the method header, "" when the record has none
// (its value is then {"method": ..., "payload": ...}).
func (b *builder) method(r *kgo.Record) string {
	if b.methodHeader == "" {
		return ""
	}
	for i := range r.Headers {
		if r.Headers[i].Key == b.methodHeader {
			return methodName(r.Headers[i].Value)
		}
	}
	return ""
}

// methodName is v as a string, without an allocation for the methods a
// queue mostly carries.
func methodName(v []byte) string {
	switch string(v) {
	case "publish":
		return "publish"
	case "broadcast":
		return "broadcast"
	case "batch":
		return "batch"
	case "unsubscribe":
		return "unsubscribe"
	case "disconnect":
		return "disconnect"
	case "history_remove":
		return "history_remove"
	}
	return string(v)
}

// publication reads the headers of publication data mode. When a header
// appears more than once, its first value counts.
func (b *builder) publication(r *kgo.Record) (*consume.Publication, error) {
	h := b.pub
	var channels, idem, delta, version, epoch string
	var seen uint8
	var tags map[string]string
	for i := range r.Headers {
		k, v := r.Headers[i].Key, r.Headers[i].Value
		switch {
		case k == "":
		case k == h.ChannelsHeader:
			first(&seen, 1, &channels, v)
		case k == h.IdempotencyKeyHeader:
			first(&seen, 2, &idem, v)
		case k == h.DeltaHeader:
			first(&seen, 4, &delta, v)
		case k == h.VersionHeader:
			first(&seen, 8, &version, v)
		case k == h.VersionEpochHeader:
			first(&seen, 16, &epoch, v)
		case h.TagsHeaderPrefix != "" && strings.HasPrefix(k, h.TagsHeaderPrefix):
			key := k[len(h.TagsHeaderPrefix):]
			if tags == nil {
				tags = make(map[string]string, 2)
			}
			if _, ok := tags[key]; !ok {
				tags[key] = string(v)
			}
		}
	}
	return consume.ParsePublication(channels, idem, delta, version, epoch, tags)
}

// first sets *dst to v unless bit is set in seen already.
func first(seen *uint8, bit uint8, dst *string, v []byte) {
	if *seen&bit == 0 {
		*seen |= bit
		*dst = string(v)
	}
}

// traceFields sets the fields of m that its span reads from record r: a
// traceparent or tracestate header too long to be used is not even
// copied.
func traceFields(m *consume.Message, r *kgo.Record) {
	m.Destination, m.Partition = r.Topic, strconv.Itoa(int(r.Partition))
	for i := range r.Headers {
		h := &r.Headers[i]
		switch {
		case h.Key == "traceparent" && m.TraceParent == "" && len(h.Value) <= api.MaxTraceParent:
			m.TraceParent = string(h.Value)
		case h.Key == "tracestate" && m.TraceState == "" && len(h.Value) <= api.MaxTraceState:
			m.TraceState = string(h.Value)
		}
	}
}
