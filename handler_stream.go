package gyre

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/httpstream"
)

// defaultMaxRequestBodySize bounds request bodies (and cf_connect values)
// of the HTTP transports when their config leaves it zero.
const defaultMaxRequestBodySize = 64 << 10

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

// sessionTransport is a transport with a session id for the emulation
// endpoint.
type sessionTransport interface {
	Session() string
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

// handleCommands runs commands decoded by a handler that had to check them
// before it answered (the first commands of an emulated connection).
func (c *Client) handleCommands(cmds []*protocol.Command) bool {
	for _, cmd := range cmds {
		if !c.handleCommand(cmd) {
			return false
		}
	}
	return c.state.Load() != stateClosed
}

// errBodyTooLarge is returned by readBody for a body over the limit.
var errBodyTooLarge = errors.New("gyre: request body too large")

// readBody reads the whole request body, at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errBodyTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, errBodyTooLarge
		}
		return nil, fmt.Errorf("gyre: read request body: %w", err)
	}
	return body, nil
}

// bodyError answers a request whose body could not be read.
func bodyError(w http.ResponseWriter, err error) {
	if errors.Is(err, errBodyTooLarge) {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, "cannot read request body", http.StatusBadRequest)
}

// isProtobufBody tells whether a request body is binary (protobuf), as the
// SDK marks it.
func isProtobufBody(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/octet-stream")
}

// cors checks a request's origin and sets the CORS headers for allowed
// ones. It answers preflight requests (OPTIONS) and refused origins itself
// and then returns false.
type cors struct {
	check   func(r *http.Request) bool
	methods string
}

func newCORS(allowed []string, methods string) cors {
	return cors{check: OriginChecker(allowed), methods: methods}
}

func (c cors) handle(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin != "" {
		if c.check != nil && !c.check(r) {
			http.Error(w, "origin not allowed", http.StatusForbidden)
			return false
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Add("Vary", "Origin")
	}
	if r.Method != http.MethodOptions {
		return true
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", c.methods)
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		h.Set("Access-Control-Allow-Headers", req)
	}
	h.Set("Access-Control-Max-Age", "300")
	w.WriteHeader(http.StatusNoContent)
	return false
}

// allowMethods answers 405 unless the request's method is one of methods.
func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", ")+", OPTIONS")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}
