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
	s, _, ok := findStampAt(msg, 0)
	return s, ok
}

// findStampAt is findStamp trying the marker at offset at first: a
// server frames every publication of a channel alike, so the offset where
// the last one had its payload is where the next one has it, and a
// search through the message is only needed when that misses. It also
// returns the offset where the marker was.
func findStampAt(msg []byte, at int) (stamp, int, bool) {
	i := at
	if i < 0 || i > len(msg) || !bytes.HasPrefix(msg[i:], payloadMarker) {
		if i = bytes.Index(msg, payloadMarker); i < 0 {
			return stamp{}, 0, false
		}
	}
	s, ok := parseStamp(msg[i+len(payloadMarker):])
	return s, i, ok
}

// parseStampAt reads a stamp whose marker is at offset at of msg.
func parseStampAt(msg []byte, at int) (stamp, bool) {
	if at <= 0 || at > len(msg) || !bytes.HasPrefix(msg[at:], payloadMarker) {
		return stamp{}, false
	}
	return parseStamp(msg[at+len(payloadMarker):])
}

// parseStamp reads the three numbers that follow the marker.
func parseStamp(b []byte) (stamp, bool) {
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
	i := 0
	for ; i < len(b) && i < 20; i++ {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		v = v*10 + uint64(d)
	}
	if i == 0 || i >= 20 || i == len(b) || b[i] != end {
		return 0, nil, false
	}
	return v, b[i+1:], true
}
