package jetstream

import (
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/server/consume"
)

// message reads m: with publication data mode its body is the data to
// publish into the channels its headers name; otherwise the method header
// names the API method of the body, or, without it, the body is
// {"method": ..., "payload": ...}.
func (c *Consumer) message(m jetstream.Msg) consume.Message {
	out := consume.Message{Payload: m.Data(), Position: c.position(m)}
	h := m.Headers()
	if c.d.Traced() {
		out.Destination = m.Subject()
		out.TraceParent = traceHeader(h, "traceparent", "Traceparent")
		out.TraceState = traceHeader(h, "tracestate", "Tracestate")
	}
	pd := &c.cfg.PublicationDataMode
	if !pd.Enabled {
		out.Method = header(h, c.cfg.MethodHeader)
		return out
	}
	p, err := consume.ParsePublication(header(h, pd.ChannelsHeader), header(h, pd.IdempotencyKeyHeader),
		header(h, pd.DeltaHeader), header(h, pd.VersionHeader), header(h, pd.VersionEpochHeader),
		tags(h, pd.TagsHeaderPrefix))
	if err != nil {
		out.Err = err
		return out
	}
	out.Publication = p
	return out
}

// position is "stream S seq N" for log lines; the stream sequence is
// where a producer or `nats stream get` finds the message.
func (c *Consumer) position(m jetstream.Msg) string {
	md, err := m.Metadata()
	if err != nil {
		return "stream " + c.cfg.StreamName + " subject " + m.Subject()
	}
	return "stream " + md.Stream + " seq " + strconv.FormatUint(md.Sequence.Stream, 10)
}

// header is the first value of the header key; NATS header names are
// case-sensitive.
func header(h nats.Header, key string) string {
	if key == "" {
		return ""
	}
	return h.Get(key)
}

// tags are the headers whose name starts with prefix, keyed by the rest
// of the name.
func tags(h nats.Header, prefix string) map[string]string {
	if prefix == "" {
		return nil
	}
	var out map[string]string
	for k, v := range h {
		if len(v) == 0 || !strings.HasPrefix(k, prefix) || len(k) == len(prefix) {
			continue
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[k[len(prefix):]] = v[0]
	}
	return out
}

// traceHeader is the first value of a trace context header: under its
// W3C name, or as a carrier that writes HTTP's canonical form names it.
func traceHeader(h nats.Header, name, canonical string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	return h.Get(canonical)
}
