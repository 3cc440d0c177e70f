package redisstream

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/gyrehq/gyre/server/consume"
)

// message is the message of entry e of stream s.
func (c *Consumer) message(s *stream, e rueidis.XRangeSlice) consume.Message {
	m := consume.Message{Position: s.what + " entry " + e.ID}
	if c.d.Traced() {
		m.Destination = s.key
		m.TraceParent, _ = field(e.FieldValues, "traceparent")
		m.TraceState, _ = field(e.FieldValues, "tracestate")
	}
	payload, ok := field(e.FieldValues, c.cfg.PayloadValue)
	if !ok {
		m.Err = fmt.Errorf("no field %q", c.cfg.PayloadValue)
		return m
	}
	m.Payload = []byte(payload)
	if p := &c.cfg.PublicationDataMode; p.Enabled {
		get := func(name string) string {
			v, _ := field(e.FieldValues, name)
			return v
		}
		pub, err := consume.ParsePublication(get(p.ChannelsValue), get(p.IdempotencyKeyValue),
			get(p.DeltaValue), get(p.VersionValue), get(p.VersionEpochValue), tags(e.FieldValues, p.TagsValuePrefix))
		if err != nil {
			m.Err = err
			return m
		}
		m.Publication = pub
		return m
	}
	m.Method, _ = field(e.FieldValues, c.cfg.MethodValue)
	return m
}

// field is the value of the first field called name; an empty name is
// never found.
func field(fields []rueidis.XRangeFieldValue, name string) (string, bool) {
	if name == "" {
		return "", false
	}
	for _, f := range fields {
		if f.Field == name {
			return f.Value, true
		}
	}
	return "", false
}

// tags are the fields whose names start with prefix, by the rest of
// their names; nil without any (or without a prefix).
func tags(fields []rueidis.XRangeFieldValue, prefix string) map[string]string {
	if prefix == "" {
		return nil
	}
	var t map[string]string
	for _, f := range fields {
		if k, ok := strings.CutPrefix(f.Field, prefix); ok && k != "" {
			if t == nil {
				t = map[string]string{}
			}
			t[k] = f.Value
		}
	}
	return t
}

// idLess tells whether stream entry ID a (<ms>-<seq>) comes before b.
// An ID that cannot be read comes first.
func idLess(a, b string) bool {
	ams, aseq := splitID(a)
	bms, bseq := splitID(b)
	return ams < bms || ams == bms && aseq < bseq
}

func splitID(id string) (ms, seq uint64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(s, 10, 64)
	return ms, seq
}
