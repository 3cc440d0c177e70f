package websocket

import (
	"net/http"
	"time"
)

// Defaults applied for zero Options fields.
const (
	DefaultReadLimit    = 64 << 10
	DefaultWriteTimeout = time.Second
)

// Options configure one upgrade. The zero value works.
type Options struct {
	// ReadLimit is the largest message, in bytes, ReadMessage accepts; a
	// larger one gives an error matching ErrMessageTooLarge. Zero means
	// DefaultReadLimit.
	ReadLimit int64

	// CheckOrigin decides whether the request's origin may connect; false
	// answers 403. Nil allows every origin.
	CheckOrigin func(r *http.Request) bool

	// WriteTimeout bounds every write: the handshake answer, each frame,
	// each pong and the close frame. Zero means DefaultWriteTimeout.
	WriteTimeout time.Duration

	// Compression, when set, accepts a client's offer of permessage-deflate
	// (see [Compression]); nil declines every offer.
	Compression *Compression

	// Header holds extra headers for the 101 answer (cookies, for
	// example). Nil adds none.
	Header http.Header
}

func (o Options) readLimit() int64 {
	if o.ReadLimit <= 0 {
		return DefaultReadLimit
	}
	return o.ReadLimit
}

func (o Options) writeTimeout() time.Duration {
	if o.WriteTimeout <= 0 {
		return DefaultWriteTimeout
	}
	return o.WriteTimeout
}
