package loadtest

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
)

// A publication's data is a JSON object whose first member carries what
// a subscriber needs: {"gb":[publisher,seq,sent_unix_nano],"p":"xxx"},
// padded with "p" to the requested size. Subscribers find the marker
// with one bytes.Index and parse three integers; nothing else of the
// message is decoded.
var payloadMarker = []byte(`{"gb":[`)

// appendPayloadHead appends what every payload starts with: the marker
// and the three numbers a subscriber reads back, publisher, sequence and
// send time, before the array closes.
func appendPayloadHead(dst []byte, publisher int, seq uint64, sentNano int64) []byte {
	dst = append(dst, payloadMarker...)
	dst = strconv.AppendInt(dst, int64(publisher), 10)
	dst = append(dst, ',')
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, sentNano, 10)
}

// minPayloadSize is about the smallest payload with all three numbers
// at full width.
const minPayloadSize = 64

// appendPayload appends a payload of at least size bytes.
func appendPayload(dst []byte, publisher int, seq uint64, sentNano int64, size int) []byte {
	start := len(dst)
	dst = appendPayloadHead(dst, publisher, seq, sentNano)
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
	ts, ok3 := parseNano(b)
	if !ok1 || !ok2 || !ok3 || w > 1<<16 || ts > 1<<62 {
		return stamp{}, false
	}
	return stamp{publisher: int(w), seq: seq, sentNano: int64(ts)}, true
}

// parseNano reads the send time and the ']' after it. Between 2001 and
// 2286 it has 19 digits, read eight at a time: digit by digit, each
// step waits for the multiplication before it, and that chain was a
// seventh of a subscriber's CPU.
func parseNano(b []byte) (uint64, bool) {
	if len(b) >= 20 && b[19] == ']' {
		hi, ok1 := parseEightDigits(b[0:8])
		mid, ok2 := parseEightDigits(b[8:16])
		d0, d1, d2 := b[16]-'0', b[17]-'0', b[18]-'0'
		if ok1 && ok2 && d0 <= 9 && d1 <= 9 && d2 <= 9 {
			return hi*100_000_000_000 + mid*1000 + uint64(d0)*100 + uint64(d1)*10 + uint64(d2), true
		}
	}
	v, _, ok := parseUint(b, ']')
	return v, ok
}

// parseEightDigits reads eight decimal digits in a few word operations.
func parseEightDigits(b []byte) (uint64, bool) {
	v := binary.LittleEndian.Uint64(b)
	// Every byte in '0'..'9': its high nibble is 3, and adding 6 does
	// not carry it out of 3 (which ':' to '?' would).
	const threes = 0x3030303030303030
	if v&0xF0F0F0F0F0F0F0F0 != threes || (v+0x0606060606060606)&0xF0F0F0F0F0F0F0F0 != threes {
		return 0, false
	}
	v &= 0x0F0F0F0F0F0F0F0F
	// The first digit is the lowest byte. Pairs of digits, then the four
	// pairs weighted and summed in the upper half of one multiplication.
	v = v*10 + v>>8
	v = ((v&0x000000FF000000FF)*(100+1000000<<32) + (v>>16&0x000000FF000000FF)*(1+10000<<32)) >> 32
	return v, true
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
