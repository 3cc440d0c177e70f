package protocol

import (
	"encoding/binary"
	"fmt"
)

// AppendPublication appends p alone, unframed: the JSON object, or the
// protobuf message's bytes. AppendChannelPush wraps it for a channel, so
// that a publication that goes to many channels (a broadcast) is encoded
// once.
func AppendPublication(dst []byte, t Type, p *Publication) ([]byte, error) {
	return appendOne(dst, t, p, appendPublicationJSON)
}

// AppendChannelPush appends the publication push of channel whose
// publication, pub, AppendPublication encoded, framed as AppendReply
// frames it: the same bytes as AppendReply of
// Reply{Push: &Push{Channel: channel, Pub: p}}.
func AppendChannelPush(dst []byte, t Type, channel string, pub []byte) ([]byte, error) {
	switch t {
	case TypeJSON:
		dst = append(dst, `{"push":`...)
		start := len(dst)
		dst = appendStringField(dst, `,"channel":`, channel)
		dst = append(append(dst, `,"pub":`...), pub...)
		return append(closeObject(dst, start), '}'), nil
	case TypeProtobuf:
		// Reply field 4 (push) holding Push field 2 (channel, left out
		// when empty) and field 4 (pub).
		push := protoFieldLen(len(pub))
		if channel != "" {
			push += protoFieldLen(len(channel))
		}
		dst = binary.AppendUvarint(dst, uint64(protoFieldLen(push)))
		dst = binary.AppendUvarint(append(dst, 4<<3|2), uint64(push))
		if channel != "" {
			dst = append(binary.AppendUvarint(append(dst, 2<<3|2), uint64(len(channel))), channel...)
		}
		return append(binary.AppendUvarint(append(dst, 4<<3|2), uint64(len(pub))), pub...), nil
	}
	return dst, fmt.Errorf("%w %d", ErrUnknownType, t)
}

// protoFieldLen is the encoded size of a length-delimited field numbered
// below 16 holding n bytes.
func protoFieldLen(n int) int {
	size := 2
	for v := uint64(n); v >= 0x80; v >>= 7 {
		size++
	}
	return size + n
}
