package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/unigrpc/unistreampb"
	"github.com/gyrehq/gyre/token"
)

// The probes below never time the server: they wait for it to close a
// connection, up to probeGuard, which is far longer than any timeout they
// configure; a connection the server would hold forever fails them.
const probeGuard = 15 * time.Second

// outlive is how long the stream tests keep a stream idle: longer than
// every timeout of timeoutConfig.
const outlive = 2500 * time.Millisecond

// timeoutConfig is testConfig on a free port with every http_server
// timeout at one second.
func timeoutConfig() *config.Config {
	c := testConfig()
	c.HTTPServer.Address = "127.0.0.1"
	c.HTTPServer.Port = 0
	c.HTTPServer.ReadHeaderTimeout = time.Second
	c.HTTPServer.ReadTimeout = time.Second
	c.HTTPServer.WriteTimeout = time.Second
	c.HTTPServer.IdleTimeout = time.Second
	return c
}

func dialTCP(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

// waitClosed reads and drops what the server sends on nc until it closes
// the connection; the test fails if it is still open after probeGuard.
func waitClosed(t *testing.T, nc net.Conn, what string) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(probeGuard))
	_, err := io.Copy(io.Discard, nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the server still holds the connection after %v", what, probeGuard)
	}
}

// drip writes b to nc one byte at a time, 100 ms apart, until it is all
// written, a write fails (the server closed) or the test ends.
func drip(t *testing.T, nc net.Conn, b []byte) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	t.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := range b {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := nc.Write(b[i : i+1]); err != nil {
				return
			}
		}
	}()
}

// probes runs the slow-client probes against one HTTP port: a connection
// that never speaks, request headers dripped (after a whole request line
// for the WebSocket path, which the client port's front door looks at), a
// body dripped after whole headers to each of bodyPaths, and a kept-alive
// connection left idle after idleReq, a request answered 200.
func probes(t *testing.T, addr, idleReq string, bodyPaths []string) {
	t.Run("silent", func(t *testing.T) {
		t.Parallel()
		waitClosed(t, dialTCP(t, addr), "a connection that sends nothing")
	})
	t.Run("header drip", func(t *testing.T) {
		t.Parallel()
		nc := dialTCP(t, addr)
		if _, err := io.WriteString(nc, "GET /connection/websocket HTTP/1.1\r\nHost: x\r\n"); err != nil {
			t.Fatal(err)
		}
		// 64 KiB of header at 10 bytes a second: never whole in time.
		drip(t, nc, []byte("X-Pad: "+strings.Repeat("a", 64<<10)))
		waitClosed(t, nc, "headers dripped")
	})
	for _, p := range bodyPaths {
		t.Run("body drip "+p, func(t *testing.T) {
			t.Parallel()
			nc := dialTCP(t, addr)
			const size = 4096
			head := "POST " + p + " HTTP/1.1\r\nHost: x\r\nX-API-Key: " + testKey +
				"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(size) + "\r\n\r\n"
			if _, err := io.WriteString(nc, head); err != nil {
				t.Fatal(err)
			}
			drip(t, nc, []byte(strings.Repeat(" ", size)))
			waitClosed(t, nc, "a body dripped to "+p)
		})
	}
	t.Run("idle keep-alive", func(t *testing.T) {
		t.Parallel()
		nc := dialTCP(t, addr)
		if _, err := io.WriteString(nc, idleReq); err != nil {
			t.Fatal(err)
		}
		_ = nc.SetReadDeadline(time.Now().Add(probeGuard))
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("%q: %d, close %v; want 200 kept alive", idleReq, resp.StatusCode, resp.Close)
		}
		waitClosed(t, nc, "an idle kept-alive connection")
	})
}

const (
	healthReq  = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
	apiInfoReq = "POST /api/info HTTP/1.1\r\nHost: x\r\nX-API-Key: " + testKey + "\r\nContent-Length: 2\r\n\r\n{}"
)

// TestHTTPTimeouts: on the client port (where the WebSocket path is taken
// before net/http) and on the internal port (net/http alone), the server
// closes a connection that sends nothing, one that drips its headers or
// its body, a streaming transport's connect body included, and a
// kept-alive one left idle.
func TestHTTPTimeouts(t *testing.T) {
	t.Parallel()
	c := timeoutConfig()
	c.Health.Enabled = true
	c.HTTPStream.Enabled = true
	c.UniHTTPStream.Enabled = true
	c.HTTPServer.InternalPort = freePort(t)
	c.HTTPAPI.External = true // the API on both ports: the client port has it too
	s := start(t, c)
	if s.ws == nil {
		t.Fatal("the WebSocket handler is off; the client port's front door is not tested")
	}
	t.Run("client port", func(t *testing.T) {
		probes(t, s.Addr().String(), apiInfoReq, []string{
			"/api/publish", "/connection/http_stream", "/connection/uni_http_stream", "/emulation",
		})
	})
	t.Run("internal port", func(t *testing.T) {
		probes(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(c.HTTPServer.InternalPort)), healthReq, nil)
	})
}

// TestHTTPTimeoutsNoFrontDoor runs the probes on a client port without the
// WebSocket front door (user_id_http_header sends handshakes through
// net/http).
func TestHTTPTimeoutsNoFrontDoor(t *testing.T) {
	t.Parallel()
	c := timeoutConfig()
	c.Health.Enabled = true
	c.Client.UserIDHTTPHeader = "X-User-Id"
	probes(t, start(t, c).Addr().String(), healthReq, []string{"/api/publish"})
}

// streamToken is a connection token of user with server-side
// subscriptions to channels.
func streamToken(t *testing.T, user string, channels ...string) string {
	t.Helper()
	tok, err := token.SignHMAC("HS256", []byte(testSecret), map[string]any{
		"sub": user, "exp": time.Now().Add(time.Hour).Unix(), "channels": channels,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// lineReader reads a stream until a line holds a string.
type lineReader struct {
	t     *testing.T
	r     *bufio.Reader
	proto int // the response's HTTP major version
}

func (l lineReader) waitFor(what string) {
	l.t.Helper()
	for {
		line, err := l.r.ReadString('\n')
		if strings.Contains(line, what) {
			return
		}
		if err != nil {
			l.t.Fatalf("stream ended before %q: %v", what, err)
		}
	}
}

// openHTTPStream sends req and returns its streaming response's reader.
func openHTTPStream(t *testing.T, client *http.Client, req *http.Request) lineReader {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), probeGuard)
	t.Cleanup(cancel)
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	return lineReader{t: t, r: bufio.NewReader(resp.Body), proto: resp.ProtoMajor}
}

func newRequest(t *testing.T, method, u, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// bidiConnect is the connect and subscribe commands of a bidirectional
// stream, one per line.
func bidiConnect(t *testing.T, channel string) string {
	return `{"id":1,"connect":{"token":"` + streamToken(t, "sam") + `"}}` + "\n" +
		`{"id":2,"subscribe":{"channel":"` + channel + `"}}`
}

// TestStreamsOutliveHTTPTimeouts: every long-lived stream stays open past
// the server's read, write and idle timeouts and still delivers a
// publication: WebSocket (taken by the front door or through net/http),
// uni_websocket, HTTP-stream, SSE, uni_http_stream, uni_sse and the admin
// live tail.
func TestStreamsOutliveHTTPTimeouts(t *testing.T) {
	t.Parallel()
	c := timeoutConfig()
	c.HTTPStream.Enabled = true
	c.SSE.Enabled = true
	c.UniHTTPStream.Enabled = true
	c.UniSSE.Enabled = true
	c.UniWebSocket.Enabled = true
	c.Admin.Enabled = true
	c.Admin.Insecure = true
	s := start(t, c)
	base := "http://" + s.Addr().String()

	noFrontDoor := timeoutConfig()
	noFrontDoor.Client.UserIDHTTPHeader = "X-User-Id"
	s2 := start(t, noFrontDoor)

	client := &http.Client{}
	opens := []struct {
		name string
		// open starts a stream that receives channel's publications and
		// returns a function that waits for one holding a string.
		open func(t *testing.T, channel string) func(what string)
		node *Server
	}{
		{"websocket", func(t *testing.T, ch string) func(string) { return wsStream(t, base, ch) }, s},
		{"websocket through net/http", func(t *testing.T, ch string) func(string) {
			return wsStream(t, "http://"+s2.Addr().String(), ch)
		}, s2},
		{"uni_websocket", func(t *testing.T, ch string) func(string) {
			u := "ws://" + s.Addr().String() + "/connection/uni_websocket?cf_connect=" +
				url.QueryEscape(`{"token":"`+streamToken(t, "sam", ch)+`"}`)
			return wsFrames(t, u)
		}, s},
		{"http_stream", func(t *testing.T, ch string) func(string) {
			return openHTTPStream(t, client, newRequest(t, "POST", base+"/connection/http_stream", bidiConnect(t, ch))).waitFor
		}, s},
		{"sse", func(t *testing.T, ch string) func(string) {
			u := base + "/connection/sse?cf_connect=" + url.QueryEscape(bidiConnect(t, ch))
			return openHTTPStream(t, client, newRequest(t, "GET", u, "")).waitFor
		}, s},
		{"uni_http_stream", func(t *testing.T, ch string) func(string) {
			body := `{"token":"` + streamToken(t, "sam", ch) + `"}`
			return openHTTPStream(t, client, newRequest(t, "POST", base+"/connection/uni_http_stream", body)).waitFor
		}, s},
		{"uni_sse", func(t *testing.T, ch string) func(string) {
			u := base + "/connection/uni_sse?cf_connect=" + url.QueryEscape(`{"token":"`+streamToken(t, "sam", ch)+`"}`)
			return openHTTPStream(t, client, newRequest(t, "GET", u, "")).waitFor
		}, s},
		{"admin tail", func(t *testing.T, ch string) func(string) {
			l := openHTTPStream(t, client, newRequest(t, "GET", base+"/admin/tail?channel="+ch, ""))
			l.waitFor(": tail of")
			return l.waitFor
		}, s},
	}
	for i, o := range opens {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			ch := "outlive" + strconv.Itoa(i)
			wait := o.open(t, ch)
			publishAfter(t, o.node, ch, outlive)
			wait(`"outlive":` + strconv.Itoa(i))
		})
	}
}

// publishAfter waits d, then publishes {"outlive":<n>} into channel, n
// being its number: the subscriber is in place by then.
func publishAfter(t *testing.T, s *Server, channel string, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	n := strings.TrimPrefix(channel, "outlive")
	if _, err := s.Node().Publish(channel, []byte(`{"outlive":`+n+`}`)); err != nil {
		t.Fatal(err)
	}
}

// wsStream connects a bidirectional WebSocket client subscribed to
// channel.
func wsStream(t *testing.T, base, channel string) func(string) {
	t.Helper()
	c := dialConnect(t, base, "sam")
	if code := c.subscribe(channel); code != 0 {
		t.Fatalf("subscribe: error %d", code)
	}
	return func(what string) { readFramesFor(t, c.conn, what) }
}

// wsFrames dials a WebSocket URL and returns a function that waits for a
// frame holding a string.
func wsFrames(t *testing.T, u string) func(string) {
	t.Helper()
	conn, _, _, err := ws.Dialer{Timeout: 5 * time.Second}.Dial(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return func(what string) { readFramesFor(t, conn, what) }
}

func readFramesFor(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(probeGuard))
	for {
		frame, _, err := wsutil.ReadServerData(conn)
		if err != nil {
			t.Fatalf("connection ended before %q: %v", what, err)
		}
		if strings.Contains(string(frame), what) {
			return
		}
	}
}

// TestStreamsOutliveHTTPTimeoutsHTTP2: over TLS the streams speak HTTP/2,
// where a write deadline resets the stream when it fires, writing or not;
// an SSE stream idle past the timeouts still delivers.
func TestStreamsOutliveHTTPTimeoutsHTTP2(t *testing.T) {
	t.Parallel()
	ca := newTestCert(t, nil)
	s, external, _ := startTLS(t, ca, func(c *config.Config) {
		withTimeouts(c)
		c.SSE.Enabled = true
		c.UniHTTPStream.Enabled = true
	})
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.pool()},
		ForceAttemptHTTP2: true,
	}}
	for i, path := range []string{"sse", "uni_http_stream"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			ch := "outlive" + strconv.Itoa(i)
			var req *http.Request
			if path == "sse" {
				req = newRequest(t, "GET", "https://"+external+"/connection/sse?cf_connect="+url.QueryEscape(bidiConnect(t, ch)), "")
			} else {
				req = newRequest(t, "POST", "https://"+external+"/connection/uni_http_stream", `{"token":"`+streamToken(t, "sam", ch)+`"}`)
			}
			l := openHTTPStream(t, client, req)
			if l.proto != 2 {
				t.Fatalf("the stream speaks HTTP/%d, want 2", l.proto)
			}
			l.waitFor(`"connect"`)
			publishAfter(t, s, ch, outlive)
			l.waitFor(`"outlive":` + strconv.Itoa(i))
		})
	}
}

// withTimeouts sets c's http_server timeouts to timeoutConfig's.
func withTimeouts(c *config.Config) *config.Config {
	t := timeoutConfig().HTTPServer
	c.HTTPServer.ReadHeaderTimeout = t.ReadHeaderTimeout
	c.HTTPServer.ReadTimeout = t.ReadTimeout
	c.HTTPServer.WriteTimeout = t.WriteTimeout
	c.HTTPServer.IdleTimeout = t.IdleTimeout
	return c
}

// http2Preface opens an HTTP/2 connection: the client preface and an
// empty SETTINGS frame.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// TestGRPCTimeouts: the gRPC API and uni_grpc close a connection that
// never completes its HTTP/2 handshake (http_server.read_header_timeout)
// and one that completes it and then stays without a call
// (http_server.idle_timeout).
func TestGRPCTimeouts(t *testing.T) {
	t.Parallel()
	c := withTimeouts(grpcConfig(t))
	c.UniGRPC = config.UniGRPC{Enabled: true, Address: "127.0.0.1", Port: freePort(t)}
	s := start(t, c)
	for name, addr := range map[string]string{
		"grpc_api": net.JoinHostPort("127.0.0.1", strconv.Itoa(c.GRPCAPI.Port)),
		"uni_grpc": s.UniGRPCAddr().String(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("silent", func(t *testing.T) {
				t.Parallel()
				waitClosed(t, dialTCP(t, addr), "a connection that sends nothing")
			})
			t.Run("idle", func(t *testing.T) {
				t.Parallel()
				nc := dialTCP(t, addr)
				if _, err := io.WriteString(nc, http2Preface); err != nil {
					t.Fatal(err)
				}
				waitClosed(t, nc, "an HTTP/2 connection without a call")
			})
		})
	}
	t.Run("uni_grpc stream", func(t *testing.T) {
		t.Parallel()
		uniStreamOutlives(t, s)
	})
}

// uniStreamOutlives: a uni_grpc consumer's stream lasts past the idle
// timeout, which counts only connections without a stream.
func uniStreamOutlives(t *testing.T, s *Server) {
	cc, err := grpc.NewClient(s.UniGRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), probeGuard)
	defer cancel()
	stream, err := unistreampb.NewCentrifugoUniStreamClient(cc).Consume(ctx, &unistreampb.ConnectRequest{
		Token: streamToken(t, "uma", "outlive9"),
	})
	if err != nil {
		t.Fatal(err)
	}
	publishAfter(t, s, "outlive9", outlive)
	for {
		p, err := stream.Recv()
		if err != nil {
			t.Fatalf("stream ended before the publication: %v", err)
		}
		if p.Pub != nil && string(p.Pub.Data) == `{"outlive":9}` {
			return
		}
	}
}
