package protocol

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
)

// vtMessage is what the generated vtprotobuf code gives every message.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
	UnmarshalVT([]byte) error
}

// readerPool keeps decoders, and the scratch space they grew, across frames.
var readerPool = sync.Pool{New: func() any { return new(jsonReader) }}

func getReader(data []byte, maxDepth int) *jsonReader {
	r := readerPool.Get().(*jsonReader)
	r.reset(data)
	if maxDepth > 0 {
		r.maxDepth = maxDepth
	}
	return r
}

func putReader(r *jsonReader) {
	r.data = nil
	r.key = nil
	if cap(r.scratch) > 4096 {
		r.scratch = nil
	}
	readerPool.Put(r)
}

// decodeFrame decodes every message of one transport frame, appending to dst. On error
// dst keeps the messages decoded before the bad one.
func decodeFrame[T any, P interface {
	*T
	vtMessage
}](t Type, frame []byte, dst []P, maxDepth int, decodeJSON func(*jsonReader, *T)) ([]P, error) {
	switch t {
	case TypeJSON:
		return decodeFrameJSON(frame, dst, maxDepth, decodeJSON)
	case TypeProtobuf:
		return decodeFrameProtobuf(frame, dst)
	}
	return dst, fmt.Errorf("%w %d", ErrUnknownType, t)
}

// decodeFrameJSON reads objects one after another. Whitespace between them, the '\n'
// separators included, is skipped, which tolerates trailing newlines, "\r\n" and empty
// lines without splitting the frame first.
func decodeFrameJSON[T any, P interface {
	*T
	vtMessage
}](frame []byte, dst []P, maxDepth int, decode func(*jsonReader, *T)) ([]P, error) {
	r := getReader(frame, maxDepth)
	defer putReader(r)
	for {
		c := r.peek()
		if r.pos == len(frame) {
			return dst, nil
		}
		if c != '{' {
			r.fail("expected object")
			return dst, r.err
		}
		m := readMessage(r, decode)
		if r.err != nil {
			return dst, r.err
		}
		dst = append(dst, P(m))
	}
}

// decodeFrameProtobuf reads messages each prefixed by its uvarint length. A zero length
// is an empty message, which is meaningful (a pong, a ping).
func decodeFrameProtobuf[T any, P interface {
	*T
	vtMessage
}](frame []byte, dst []P) ([]P, error) {
	for i := 0; len(frame) > 0; i++ {
		size, n := binary.Uvarint(frame)
		if n <= 0 {
			return dst, fmt.Errorf("%w: message %d: bad length prefix", ErrMalformed, i)
		}
		frame = frame[n:]
		if size > uint64(len(frame)) {
			return dst, fmt.Errorf("%w: message %d: length %d past the end of the frame", ErrMalformed, i, size)
		}
		m := P(new(T))
		if err := m.UnmarshalVT(frame[:size]); err != nil {
			return dst, fmt.Errorf("%w: message %d: %w", ErrMalformed, i, err)
		}
		dst = append(dst, m)
		frame = frame[size:]
	}
	return dst, nil
}

// decodeOne decodes a single unframed message.
func decodeOne[T any, P interface {
	*T
	vtMessage
}](t Type, data []byte, maxDepth int, decodeJSON func(*jsonReader, *T)) (P, error) {
	switch t {
	case TypeJSON:
		r := getReader(data, maxDepth)
		defer putReader(r)
		if r.peek() != '{' {
			r.fail("expected object")
			return nil, r.err
		}
		m := readMessage(r, decodeJSON)
		if r.peek(); r.err == nil && r.pos != len(data) {
			r.fail("data after message")
		}
		if r.err != nil {
			return nil, r.err
		}
		return P(m), nil
	case TypeProtobuf:
		m := P(new(T))
		if err := m.UnmarshalVT(data); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w %d", ErrUnknownType, t)
}

// appendFramed appends one message framed for t. A nil message is written as an empty
// one, so that a nil never turns into a panic on the write path.
func appendFramed[T any, P interface {
	*T
	vtMessage
}](dst []byte, t Type, m P, encodeJSON func([]byte, *T) []byte) ([]byte, error) {
	if m == nil {
		m = P(new(T))
	}
	switch t {
	case TypeJSON:
		return encodeJSON(dst, m), nil
	case TypeProtobuf:
		return appendLengthPrefixed(dst, m)
	}
	return dst, fmt.Errorf("%w %d", ErrUnknownType, t)
}

func appendLengthPrefixed(dst []byte, m vtMessage) ([]byte, error) {
	start := len(dst)
	size := m.SizeVT()
	dst, err := appendVT(binary.AppendUvarint(dst, uint64(size)), m, size)
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// appendVT marshals m (of the given size) at the end of dst, growing it once.
func appendVT(dst []byte, m vtMessage, size int) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	if _, err := m.MarshalToSizedBufferVT(dst[start:]); err != nil {
		return dst[:start], fmt.Errorf("protocol: marshal: %w", err)
	}
	return dst, nil
}

// encodeOne encodes a single unframed message.
func encodeOne[T any, P interface {
	*T
	vtMessage
}](t Type, m P, encodeJSON func([]byte, *T) []byte) ([]byte, error) {
	return appendOne(nil, t, m, encodeJSON)
}

// appendOne appends a single unframed message to dst.
func appendOne[T any, P interface {
	*T
	vtMessage
}](dst []byte, t Type, m P, encodeJSON func([]byte, *T) []byte) ([]byte, error) {
	if m == nil {
		m = P(new(T))
	}
	switch t {
	case TypeJSON:
		return encodeJSON(dst, m), nil
	case TypeProtobuf:
		return appendVT(dst, m, m.SizeVT())
	}
	return dst, fmt.Errorf("%w %d", ErrUnknownType, t)
}
