package protocol

import (
	"errors"
	"strconv"
)

// Type is a wire format of the client protocol. A connection picks one when it is
// established and keeps it for its lifetime.
type Type uint8

const (
	// TypeJSON is the default format: JSON messages, raw JSON in bytes fields.
	TypeJSON Type = iota
	// TypeProtobuf is the binary format: protobuf messages prefixed by their length.
	TypeProtobuf
)

// String returns the name the Centrifugo protocol uses for the format ("json",
// "protobuf"), so that it can go into logs and metric labels as is.
func (t Type) String() string {
	switch t {
	case TypeJSON:
		return "json"
	case TypeProtobuf:
		return "protobuf"
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// ErrMalformed is wrapped by every error that comes from bytes which do not decode into
// the expected messages: the peer broke the protocol (bad request, 3501), as opposed to
// ErrUnknownType, which is a programming error on this side.
var ErrMalformed = errors.New("protocol: malformed message")

// ErrUnknownType is returned for a Type that is neither TypeJSON nor TypeProtobuf.
var ErrUnknownType = errors.New("protocol: unknown type")
