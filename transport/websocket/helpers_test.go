package websocket

import (
	"bytes"
	stdflate "compress/flate"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/internal/frontdoor"
	"github.com/gyrehq/gyre/protocol"
)

// hangTimeout bounds every wait in the tests. It only turns a hang into a
// failure; loaded, shared machines under the race detector need it long.
const hangTimeout = 60 * time.Second

// upgraded is what the test server's handler got from Upgrade.
type upgraded struct {
	conn   *Conn
	format protocol.Type
	err    error
	via    string // the function that upgraded: Upgrade or UpgradeHead
}

// testServer upgrades every request with opts and hands the result over.
type testServer struct {
	*httptest.Server
	conns chan upgraded
}

func newTestServer(t testing.TB, opts Options) *testServer {
	t.Helper()
	return startTestServer(t, opts, httptest.NewServer)
}

func newTLSTestServer(t testing.TB, opts Options) *testServer {
	t.Helper()
	return startTestServer(t, opts, httptest.NewTLSServer)
}

func startTestServer(t testing.TB, opts Options, start func(http.Handler) *httptest.Server) *testServer {
	t.Helper()
	opts = testOptions(opts)
	s := &testServer{conns: make(chan upgraded, 16)}
	s.Server = start(s.upgradeHandler(opts))
	t.Cleanup(s.Close)
	return s
}

// newHeadTestServer is a test server whose handshakes for
// /connection/websocket are read by a frontdoor listener and answered by
// UpgradeHead; other requests (a POST, say) reach Upgrade through net/http.
func newHeadTestServer(t testing.TB, opts Options) *testServer {
	t.Helper()
	opts = testOptions(opts)
	s := &testServer{conns: make(chan upgraded, 16)}
	s.Server = httptest.NewUnstartedServer(s.upgradeHandler(opts))
	s.Listener = frontdoor.New(s.Listener, frontdoor.Config{
		Path: "/connection/websocket",
		Upgrade: func(nc net.Conn, head []byte) {
			c, f, err := UpgradeHead(nc, head, opts)
			s.conns <- upgraded{conn: c, format: f, err: err, via: "UpgradeHead"}
		},
	})
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// upgraders are the two ways into a connection, for tests that hold for both.
var upgraders = []struct {
	name      string
	newServer func(testing.TB, Options) *testServer
}{
	{"Upgrade", newTestServer},
	{"UpgradeHead", newHeadTestServer},
}

func testOptions(opts Options) Options {
	if opts.WriteTimeout == 0 {
		// Loaded test machines can stall a write for longer than the
		// default; tests about timeouts set their own.
		opts.WriteTimeout = 20 * time.Second
	}
	return opts
}

func (s *testServer) upgradeHandler(opts Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, f, err := Upgrade(w, r, opts)
		s.conns <- upgraded{conn: c, format: f, err: err, via: "Upgrade"}
	})
}

// wsURL is the server's address with a ws or wss scheme and the given
// path and query.
func (s *testServer) wsURL(pathQuery string) string {
	u := strings.Replace(s.URL, "http", "ws", 1)
	return u + pathQuery
}

// accept waits for the server side of the next connection.
func (s *testServer) accept(t testing.TB) upgraded {
	t.Helper()
	select {
	case u := <-s.conns:
		return u
	case <-time.After(hangTimeout):
		t.Fatal("no upgrade reached the server")
		return upgraded{}
	}
}

// client is the peer: a real WebSocket client on a real socket.
type client struct {
	t    testing.TB
	conn net.Conn
	r    io.Reader
	hs   ws.Handshake
}

func (s *testServer) dial(t testing.TB, pathQuery string, protocols ...string) *client {
	t.Helper()
	return s.dialWith(t, pathQuery, ws.Dialer{Protocols: protocols})
}

// dialWith dials with d, set up for the server's TLS if it has it.
func (s *testServer) dialWith(t testing.TB, pathQuery string, d ws.Dialer) *client {
	t.Helper()
	if s.TLS != nil {
		d.TLSConfig = &tls.Config{RootCAs: s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	}
	conn, br, hs, err := d.Dial(context.Background(), s.wsURL(pathQuery))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c := &client{t: t, conn: conn, r: conn, hs: hs}
	if br != nil {
		c.r = io.MultiReader(br, conn)
	}
	return c
}

// connect dials and returns both ends.
func (s *testServer) connect(t testing.TB, pathQuery string, protocols ...string) (*client, *Conn) {
	t.Helper()
	cl := s.dial(t, pathQuery, protocols...)
	u := s.accept(t)
	if u.err != nil {
		t.Fatalf("upgrade: %v", u.err)
	}
	t.Cleanup(func() { _ = u.conn.Close(1000, "") })
	return cl, u.conn
}

// send writes a masked frame as a client must.
func (c *client) send(op ws.OpCode, fin bool, payload []byte) {
	c.t.Helper()
	p := append([]byte(nil), payload...)
	f := ws.MaskFrameInPlace(ws.NewFrame(op, fin, p))
	if err := ws.WriteFrame(c.conn, f); err != nil {
		c.t.Fatalf("client send: %v", err)
	}
}

// sendRaw writes bytes as they are, for frames a client must not send.
func (c *client) sendRaw(b []byte) {
	c.t.Helper()
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("client send raw: %v", err)
	}
}

// recv reads one frame from the server and checks it is unmasked.
func (c *client) recv() ws.Frame {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(hangTimeout))
	f, err := ws.ReadFrame(c.r)
	if err != nil {
		c.t.Fatalf("client recv: %v", err)
	}
	if f.Header.Masked {
		c.t.Fatal("server frame is masked")
	}
	return f
}

// recvClose reads the close frame, checks nothing follows it, and returns
// its code and reason.
func (c *client) recvClose() (ws.StatusCode, string) {
	c.t.Helper()
	f := c.recv()
	if f.Header.OpCode != ws.OpClose {
		c.t.Fatalf("got opcode %v, want close", f.Header.OpCode)
	}
	c.expectEOF()
	if len(f.Payload) == 0 {
		return 0, ""
	}
	code, reason := ws.ParseCloseFrameData(f.Payload)
	return code, reason
}

// expectEOF checks the server closed the socket.
func (c *client) expectEOF() {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(hangTimeout))
	var b [1]byte
	n, err := c.r.Read(b[:])
	if n != 0 || err == nil {
		c.t.Fatalf("read after close: n=%d err=%v, want end of stream", n, err)
	}
	if errors.Is(err, io.EOF) || isReset(err) {
		return
	}
	c.t.Fatalf("read after close: %v, want end of stream", err)
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// readResult runs ReadMessage in the background so a test can fail
// instead of hanging when the server blocks.
type readResult struct {
	payload []byte
	binary  bool
	err     error
}

func readAsync(c *Conn) <-chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		p, b, err := c.ReadMessage()
		ch <- readResult{append([]byte(nil), p...), b, err}
	}()
	return ch
}

func waitRead(t testing.TB, ch <-chan readResult) readResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(hangTimeout):
		t.Fatal("ReadMessage is still blocked")
		return readResult{}
	}
}

func mustRead(t testing.TB, c *Conn) ([]byte, bool) {
	t.Helper()
	r := waitRead(t, readAsync(c))
	if r.err != nil {
		t.Fatalf("ReadMessage: %v", r.err)
	}
	return r.payload, r.binary
}

// checkNoLeak fails if goroutines started during the test outlive it.
func checkNoLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(hangTimeout)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// connectDeflate dials with offer as the only Sec-WebSocket-Extensions line
// and returns both ends and the values of the answer's
// Sec-WebSocket-Extensions.
func (s *testServer) connectDeflate(t testing.TB, offer string) (*client, *Conn, []string) {
	t.Helper()
	nc, resp, br := rawDial(t, s, "/connection/websocket", "Sec-WebSocket-Extensions: "+offer+"\r\n")
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	u := s.accept(t)
	if u.err != nil {
		t.Fatalf("%s: %v", u.via, u.err)
	}
	t.Cleanup(func() { _ = u.conn.Close(1000, "") })
	return &client{t: t, conn: nc, r: br}, u.conn, resp.Header.Values("Sec-WebSocket-Extensions")
}

// stdDeflate compresses p as a client does for permessage-deflate, with
// Go's standard compress/flate (not the library the server uses): one sync
// flush, whose empty stored block is cut off (RFC 7692, section 7.2.1).
func stdDeflate(t testing.TB, p []byte, level int) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := stdflate.NewWriter(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(p)
	_ = w.Flush()
	out, ok := bytes.CutSuffix(b.Bytes(), []byte{0x00, 0x00, 0xff, 0xff})
	if !ok {
		t.Fatal("a sync flush does not end in 00 00 ff ff")
	}
	return out
}

// stdInflate decompresses a message of permessage-deflate with Go's
// standard compress/flate: the sender's stripped 00 00 ff ff goes back
// (RFC 7692, section 7.2.2), then an empty final block so that the reader
// sees the stream end.
func stdInflate(p []byte) ([]byte, error) {
	msg := bytes.Join([][]byte{p, {0x00, 0x00, 0xff, 0xff}, {0x01, 0x00, 0x00, 0xff, 0xff}}, nil)
	return io.ReadAll(stdflate.NewReader(bytes.NewReader(msg)))
}
