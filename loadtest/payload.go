package loadtest

import (
	"bytes"
	"strconv"
	"strings"
)

// A publication's data is a JSON object whose first member carries what
// a subscriber needs: {"gb":[publisher,seq,sent_unix_nano],"p":"xxx"},
// padded with "p" to the requested size. Subscribers find the marker
// with one bytes.Index and parse three integers; nothing else of the
// message is decoded.
var payloadMarker = []byte(`{"gb":[`)

// minPayloadSize is about the smallest payload with all three numbers
// at full width.
const minPayloadSize = 64

// appendPayload appends a payload of at least size bytes.
func appendPayload(dst []byte, publisher int, seq uint64, sentNano int64, size int) []byte {
	start := len(dst)
	dst = append(dst, payloadMarker...)
	dst = strconv.AppendInt(dst, int64(publisher), 10)
	dst = append(dst, ',')
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, sentNano, 10)
	dst = append(dst, `],"p":"`...)
	if pad := size - (len(dst) - start) - 2; pad > 0 {
		dst = append(dst, padding(pad)...)
	}
	return append(dst, '"', '}')
}

var padText = strings.Repeat("x", 64<<10)

func padding(n int) string {
	for n > len(padText) {
		padText += padText
	}
	return padText[:n]
}

// stamp is what a subscriber reads out of a delivered payload.
type stamp struct {
	publisher int
	seq       uint64
	sentNano  int64
}

// findStamp looks for a payload inside msg, which may be a whole JSON
// reply or a publication's data alone.
func findStamp(msg []byte) (stamp, bool) {
	i := bytes.Index(msg, payloadMarker)
	if i < 0 {
		return stamp{}, false
	}
	b := msg[i+len(payloadMarker):]
	w, b, ok1 := parseUint(b, ',')
	seq, b, ok2 := parseUint(b, ',')
	ts, _, ok3 := parseUint(b, ']')
	if !ok1 || !ok2 || !ok3 || w > 1<<16 || ts > 1<<62 {
		return stamp{}, false
	}
	return stamp{publisher: int(w), seq: seq, sentNano: int64(ts)}, true
}

// parseUint reads decimal digits up to the byte end and returns the rest
// after it.
func parseUint(b []byte, end byte) (uint64, []byte, bool) {
	var v uint64
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if i >= 19 {
				return 0, nil, false
			}
			v = v*10 + uint64(c-'0')
		case c == end && i > 0:
			return v, b[i+1:], true
		default:
			return 0, nil, false
		}
	}
	return 0, nil, false
}
