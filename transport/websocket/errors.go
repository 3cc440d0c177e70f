package websocket

import (
	"errors"
	"strconv"
)

// Errors callers branch on.
var (
	// ErrMessageTooLarge is matched (errors.Is) by the error ReadMessage
	// returns when a message would exceed Options.ReadLimit; the error
	// says the size and the limit. Nothing of the message is read past
	// its header.
	ErrMessageTooLarge = errors.New("websocket: message too large")

	// ErrProtocol is matched (errors.Is) by every error about a frame that
	// breaks RFC 6455: a missing mask, reserved bits, a bad opcode, a
	// fragmented or oversized control frame, an invalid close code.
	ErrProtocol = errors.New("websocket: protocol error")

	// ErrInvalidUTF8 is returned by ReadMessage for a text message, or a
	// close reason, that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("websocket: invalid UTF-8 in text")

	// ErrClosed is returned by operations on a connection that Close has
	// closed, or that was closed after the peer's close frame.
	ErrClosed = errors.New("websocket: connection closed")

	// ErrPollerClosed ends the reading of connections whose Poller was
	// closed, or that could not be registered with it.
	ErrPollerClosed = errors.New("websocket: poller closed")

	// ErrPollUnsupported is returned by NewPoller where readiness polling
	// is not implemented; ServeReads then reads with a goroutine.
	ErrPollUnsupported = errors.New("websocket: polling not supported on this system")

	// ErrOriginNotAllowed is returned by Upgrade when Options.CheckOrigin
	// refuses the request; the client got 403.
	ErrOriginNotAllowed = errors.New("websocket: origin not allowed")

	// ErrBadHandshake is matched by Upgrade errors for a request that is not
	// a valid WebSocket handshake; the client got a 4xx answer.
	ErrBadHandshake = errors.New("websocket: bad handshake")
)

// CloseError is returned by ReadMessage when the peer sent a close frame.
// The frame has been echoed and the connection closed.
type CloseError struct {
	// Code is the peer's status code, 1005 (no status) when the frame had
	// no payload.
	Code uint16
	// Reason is the peer's UTF-8 reason, possibly empty.
	Reason string
}

var _ error = (*CloseError)(nil)

func (e *CloseError) Error() string {
	s := "websocket: closed by peer: " + strconv.Itoa(int(e.Code))
	if e.Reason != "" {
		s += " " + e.Reason
	}
	return s
}

// protocolError describes one RFC 6455 violation while matching ErrProtocol.
type protocolError string

func (e protocolError) Error() string { return "websocket: protocol error: " + string(e) }

func (e protocolError) Is(target error) bool { return target == ErrProtocol }
