package protocol

import (
	"bytes"
	"iter"
	"slices"
)

// DecodeCommands decodes every command of one transport frame, appending them to dst so
// that a connection can reuse one slice across frames. JSON commands are separated by
// '\n' (a trailing newline, "\r\n" and empty lines are tolerated); protobuf commands are
// each prefixed by their uvarint length, and a zero length is an empty Command, which is
// the client's pong. An empty frame holds no commands. Errors wrap ErrMalformed, and dst
// then holds the commands decoded before the bad one.
func DecodeCommands(t Type, frame []byte, dst []*Command) ([]*Command, error) {
	return CommandDecoder{}.DecodeCommands(t, frame, dst)
}

// DecodeCommand decodes one unframed command: a JSON object, or protobuf bytes without
// a length prefix.
func DecodeCommand(t Type, data []byte) (*Command, error) {
	return CommandDecoder{}.DecodeCommand(t, data)
}

// DefaultMaxJSONDepth is how deep JSON objects and arrays, raw values
// included, may nest in what the decoders read unless told otherwise: no
// real message nests more than a few levels, and the bound keeps hostile
// input from driving the recursive decoder into a huge stack.
const DefaultMaxJSONDepth = 256

// CommandDecoder decodes clients' commands with its own bounds; its zero
// value is DecodeCommands' and DecodeCommand's.
type CommandDecoder struct {
	// MaxJSONDepth bounds the nesting of JSON objects and arrays in a
	// command, raw values (data) included; deeper input is malformed. 0
	// means DefaultMaxJSONDepth.
	MaxJSONDepth int
}

// DecodeCommands is DecodeCommands with d's bounds.
func (d CommandDecoder) DecodeCommands(t Type, frame []byte, dst []*Command) ([]*Command, error) {
	return decodeFrame(t, frame, dst, d.MaxJSONDepth, decodeCommandJSON)
}

// DecodeCommand is DecodeCommand with d's bounds.
func (d CommandDecoder) DecodeCommand(t Type, data []byte) (*Command, error) {
	return decodeOne[Command](t, data, d.MaxJSONDepth, decodeCommandJSON)
}

// AppendCommand appends one framed command to dst, as a client sends it: see
// AppendReply for the framing.
func AppendCommand(dst []byte, t Type, c *Command) ([]byte, error) {
	return appendFramed(dst, t, c, appendCommandJSON)
}

// EncodeCommand encodes one unframed command, the inverse of DecodeCommand.
func EncodeCommand(t Type, c *Command) ([]byte, error) {
	return encodeOne(t, c, appendCommandJSON)
}

// AppendReply appends one framed reply to dst: in JSON the object with no separator
// (JoinFrame adds them), in protobuf the uvarint length and then the message. An empty
// Reply is the server's ping: "{}" or the single byte 0x00. A nil reply is written as
// an empty one.
func AppendReply(dst []byte, t Type, r *Reply) ([]byte, error) {
	return appendFramed(dst, t, r, appendReplyJSON)
}

// DecodeReplies decodes every reply of one frame, the client side of DecodeCommands.
func DecodeReplies(t Type, frame []byte, dst []*Reply) ([]*Reply, error) {
	return decodeFrame(t, frame, dst, 0, decodeReplyJSON)
}

// DecodeReply decodes one unframed reply.
func DecodeReply(t Type, data []byte) (*Reply, error) {
	return decodeOne[Reply](t, data, 0, decodeReplyJSON)
}

// AppendPush appends a bare Push framed like AppendReply. Unidirectional transports send
// pushes without the Reply envelope; bidirectional ones wrap them in Reply.Push.
func AppendPush(dst []byte, t Type, p *Push) ([]byte, error) {
	return appendFramed(dst, t, p, appendPushJSON)
}

// DecodePushes decodes every bare push of one frame, as a unidirectional client reads it.
func DecodePushes(t Type, frame []byte, dst []*Push) ([]*Push, error) {
	return decodeFrame(t, frame, dst, 0, decodePushJSON)
}

// DecodePush decodes one unframed bare push.
func DecodePush(t Type, data []byte) (*Push, error) {
	return decodeOne[Push](t, data, 0, decodePushJSON)
}

// DecodeEmulationRequest decodes the body of a request to the emulation endpoint.
func DecodeEmulationRequest(t Type, data []byte) (*EmulationRequest, error) {
	return decodeOne[EmulationRequest](t, data, 0, decodeEmulationRequestJSON)
}

// EncodeEmulationRequest encodes the body of a request to the emulation endpoint.
func EncodeEmulationRequest(t Type, e *EmulationRequest) ([]byte, error) {
	return encodeOne(t, e, appendEmulationRequestJSON)
}

// JoinFrame writes already framed messages into one transport frame: JSON joins them
// with '\n' and no trailing newline, protobuf (whose messages carry their lengths)
// concatenates them.
func JoinFrame[M ~[]byte | ~string](dst []byte, t Type, msgs []M) []byte {
	// Grown once to the frame's size: a frame of a hundred messages would
	// otherwise grow the buffer several times, copying it each time.
	size := 0
	for _, m := range msgs {
		size += len(m)
	}
	if t == TypeJSON && len(msgs) > 1 {
		size += len(msgs) - 1
	}
	dst = slices.Grow(dst, size)
	for i, m := range msgs {
		if i > 0 && t == TypeJSON {
			dst = append(dst, '\n')
		}
		dst = append(dst, m...)
	}
	return dst
}

// JSONMessages yields the messages of a JSON transport frame: the pieces
// between the newlines JoinFrame puts between messages (the encoder escapes
// newlines inside them). Empty pieces are yielded too.
func JSONMessages(frame []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for len(frame) > 0 {
			msg := frame
			if i := bytes.IndexByte(frame, '\n'); i >= 0 {
				msg, frame = frame[:i], frame[i+1:]
			} else {
				frame = nil
			}
			if !yield(msg) {
				return
			}
		}
	}
}

// AppendJSONString appends s as a JSON string literal, escaped so that the result is
// valid JSON: quotes, backslashes and control characters are escaped, invalid UTF-8
// becomes U+FFFD. It is how a bytes field that must travel as a JSON string (a fossil
// delta on a JSON connection) is prepared before it is set as raw data.
func AppendJSONString[S ~string | ~[]byte](dst []byte, s S) []byte {
	return appendString(dst, s)
}

// UnquoteJSONString returns the contents of a raw JSON string value, unescaped. It
// undoes AppendJSONString, and reads bytes fields that JSON clients fill with a string:
// centrifuge-js sends the data of an EmulationRequest as a JSON string holding the
// command frame. Errors wrap ErrMalformed.
func UnquoteJSONString(raw []byte) ([]byte, error) {
	r := getReader(raw, 0)
	defer putReader(r)
	if r.peek() != '"' {
		r.fail("expected string")
		return nil, r.err
	}
	start, end, escaped := r.scanString()
	if r.peek(); r.err == nil && r.pos != len(raw) {
		r.fail("data after string")
	}
	if r.err != nil {
		return nil, r.err
	}
	if escaped {
		return unescape(make([]byte, 0, end-start), raw[start:end]), nil
	}
	return append([]byte(nil), raw[start:end]...), nil
}
