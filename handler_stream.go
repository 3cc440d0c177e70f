package gyre

import (
	"context"
	"sync"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/httpstream"
)

// StreamConfig configures the HTTP streaming handlers: the bidirectional
// emulation over HTTP streaming and SSE, and their unidirectional
// versions.
type StreamConfig struct {
	// MaxRequestBodySize is the largest request body, or cf_connect query
	// value, accepted; 0 means 64 KiB. Larger requests get 413.
	MaxRequestBodySize int64
	// WriteTimeout bounds each write to the stream; 0 means 1s. A client
	// that cannot take a frame in time is disconnected.
	WriteTimeout time.Duration
	// AllowedOrigins lists the origins browsers may connect from, as in
	// WebsocketConfig. Allowed origins get CORS headers.
	AllowedOrigins []string
}

func (c StreamConfig) maxBody() int64 {
	if c.MaxRequestBodySize <= 0 {
		return defaultMaxRequestBodySize
	}
	return c.MaxRequestBodySize
}

// streamTransport is a client connection whose frames go into one HTTP
// response. The handler that owns the response waits in serve until the
// client is closed or the peer goes away, and writes the last frame itself,
// so that nothing touches the response after the handler returns.
type streamTransport struct {
	name    string
	proto   protocol.Type
	uni     bool
	session string
	stream  *httpstream.Stream

	closeOnce sync.Once
	closing   chan struct{}
	// disconnect is why the client was closed; set before closing is.
	disconnect *Disconnect
}

func newStreamTransport(name string, proto protocol.Type, uni bool, s *httpstream.Stream) *streamTransport {
	return &streamTransport{name: name, proto: proto, uni: uni, stream: s, closing: make(chan struct{})}
}

func (t *streamTransport) Name() string            { return t.name }
func (t *streamTransport) Protocol() protocol.Type { return t.proto }
func (t *streamTransport) Unidirectional() bool    { return t.uni }

// Session is the id the emulation endpoint finds the connection by; it is
// sent in the connect result.
func (t *streamTransport) Session() string { return t.session }

// WriteFrame writes a frame and flushes it. A failed write ends the stream
// at once: the client may already be closed (the writer's last frames
// after a disconnect), and then nothing else would wake the handler.
func (t *streamTransport) WriteFrame(frame []byte) error {
	err := t.stream.WriteFrame(frame)
	if err != nil {
		_ = t.Close(DisconnectWriteError)
	}
	return err
}

// Close wakes the handler, which writes the disconnect and ends the
// response. It never waits for a write in flight.
func (t *streamTransport) Close(d *Disconnect) error {
	t.closeOnce.Do(func() {
		t.disconnect = d
		close(t.closing)
	})
	return nil
}

// serve holds the handler until the connection ends, then finishes the
// response: with a disconnect push on a bidirectional stream, so that the
// SDK learns the code (a unidirectional client got its push from the
// engine already).
func (t *streamTransport) serve(ctx context.Context, c *Client) {
	select {
	case <-t.closing:
	case <-ctx.Done():
		c.Close(nil)
		_ = t.stream.Finish(nil)
		return
	}
	var last []byte
	if d := t.disconnect; d != nil && !t.uni && d != DisconnectWriteError {
		last, _ = protocol.AppendReply(nil, t.proto, &protocol.Reply{Push: &protocol.Push{
			Disconnect: &protocol.Disconnect{Code: d.Code, Reason: d.Reason, Reconnect: d.Reconnect()},
		}})
	}
	_ = t.stream.Finish(last)
}
