package jetstream

import (
	"strconv"
	"strings"
	"time"
)

// names derives subjects and stream names from the prefix.
type names struct {
	prefix string // subject prefix
	stream string // stream name prefix
}

func newNames(prefix string) names {
	b := []byte(strings.ToUpper(prefix))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return names{prefix: prefix, stream: string(b)}
}

// history names the stream of one HistoryTTL and the subject prefix its
// channels' subjects start with (ending in a dot). TTLs are kept in
// milliseconds, the resolution of a publication's time.
func (n names) history(ttl time.Duration) (stream, base string) {
	tok := "t" + strconv.FormatInt(ttl.Milliseconds(), 10)
	return n.stream + "_" + strings.ToUpper(tok), n.prefix + "." + tok + "."
}

// copies names the stream that keeps the last message of each subject of
// a history stream.
func copies(history string) string { return history + "_TOP" }

// meta names the stream of epoch records.
func (n names) meta() (stream, base string) {
	return n.stream + "_META", n.prefix + ".meta."
}

// idem names the stream of idempotency results.
func (n names) idem() (stream, base string) {
	return n.stream + "_IDEM", n.prefix + ".i."
}

// delta names the stream of delta bases of channels without history.
func (n names) delta() (stream, base string) {
	return n.stream + "_DELTA", n.prefix + ".d."
}

// isHistory reports whether a stream of the store holds history (not a
// copy stream or one of the single streams).
func (n names) isHistory(stream string) bool {
	return strings.HasPrefix(stream, n.stream+"_T") && !strings.HasSuffix(stream, "_TOP")
}

// filter matches every subject of the store, for listing its streams.
func (n names) filter() string { return n.prefix + ".>" }

// token escapes a channel name into one subject token. NATS subjects
// cannot carry '.', whitespace, empty tokens, or tokens '*' and '>', and
// some clients choke on control and non-ASCII bytes; every byte outside a
// safe ASCII set is written as %XX (upper-case hex), '%' included, so
// distinct channels get distinct tokens. The empty channel is a lone
// '%', which no escaped name can be.
func token(channel string) string {
	if channel == "" {
		return "%"
	}
	n := 0
	for i := 0; i < len(channel); i++ {
		if !safe(channel[i]) {
			n++
		}
	}
	if n == 0 {
		return channel
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(channel)+2*n)
	for i := 0; i < len(channel); i++ {
		c := channel[i]
		if safe(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return string(b)
}

// safe reports whether c stands for itself in a token. '*' and '>' are
// escaped everywhere, not only as whole tokens, to keep one rule.
func safe(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '-', '_', ':', '=', '@', '+', ',', '~', '!', '#', '/', '$':
		return true
	}
	return false
}

// channelOf reverses token; ok is false for a token token cannot make.
func channelOf(tok string) (string, bool) {
	if tok == "%" {
		return "", true
	}
	if !strings.Contains(tok, "%") {
		return tok, true
	}
	b := make([]byte, 0, len(tok))
	for i := 0; i < len(tok); i++ {
		if tok[i] != '%' {
			b = append(b, tok[i])
			continue
		}
		if i+2 >= len(tok) {
			return "", false
		}
		v, err := strconv.ParseUint(tok[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b = append(b, byte(v))
		i += 2
	}
	return string(b), true
}
