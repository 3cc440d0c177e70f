package httpstream

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gyrehq/gyre/protocol"
)

// Format is how a stream puts frames on the wire.
type Format uint8

// Formats of a stream.
const (
	// Lines writes JSON messages one per line, newline-terminated.
	Lines Format = iota
	// Delimited writes length-prefixed protobuf frames unchanged.
	Delimited
	// SSE writes every JSON message as one Server-Sent Event.
	SSE
)

// DefaultWriteTimeout bounds a write when Options.WriteTimeout is zero.
const DefaultWriteTimeout = time.Second

// ErrFinished is returned by writes after Finish.
var ErrFinished = errors.New("httpstream: stream finished")

// Options configure a stream. The zero value works.
type Options struct {
	// WriteTimeout bounds each write and flush; zero means
	// DefaultWriteTimeout. A peer that does not take a frame in time gets
	// a write error, and the stream is broken from then on.
	WriteTimeout time.Duration
}

// Stream is one streaming HTTP response. See the package documentation
// for its rules.
type Stream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	format  Format
	timeout time.Duration
	// h2 is set on HTTP/2, where a write deadline is a timer that resets
	// the stream when it fires, writing or not: each write clears it.
	h2 bool

	mu       sync.Mutex
	finished bool
	// err is the first write error; the stream is unusable after it.
	err error
}

// Start sends the response headers for format with status 200 and flushes
// them, so that the client sees the stream open before the first frame.
// Headers already set on w (CORS, for example) go out too. r is the
// request being answered; its body must have been read already.
//
// The server's read and write timeouts (http.Server.ReadTimeout,
// WriteTimeout) are lifted for the response: the request was read within
// them, and from here on each write is bounded by Options.WriteTimeout.
func Start(w http.ResponseWriter, r *http.Request, format Format, opts Options) (*Stream, error) {
	s := &Stream{
		w:       w,
		rc:      http.NewResponseController(w),
		format:  format,
		timeout: opts.WriteTimeout,
		h2:      r.ProtoMajor >= 2,
	}
	// A read deadline left in place would fail net/http's background read
	// of an HTTP/1 connection, which cancels the request's context and so
	// ends the stream. net/http clears it once the body is read; clearing
	// it here keeps streams from depending on that.
	_ = s.rc.SetReadDeadline(time.Time{})
	if s.timeout <= 0 {
		s.timeout = DefaultWriteTimeout
	}
	h := w.Header()
	h.Set("Content-Type", contentType(format))
	h.Set("Cache-Control", "private, no-cache, no-store, must-revalidate, max-age=0")
	h.Set("Pragma", "no-cache")
	h.Set("Expires", "0")
	// Reverse proxies (nginx) buffer responses unless told not to.
	h.Set("X-Accel-Buffering", "no")
	// An HTTP/1 connection is not reused after a stream: the write
	// deadline left on it would break the next response, and streams are
	// long anyway. HTTP/2 deadlines are per stream, and there the header
	// would shut the whole connection down, other requests' streams too.
	if r.ProtoMajor < 2 {
		h.Set("Connection", "close")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setDeadline()
	w.WriteHeader(http.StatusOK)
	if err := s.rc.Flush(); err != nil {
		s.err = fmt.Errorf("httpstream: flush headers: %w", err)
		return nil, s.err
	}
	if s.h2 {
		_ = s.rc.SetWriteDeadline(time.Time{})
	}
	return s, nil
}

func contentType(f Format) string {
	switch f {
	case Delimited:
		return "application/octet-stream"
	case SSE:
		return "text/event-stream; charset=utf-8"
	default:
		return "application/json; charset=utf-8"
	}
}

// WriteFrame writes one frame and flushes it.
func (s *Stream) WriteFrame(frame []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(frame)
}

// Finish writes last (unless it is empty or the stream is broken) and ends
// the stream: later writes return ErrFinished. It waits for a write in
// flight. The handler must call it before returning; calling it again does
// nothing.
func (s *Stream) Finish(last []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return nil
	}
	var err error
	if len(last) > 0 && s.err == nil {
		err = s.writeLocked(last)
	}
	s.finished = true
	return err
}

func (s *Stream) writeLocked(frame []byte) error {
	if s.finished {
		return ErrFinished
	}
	if s.err != nil {
		return s.err
	}
	s.setDeadline()
	var err error
	switch s.format {
	case Lines:
		err = s.writeLines(frame)
	case SSE:
		err = s.writeEvents(frame)
	default:
		_, err = s.w.Write(frame)
	}
	if err == nil {
		err = s.rc.Flush()
	}
	if err != nil {
		s.err = fmt.Errorf("httpstream: write: %w", err)
		return s.err
	}
	if s.h2 {
		_ = s.rc.SetWriteDeadline(time.Time{})
	}
	return nil
}

// setDeadline bounds the next write. A writer that cannot have deadlines
// (a test recorder) writes without.
func (s *Stream) setDeadline() {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
}

var newline = []byte{'\n'}

// writeLines ends the frame with a newline: its messages are already
// joined by newlines.
func (s *Stream) writeLines(frame []byte) error {
	if _, err := s.w.Write(frame); err != nil {
		return err
	}
	_, err := s.w.Write(newline)
	return err
}

// writeEvents sends every message of a JSON frame as its own event.
func (s *Stream) writeEvents(frame []byte) error {
	for msg := range protocol.JSONMessages(frame) {
		if len(msg) == 0 {
			continue
		}
		if bytes.IndexByte(msg, '\r') < 0 {
			if err := s.writeEvent(msg); err != nil {
				return err
			}
			continue
		}
		// A carriage return would end an SSE line: such a message (never
		// one of the JSON encoder's) goes through the general encoder.
		if _, err := s.w.Write(AppendEvent(nil, msg)); err != nil {
			return err
		}
	}
	return nil
}

var (
	dataPrefix = []byte("data: ")
	eventEnd   = []byte("\n\n")
)

// writeEvent writes a one-line message as an event without copying it.
func (s *Stream) writeEvent(msg []byte) error {
	if _, err := s.w.Write(dataPrefix); err != nil {
		return err
	}
	if _, err := s.w.Write(msg); err != nil {
		return err
	}
	_, err := s.w.Write(eventEnd)
	return err
}
