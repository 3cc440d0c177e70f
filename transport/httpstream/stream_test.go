package httpstream_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/transport/httpstream"
)

// serve starts a server whose handler opens a stream of format, writes the
// frames, finishes with last and returns.
func serve(t *testing.T, format httpstream.Format, frames [][]byte, last []byte) *http.Response {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := httpstream.Start(w, r, format, httpstream.Options{})
		if err != nil {
			t.Error(err)
			return
		}
		for _, f := range frames {
			if err := s.WriteFrame(f); err != nil {
				t.Error(err)
			}
		}
		if err := s.Finish(last); err != nil {
			t.Error(err)
		}
		if err := s.WriteFrame([]byte("{}")); !errors.Is(err, httpstream.ErrFinished) {
			t.Errorf("write after Finish: %v, want ErrFinished", err)
		}
	}))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestStreamFormats(t *testing.T) {
	pb := func(msgs ...string) []byte {
		var out []byte
		for _, m := range msgs {
			out = binary.AppendUvarint(out, uint64(len(m)))
			out = append(out, m...)
		}
		return out
	}
	tests := []struct {
		name        string
		format      httpstream.Format
		frames      []string
		last        string
		contentType string
		body        string
	}{
		{"lines", httpstream.Lines, []string{`{"a":1}`, "{\"b\":2}\n{\"c\":3}"}, `{"d":4}`,
			"application/json; charset=utf-8", "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n"},
		{"lines without last", httpstream.Lines, []string{`{}`}, "",
			"application/json; charset=utf-8", "{}\n"},
		{"delimited", httpstream.Delimited, []string{string(pb("ab", "")), string(pb("cde"))}, string(pb("f")),
			"application/octet-stream", string(pb("ab", "", "cde", "f"))},
		{"sse", httpstream.SSE, []string{`{"a":1}`, "{\"b\":2}\n{\"c\":3}", "x\ry"}, `{}`,
			"text/event-stream; charset=utf-8", "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: {\"c\":3}\n\ndata: x\ndata: y\n\ndata: {}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var frames [][]byte
			for _, f := range tt.frames {
				frames = append(frames, []byte(f))
			}
			var last []byte
			if tt.last != "" {
				last = []byte(tt.last)
			}
			resp := serve(t, tt.format, frames, last)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("status %d", resp.StatusCode)
			}
			if got := resp.Header.Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type %q, want %q", got, tt.contentType)
			}
			if got := resp.Header.Get("Cache-Control"); !strings.Contains(got, "no-cache") {
				t.Errorf("Cache-Control %q", got)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
		})
	}
}

// TestStreamFlushesEveryFrame reads each frame while the handler waits:
// nothing may sit in a buffer until the next write.
func TestStreamFlushesEveryFrame(t *testing.T) {
	next := make(chan string)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := httpstream.Start(w, r, httpstream.SSE, httpstream.Options{})
		if err != nil {
			t.Error(err)
			return
		}
		defer s.Finish(nil)
		for f := range next {
			if err := s.WriteFrame([]byte(f)); err != nil {
				t.Error(err)
				return
			}
		}
	}))
	defer srv.Close()
	defer close(next)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for _, msg := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
		next <- msg
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := "data: " + msg + "\n"; line != want {
			t.Fatalf("read %q, want %q", line, want)
		}
		if blank, err := br.ReadString('\n'); err != nil || blank != "\n" {
			t.Fatalf("event end %q, %v", blank, err)
		}
	}
}

// TestStreamPeerNotReading writes to a client that never reads: a write
// must fail (the timeout bounds it) instead of blocking forever, and the
// stream stays broken afterwards.
func TestStreamPeerNotReading(t *testing.T) {
	result := make(chan error, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := httpstream.Start(w, r, httpstream.Lines, httpstream.Options{WriteTimeout: 50 * time.Millisecond})
		if err != nil {
			result <- err
			return
		}
		frame := []byte(`{"data":"` + strings.Repeat("x", 64<<10) + `"}`)
		for {
			if err := s.WriteFrame(frame); err != nil {
				if again := s.WriteFrame([]byte("{}")); again == nil {
					err = errors.New("write after a failed write succeeded")
				}
				s.Finish([]byte("{}"))
				result <- err
				return
			}
		}
	}))
	// Small socket buffers so that the kernel stops taking data soon.
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && st == http.StateNew {
			_ = tc.SetWriteBuffer(4 << 10)
		}
	}
	srv.Start()
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	err = <-result
	if err == nil || errors.Is(err, httpstream.ErrFinished) {
		t.Fatalf("write error %v, want a timeout", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("write error %v is not a timeout", err)
	}
}

// TestStreamConnectionReuse: an HTTP/1 connection is closed after a stream
// (a write deadline stays on it), an HTTP/2 one stays usable for other
// requests.
func TestStreamConnectionReuse(t *testing.T) {
	for _, tt := range []struct {
		name  string
		http2 bool
	}{{"http1", false}, {"http2", true}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s, err := httpstream.Start(w, r, httpstream.Lines, httpstream.Options{})
				if err != nil {
					t.Error(err)
					return
				}
				_ = s.WriteFrame([]byte("{}"))
				_ = s.Finish(nil)
			}))
			srv.EnableHTTP2 = tt.http2
			srv.StartTLS()
			defer srv.Close()
			client := srv.Client()
			reused := make([]bool, 0, 2)
			for range 2 {
				trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
				req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, srv.URL, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != "{}\n" || resp.ProtoMajor != map[bool]int{false: 1, true: 2}[tt.http2] {
					t.Fatalf("%s: body %q", resp.Proto, body)
				}
			}
			if want := []bool{false, tt.http2}; reused[0] != want[0] || reused[1] != want[1] {
				t.Errorf("connection reused %v, want %v", reused, want)
			}
		})
	}
}

// TestStartWithoutFlusher refuses a writer that cannot stream.
func TestStartWithoutFlusher(t *testing.T) {
	if _, err := httpstream.Start(plainWriter{httptest.NewRecorder()}, httptest.NewRequest(http.MethodGet, "/", nil), httpstream.Lines, httpstream.Options{}); err == nil {
		t.Fatal("Start on a writer without Flush succeeded")
	}
}

// plainWriter hides the recorder's Flush.
type plainWriter struct{ r *httptest.ResponseRecorder }

func (p plainWriter) Header() http.Header         { return p.r.Header() }
func (p plainWriter) Write(b []byte) (int, error) { return p.r.Write(b) }
func (p plainWriter) WriteHeader(code int)        { p.r.WriteHeader(code) }
