package gyre

import (
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// Transport is what the engine needs of a client connection: a way to write
// frames and to close. The engine drives reads itself from the transport's
// handler.
type Transport interface {
	// Name is the transport's name ("websocket", "http_stream", ...).
	Name() string
	// Protocol is the wire format negotiated for the connection.
	Protocol() protocol.Type
	// Unidirectional transports receive bare pushes and send no commands
	// after connect.
	Unidirectional() bool
	// WriteFrame writes one frame holding one or more framed messages
	// (see protocol.JoinFrame). It is called from one goroutine at a time.
	WriteFrame(frame []byte) error
	// Close closes the connection telling the client why. It may be called
	// concurrently with WriteFrame and more than once.
	Close(d *Disconnect) error
}

// frameTransport is a WebSocket transport that may have negotiated
// permessage-deflate. With it, the client's queue holds whole WebSocket
// frames, one message each, so that a publication is compressed once for
// every subscriber instead of once per connection; WriteFrames sends what
// is queued back to back in one write.
type frameTransport interface {
	// Compression is non-nil when the connection negotiated compression.
	Compression() *websocket.Compression
	// WriteFrames writes frames made with Compression's AppendFrame. It is
	// called from one goroutine at a time.
	WriteFrames(frames []string) error
}

// tryTransport is a transport that can write a frame without waiting for
// the socket. A fan-out then writes to the connections it queued for
// from a few goroutines, each taking many connections in turn, instead
// of starting a goroutine for each connection: starting and scheduling
// those was a tenth of the server's CPU on broadcasts to personal
// channels (docs/benchmarks.md, "Side by side with Centrifugo").
type tryTransport interface {
	// CanTryWrite reports whether TryWriteFrame works on the connection.
	CanTryWrite() bool
	// TryWriteFrame writes frame[websocket.FrameHeaderRoom:] as
	// WriteFrame would, without waiting for the socket: false when the
	// socket did not take all of it, and FlushFrame must then write the
	// rest; websocket.ErrWriteBusy, having written nothing, when another
	// write of the connection is under way.
	TryWriteFrame(frame []byte) (complete bool, err error)
	// FlushFrame writes the rest TryWriteFrame left, waiting as
	// WriteFrame does.
	FlushFrame() error
}
