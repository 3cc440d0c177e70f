package frontdoor

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hangTimeout turns a hang into a failure.
const hangTimeout = 30 * time.Second

const wsHead = "GET /connection/websocket HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n"

// taken is what the Upgrade callback got.
type taken struct {
	nc   net.Conn
	head string
}

func listen(t *testing.T, cfg Config) (*Listener, chan taken) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan taken, 4)
	cfg.Path = "/connection/websocket"
	cfg.Upgrade = func(nc net.Conn, head []byte) { got <- taken{nc: nc, head: string(head)} }
	l := New(ln, cfg)
	t.Cleanup(func() { _ = l.Close() })
	return l, got
}

// send dials l and writes each part.
func send(t *testing.T, l *Listener, parts ...string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for _, p := range parts {
		if _, err := io.WriteString(c, p); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// accepted waits for the connection Accept yields.
func accepted(t *testing.T, l *Listener) net.Conn {
	t.Helper()
	ch := make(chan net.Conn, 1)
	go func() {
		nc, err := l.Accept()
		if err != nil {
			t.Errorf("Accept: %v", err)
		}
		ch <- nc
	}()
	select {
	case nc := <-ch:
		if nc == nil {
			t.FailNow()
		}
		t.Cleanup(func() { _ = nc.Close() })
		return nc
	case <-time.After(hangTimeout):
		t.Fatal("Accept did not return")
		return nil
	}
}

func readN(t *testing.T, r io.Reader, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return string(b)
}

func TestTakesHandshakeAndLeavesWhatFollows(t *testing.T) {
	for _, head := range []string{wsHead, strings.Replace(wsHead, "websocket HTTP", "websocket?cf_protocol=protobuf HTTP", 1)} {
		l, got := listen(t, Config{})
		send(t, l, head+"first frame")
		select {
		case tk := <-got:
			defer tk.nc.Close()
			if tk.head != head {
				t.Errorf("head %q, want %q", tk.head, head)
			}
			if _, ok := tk.nc.(*net.TCPConn); !ok {
				t.Errorf("Upgrade got a %T, want the accepted *net.TCPConn", tk.nc)
			}
			if s := readN(t, tk.nc, len("first frame")); s != "first frame" {
				t.Errorf("read %q after the head, want %q", s, "first frame")
			}
		case <-time.After(hangTimeout):
			t.Fatal("handshake not taken")
		}
	}
}

// TestPassesEverythingElseUnread: the connection Accept yields starts
// with every byte the client sent.
func TestPassesEverythingElseUnread(t *testing.T) {
	big := "GET /connection/websocket HTTP/1.1\r\nCookie: " + strings.Repeat("c", PeekSize) + "\r\n\r\n"
	tests := []struct {
		name        string
		first, rest string // rest is sent once the connection was passed on
	}{
		{"other path", "GET /api HTTP/1.1\r\nHost: x\r\n\r\n", ""},
		{"longer path", "GET /connection/websocketx HTTP/1.1\r\nHost: x\r\n\r\n", ""},
		{"sub path", "GET /connection/websocket/x HTTP/1.1\r\nHost: x\r\n\r\n", ""},
		{"other method", "POST /connection/websocket HTTP/1.1\r\nHost: x\r\n\r\n", ""},
		{"head in two packets", wsHead[:40], wsHead[40:]},
		{"bare line feeds", "GET /connection/websocket HTTP/1.1\nHost: x\n\n", ""},
		{"head beyond the peek", big, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, got := listen(t, Config{})
			c := send(t, l, tt.first)
			nc := accepted(t, l)
			if _, ok := nc.(*net.TCPConn); !ok {
				t.Errorf("Accept gave a %T, want the accepted *net.TCPConn", nc)
			}
			if _, err := io.WriteString(c, tt.rest); err != nil {
				t.Fatal(err)
			}
			want := tt.first + tt.rest
			if s := readN(t, nc, len(want)); s != want {
				t.Errorf("read %q, want %q", s, want)
			}
			select {
			case tk := <-got:
				t.Errorf("taken with head %q", tk.head)
			default:
			}
		})
	}
}

func TestClosesSilentConnections(t *testing.T) {
	l, _ := listen(t, Config{HeadTimeout: 50 * time.Millisecond})
	c := send(t, l)
	_ = c.SetReadDeadline(time.Now().Add(hangTimeout))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read from a silent connection: %v, want it closed", err)
	}
}

// TestCloseClosesWaiting: Close does not leave connections that have not
// sent their first request open until their head timeout.
func TestCloseClosesWaiting(t *testing.T) {
	l, _ := listen(t, Config{HeadTimeout: hangTimeout})
	c := send(t, l)
	// Close must find it waiting, not still in the accept queue.
	deadline := time.Now().Add(hangTimeout)
	for {
		l.mu.Lock()
		n := len(l.waiting)
		l.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the connection never waited for its request")
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The head timeout is longer than the read deadline: only Close can
	// end the read with EOF.
	_ = c.SetReadDeadline(time.Now().Add(hangTimeout / 2))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after Close: %v, want the connection closed", err)
	}
}

// TestServesHTTP puts an http.Server behind the listener: requests that
// are not taken are served as usual, keep-alive included.
func TestServesHTTP(t *testing.T) {
	l, got := listen(t, Config{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	c := send(t, l)
	br := bufio.NewReader(c)
	for _, path := range []string{"/a", "/connection/websocket"} {
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(body) != path {
			t.Errorf("body %q, want %q", body, path)
		}
	}
	select {
	case tk := <-got:
		t.Errorf("a later request on a kept-alive connection was taken: %q", tk.head)
	default:
	}
}

// flakyListener fails its first Accept calls with errs.
type flakyListener struct {
	net.Listener
	errs []error
}

func (f *flakyListener) Accept() (net.Conn, error) {
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	return f.Listener.Accept()
}

func TestAcceptErrors(t *testing.T) {
	t.Run("out of descriptors is retried", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		emfile := &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
		l := New(&flakyListener{Listener: ln, errs: []error{emfile, emfile}}, Config{Path: "/ws"})
		defer l.Close()
		send(t, l, "GET / HTTP/1.1\r\n\r\n")
		accepted(t, l)
	})
	t.Run("a lasting error ends Accept", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		broken := errors.New("listener broken")
		l := New(&flakyListener{Listener: ln, errs: []error{broken}}, Config{Path: "/ws"})
		if _, err := l.Accept(); err != broken {
			t.Errorf("Accept: %v, want %v", err, broken)
		}
	})
	t.Run("Close ends Accept", func(t *testing.T) {
		l, _ := listen(t, Config{})
		_ = l.Close()
		if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
		if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
			t.Error("the listener still accepts after Close")
		}
	})
}
