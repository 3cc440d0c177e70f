package loadtest

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/httphead"
	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// wsServer is a WebSocket server on a loopback port that answers every
// handshake with a Sec-WebSocket-Extensions header of its choice and then
// runs a script on the connection. It records what the clients offered.
type wsServer struct {
	url    string
	mu     sync.Mutex
	offers []string
	done   chan error // one per connection: the script's result
}

// startWSServer serves handshakes answered with answer ("" for no
// extension header); script writes what the server sends after the
// handshake.
func startWSServer(t *testing.T, answer string, script func(w *bufio.Writer) error) *wsServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &wsServer{url: "ws://" + ln.Addr().String() + "/connection/websocket", done: make(chan error, 16)}
	up := ws.Upgrader{
		ExtensionCustom: func(offer []byte, accepted []httphead.Option) ([]httphead.Option, bool) {
			s.mu.Lock()
			s.offers = append(s.offers, string(offer))
			s.mu.Unlock()
			return accepted, true
		},
	}
	if answer != "" {
		up.Header = ws.HandshakeHeaderString("Sec-WebSocket-Extensions: " + answer + "\r\n")
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				if _, err := up.Upgrade(nc); err != nil {
					s.done <- err
					return
				}
				w := bufio.NewWriter(nc)
				err := script(w)
				if err == nil {
					err = w.Flush()
				}
				s.done <- err
				// The client reads to the close frame; what it sends back
				// (pongs) is drained until it hangs up.
				_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, _ = io.Copy(io.Discard, nc)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return s
}

func (s *wsServer) offered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.offers...)
}

// idleScript sends nothing.
func idleScript(*bufio.Writer) error { return nil }

// TestNegotiation: the offer is what browsers send; an answer the client
// can honour is taken, with or without context takeover; one it cannot is
// a failed connection that says why; no answer is no compression.
func TestNegotiation(t *testing.T) {
	const gyre = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
	tests := []struct {
		name     string
		offer    bool
		answer   string
		want     bool // negotiated
		takeover bool
		window   int
		err      string
	}{
		{"declined", true, "", false, false, 0, ""},
		{"gyre and centrifugo", true, gyre, true, false, 1 << 15, ""},
		{"bare", true, "permessage-deflate", true, true, 1 << 15, ""},
		{"server window", true, "permessage-deflate; server_max_window_bits=10", true, true, 1 << 10, ""},
		{"quoted server window", true, `permessage-deflate; server_max_window_bits="9"`, true, true, 1 << 9, ""},
		{"client window", true, "permessage-deflate; client_max_window_bits=12; server_no_context_takeover", true, false, 1 << 15, ""},
		{"every parameter", true, "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=15; client_max_window_bits=8", true, false, 1 << 15, ""},
		{"client window without value", true, "permessage-deflate; client_max_window_bits", false, false, 0, "client_max_window_bits"},
		{"server window too small", true, "permessage-deflate; server_max_window_bits=7", false, false, 0, "server_max_window_bits"},
		{"server window too large", true, "permessage-deflate; server_max_window_bits=16", false, false, 0, "want 8 to 15"},
		{"server window without value", true, "permessage-deflate; server_max_window_bits", false, false, 0, "server_max_window_bits"},
		{"server window not a number", true, "permessage-deflate; server_max_window_bits=1a", false, false, 0, "server_max_window_bits"},
		{"duplicate", true, "permessage-deflate; server_no_context_takeover; server_no_context_takeover", false, false, 0, "twice"},
		{"flag with a value", true, "permessage-deflate; client_no_context_takeover=1", false, false, 0, "takes no value"},
		{"unknown parameter", true, "permessage-deflate; mux=1", false, false, 0, `parameter "mux" is unknown`},
		{"accepted twice", true, "permessage-deflate, permessage-deflate", false, false, 0, "accepted 2 times"},
		{"not offered", true, "x-webkit-deflate-frame", false, false, 0, "not offered"},
		{"answered without an offer", false, gyre, false, false, 0, "not offered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startWSServer(t, tt.answer, idleScript)
			c := &conn{typ: protocol.TypeJSON}
			err := c.dial(context.Background(), srv.url, newDialer(nil), tt.offer)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, errExtensionAnswer) {
					t.Fatalf("err %v, want errExtensionAnswer with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.nc.Close()
			z := c.rs.z
			if (z != nil) != tt.want {
				t.Fatalf("negotiated %v, want %v", z != nil, tt.want)
			}
			if z != nil && (z.takeover != tt.takeover || z.windowSize != tt.window || z.limit != maxMessage || (z.shared != nil) == tt.takeover) {
				t.Fatalf("takeover %v, window %d, limit %d, shared %v; want %v, %d, %d", z.takeover, z.windowSize, z.limit, z.shared != nil, tt.takeover, tt.window, maxMessage)
			}
			wantOffer := []string{"permessage-deflate;client_max_window_bits"}
			if !tt.offer {
				wantOffer = nil
			}
			if got := srv.offered(); strings.Join(got, "|") != strings.Join(wantOffer, "|") {
				t.Fatalf("offered %q, want %q", got, wantOffer)
			}
		})
	}
}

// serverMessage is a message the test server sends and the client must
// get back: compressed or not, fragmented or not.
type serverMessage struct {
	payload    []byte
	compressed bool
	fragments  int // 0 or 1: one frame; -1: a frame per byte
	// pingBetween puts a ping between the fragments.
	pingBetween bool
}

// deflater compresses messages as a permessage-deflate server does, with
// the standard library (the client inflates with another implementation):
// with context takeover one stream goes on from message to message,
// without it each message starts afresh.
type deflater struct {
	takeover bool
	buf      bytes.Buffer
	fw       *flate.Writer
}

func (d *deflater) compress(t *testing.T, msg []byte) []byte {
	t.Helper()
	if d.fw == nil {
		var err error
		if d.fw, err = flate.NewWriter(&d.buf, flate.BestSpeed); err != nil {
			t.Fatal(err)
		}
	} else if !d.takeover {
		d.fw.Reset(&d.buf)
	}
	d.buf.Reset()
	if _, err := d.fw.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := d.fw.Flush(); err != nil {
		t.Fatal(err)
	}
	out, ok := bytes.CutSuffix(d.buf.Bytes(), []byte{0, 0, 0xff, 0xff})
	if !ok {
		t.Fatal("no sync flush at the end")
	}
	return bytes.Clone(out)
}

// frames turns the messages into the bytes a server writes: compressed
// payloads with RSV1 on the first frame, split into fragments as asked,
// and a close frame with reason "done" at the end when close is set.
func (d *deflater) frames(t *testing.T, msgs []serverMessage, close bool) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, m := range msgs {
		payload := m.payload
		if m.compressed {
			payload = d.compress(t, payload)
		}
		n := m.fragments
		if n < 0 {
			n = len(payload)
		}
		n = max(n, 1)
		for i := range n {
			part := payload[len(payload)*i/n : len(payload)*(i+1)/n]
			op := ws.OpContinuation
			if i == 0 {
				op = ws.OpText
			}
			h := ws.Header{Fin: i == n-1, OpCode: op, Length: int64(len(part)), Rsv: ws.Rsv(i == 0 && m.compressed, false, false)}
			if err := ws.WriteHeader(&out, h); err != nil {
				t.Fatal(err)
			}
			out.Write(part)
			if m.pingBetween && i < n-1 {
				if err := ws.WriteFrame(&out, ws.NewPingFrame([]byte("hi"))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if close {
		if err := ws.WriteFrame(&out, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, "done"))); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// publications makes JSON pushes of publications from to from+n-1 of
// --payload json documents of size bytes, as one message each or joined
// into messages of perMessage.
func publications(t *testing.T, from, n, perMessage, size int) [][]byte {
	t.Helper()
	maker := newPayloadMaker(PayloadJSON, size, 7)
	var out [][]byte
	var batch [][]byte
	for i := range n {
		seq := uint64(from + i)
		data := maker.append(nil, 0, seq, time.Now().UnixNano())
		r := &protocol.Reply{Push: &protocol.Push{Channel: "bench-fanout", Pub: &protocol.Publication{Data: data, Offset: seq}}}
		m, err := protocol.AppendReply(nil, protocol.TypeJSON, r)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, m)
		if len(batch) == perMessage {
			out = append(out, protocol.JoinFrame(nil, protocol.TypeJSON, batch))
			batch = nil
		}
	}
	if len(batch) > 0 {
		out = append(out, protocol.JoinFrame(nil, protocol.TypeJSON, batch))
	}
	return out
}

// TestCompressedMessages runs a connection against a server that
// compresses, with and without context takeover: every publication must
// arrive whole, whatever the framing, and the bytes must add up exactly.
func TestCompressedMessages(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer string
	}{
		{"no context takeover", "permessage-deflate; server_no_context_takeover; client_no_context_takeover"},
		{"context takeover", "permessage-deflate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// 40 single publications, then 3 messages of 30 (over 32 KiB
			// each, past the window), with some sent plain, some in
			// fragments, one fragment per byte at the extreme.
			single := publications(t, 1, 40, 1, 1024)
			joined := publications(t, 41, 90, 30, 1200)
			var msgs []serverMessage
			for i, p := range single {
				m := serverMessage{payload: p, compressed: i%5 != 4}
				switch i % 7 {
				case 1:
					m.fragments = 3
				case 2:
					m.fragments, m.pingBetween = 2, true
				case 3:
					m.fragments = -1
				}
				msgs = append(msgs, m)
			}
			msgs = append(msgs, serverMessage{payload: nil, compressed: true}) // an empty message
			for i, p := range joined {
				msgs = append(msgs, serverMessage{payload: p, compressed: true, fragments: 1 + i*2})
			}
			d := &deflater{takeover: tt.answer == "permessage-deflate"}
			wire := d.frames(t, msgs, true)
			srv := startWSServer(t, tt.answer, func(w *bufio.Writer) error {
				_, err := w.Write(wire)
				return err
			})
			c := &conn{p: &pool{}, typ: protocol.TypeJSON, last: make([]uint64, 1), got: make([]uint64, 1)}
			if err := c.dial(context.Background(), srv.url, newDialer(nil), true); err != nil {
				t.Fatal(err)
			}
			defer c.nc.Close()
			err := c.run()
			if !errors.Is(err, errServerClosed) || !strings.Contains(err.Error(), "done") {
				t.Fatalf("run: %v, want the server's close", err)
			}
			if err := <-srv.done; err != nil {
				t.Fatal(err)
			}
			const want = 40 + 90
			if c.received.Load() != want || c.got[0] != want || c.last[0] != want || c.outOfOrder.Load() != 0 {
				t.Fatalf("received %d (got %d, last %d, out of order %d), want %d in order",
					c.received.Load(), c.got[0], c.last[0], c.outOfOrder.Load(), want)
			}
			var payload, compressed int64
			for _, m := range msgs {
				payload += int64(len(m.payload))
				if m.compressed {
					compressed++
				}
			}
			got := c.rs.traffic
			if got.Wire != int64(len(wire)) || got.Payload != payload ||
				got.Messages != int64(len(msgs)) || got.Compressed != compressed {
				t.Fatalf("traffic %+v, want wire %d, payload %d, %d messages, %d compressed",
					got, len(wire), payload, len(msgs), compressed)
			}
			if got.Wire*2 > got.Payload {
				t.Fatalf("wire %d for %d of payload: the JSON feed should compress more than twice", got.Wire, got.Payload)
			}
		})
	}
}

// TestInflateFromGyre reads what Gyre's own WebSocket transport sends
// with compression: frames made once with Compression.AppendFrame (short
// ones plain) and written back to back, and a frame compressed per call.
func TestInflateFromGyre(t *testing.T) {
	z := &websocket.Compression{Level: 1, MinSize: 256}
	msgs := publications(t, 1, 60, 1, 1024)
	msgs = append(msgs, publications(t, 61, 5, 1, 64)...)   // under MinSize: plain
	msgs = append(msgs, publications(t, 66, 1, 1, 2048)...) // compressed by WriteFrame
	var frames []string
	var wire, payload, compressed int64
	for _, m := range msgs {
		f := z.AppendFrame(nil, false, m)
		frames = append(frames, string(f))
		wire += int64(len(f))
		payload += int64(len(m))
		if f[0]&0x40 != 0 {
			compressed++
		}
	}
	last := msgs[len(msgs)-1]
	frames = frames[:len(frames)-1]
	served := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := websocket.Upgrade(w, r, websocket.Options{Compression: z})
		if err != nil {
			served <- err
			return
		}
		if conn.Compression() != z {
			served <- errors.New("compression not negotiated")
			_ = conn.Close(1011, "")
			return
		}
		err = conn.WriteFrames(frames)
		if err == nil {
			err = conn.WriteFrame(last)
		}
		served <- errors.Join(err, conn.Close(3000, "done"))
	}))
	defer srv.Close()
	c := &conn{p: &pool{}, typ: protocol.TypeJSON, last: make([]uint64, 1), got: make([]uint64, 1)}
	if err := c.dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http")+"/", newDialer(nil), true); err != nil {
		t.Fatal(err)
	}
	defer c.nc.Close()
	if c.rs.z == nil || c.rs.z.takeover {
		t.Fatalf("negotiated %+v, want compression without context takeover", c.rs.z)
	}
	err := c.run()
	if !errors.Is(err, errServerClosed) {
		t.Fatalf("run: %v, want the server's close", err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if got := c.received.Load(); got != int64(len(msgs)) {
		t.Fatalf("received %d publications, want %d (errors %v)", got, len(msgs), c.p.errs.list())
	}
	// The last frame, compressed by WriteFrame, is what AppendFrame made
	// of it (deflate is deterministic), and the close frame follows.
	got := c.rs.traffic
	wantWire := wire + int64(2+2+len("done"))
	if got.Messages != int64(len(msgs)) || got.Compressed != compressed || got.Payload != payload || got.Wire != wantWire {
		t.Fatalf("traffic %+v, want %d messages, %d compressed, payload %d, wire %d",
			got, len(msgs), compressed, payload, wantWire)
	}
	if compressed != 61 {
		t.Fatalf("%d frames compressed, want the 61 over MinSize", compressed)
	}
}

// TestInflateErrors: what a client must refuse in compressed traffic.
func TestInflateErrors(t *testing.T) {
	var big bytes.Buffer
	fw, _ := flate.NewWriter(&big, flate.BestSpeed)
	_, _ = fw.Write(make([]byte, 1<<20))
	_ = fw.Flush()
	bomb, _ := bytes.CutSuffix(big.Bytes(), []byte{0, 0, 0xff, 0xff})
	compressed := func(fin bool, op ws.OpCode, p []byte) ws.Frame {
		f := ws.NewFrame(op, fin, p)
		f.Header.Rsv = ws.Rsv(true, false, false)
		return f
	}
	ok := (&deflater{}).compress(t, []byte("hello"))
	tests := []struct {
		name       string
		negotiated bool
		limit      int
		frames     []ws.Frame
		want       string
	}{
		{"RSV1 without compression", false, 0, []ws.Frame{compressed(true, ws.OpText, ok)}, "RSV1"},
		{"RSV1 on a continuation", true, 0, []ws.Frame{compressed(false, ws.OpText, ok[:2]), compressed(true, ws.OpContinuation, ok[2:])}, "continuation"},
		{"RSV1 on a ping", true, 0, []ws.Frame{compressed(true, ws.OpPing, nil)}, "control"},
		{"RSV2", true, 0, []ws.Frame{func() ws.Frame {
			f := ws.NewTextFrame(ok)
			f.Header.Rsv = ws.Rsv(false, true, false)
			return f
		}()}, "RSV2"},
		{"not deflate", true, 0, []ws.Frame{compressed(true, ws.OpText, []byte{0xff, 0xff, 0xff, 0xff})}, "inflate"},
		{"bomb", true, 64 << 10, []ws.Frame{compressed(true, ws.OpText, bomb)}, "inflates past 65536 bytes"},
		{"one past the limit", true, 4, []ws.Frame{compressed(true, ws.OpText, ok)}, "inflates past 4 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := &readState{}
			if tt.negotiated {
				rs.z = &inflateState{windowSize: 1 << 15, limit: maxMessage}
				if tt.limit > 0 {
					rs.z.limit = tt.limit
				}
			}
			_, _, err := readMessage(serverFrames(t, tt.frames...), func(ws.OpCode, []byte) error { return nil }, rs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one with %q", err, tt.want)
			}
		})
	}
	// At the limit exactly, the message is whole.
	rs := &readState{z: &inflateState{windowSize: 1 << 15, limit: len("hello")}}
	_, bp, err := readMessage(serverFrames(t, compressed(true, ws.OpText, ok)), nil, rs)
	if err != nil || string(*bp) != "hello" {
		t.Fatalf("at the limit: %v", err)
	}
	putBuf(bp)
}

func TestRemember(t *testing.T) {
	z := &inflateState{takeover: true, windowSize: 8}
	for _, step := range []struct{ msg, want string }{
		{"", ""},
		{"abc", "abc"},
		{"defgh", "abcdefgh"},
		{"ij", "cdefghij"},
		{"0123456789", "23456789"},
		{"x", "3456789x"},
	} {
		z.remember([]byte(step.msg))
		if string(z.window) != step.want || cap(z.window) != 8 {
			t.Fatalf("after %q: window %q (cap %d), want %q", step.msg, z.window, cap(z.window), step.want)
		}
	}
}

// TestInflatedCache: connections without context takeover share what
// they inflated, and only for the same compressed bytes.
func TestInflatedCache(t *testing.T) {
	cache := &inflatedCache{}
	a := &inflateState{windowSize: 1 << 15, limit: maxMessage, shared: cache}
	b := &inflateState{windowSize: 1 << 15, limit: maxMessage, shared: cache}
	msgs := publications(t, 1, 600, 1, 300)
	d := &deflater{}
	read := func(z *inflateState, compressed []byte) []byte {
		t.Helper()
		in := bytes.Clone(compressed)
		out, err := z.inflate(&in)
		if err != nil {
			t.Fatal(err)
		}
		defer putBuf(out)
		return bytes.Clone(*out)
	}
	// More messages than slots, each read by both: evicted or not, each
	// comes out whole.
	for i, m := range msgs {
		c := d.compress(t, m)
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		if got := read(first, c); !bytes.Equal(got, m) {
			t.Fatalf("message %d: inflated content differs", i)
		}
		if got := read(second, c); !bytes.Equal(got, m) {
			t.Fatalf("message %d: cached content differs", i)
		}
	}
	// The second read took the cache's content: a changed entry shows.
	c := d.compress(t, []byte(`{"x":"cached"}`))
	read(a, c)
	_, slot, _ := cache.lookup(c)
	e := *slot.Load()
	e.content = []byte("from the cache")
	slot.Store(&e)
	if got := read(b, c); string(got) != "from the cache" {
		t.Fatalf("got %q, want the cached content", got)
	}
	// Other bytes are not taken for it, nor is content over the limit.
	if got := read(b, d.compress(t, []byte(`{"x":"cached!"}`))); string(got) != `{"x":"cached!"}` {
		t.Fatalf("got %q", got)
	}
	small := &inflateState{windowSize: 1 << 15, limit: 4, shared: cache}
	in := bytes.Clone(c)
	if _, err := small.inflate(&in); err == nil || !strings.Contains(err.Error(), "inflates past 4") {
		t.Fatalf("over the limit from the cache: %v", err)
	}
}

// TestInflateAllocs: once the pools are warm, a compressed message costs
// no allocation: inflated with or without context takeover, or taken
// from the cache.
func TestInflateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	msg := publications(t, 1, 1, 1, 1024)[0]
	for _, tt := range []struct {
		name     string
		takeover bool
		shared   *inflatedCache
	}{
		{"no context takeover", false, nil},
		{"context takeover", true, nil},
		{"cached", false, &inflatedCache{}},
	} {
		d := &deflater{takeover: tt.takeover}
		var stream bytes.Buffer
		for range 200 {
			stream.Write(d.frames(t, []serverMessage{{payload: msg, compressed: true}}, false))
		}
		br := bufio.NewReader(&stream)
		rs := &readState{z: &inflateState{takeover: tt.takeover, windowSize: 1 << 15, limit: maxMessage, shared: tt.shared}}
		control := func(ws.OpCode, []byte) error { return nil }
		read := func() {
			_, bp, err := readMessage(br, control, rs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(*bp, msg) {
				t.Fatal("inflated content differs")
			}
			putBuf(bp)
		}
		read() // the window or the cache entry is made once
		read()
		if n := testing.AllocsPerRun(50, read); n != 0 {
			t.Errorf("%s: %.1f allocations per message", tt.name, n)
		}
	}
}

// startCompressingServer is a minimal server of the Centrifugo protocol
// on Gyre's WebSocket transport with compression: it answers connect and
// subscribe, and its /api/publish compresses each publication once and
// writes it to every connection, as Gyre's fan-out is to do. It serves a
// whole run of the tool with compression negotiated, before the server
// proper has it.
func startCompressingServer(t *testing.T) testServer {
	t.Helper()
	z := &websocket.Compression{Level: 1, MinSize: 128}
	var mu sync.Mutex
	var conns []*websocket.Conn
	mux := http.NewServeMux()
	mux.HandleFunc("/connection/websocket", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := websocket.Upgrade(w, r, websocket.Options{Compression: z})
		if err != nil {
			return
		}
		// The subscribe reply is written, and the connection joins the
		// subscribers, under the lock the publishes hold: no publication
		// goes out between the two, none before the reply.
		go serveCommands(conn, z, func(reply func() error) error {
			mu.Lock()
			defer mu.Unlock()
			if err := reply(); err != nil {
				return err
			}
			conns = append(conns, conn)
			return nil
		})
	})
	mux.HandleFunc("/api/publish", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Channel string          `json:"channel"`
			Data    json.RawMessage `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		push, err := protocol.AppendReply(nil, protocol.TypeJSON, &protocol.Reply{Push: &protocol.Push{
			Channel: req.Channel, Pub: &protocol.Publication{Data: req.Data}}})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		frame := []string{string(z.AppendFrame(nil, false, push))}
		mu.Lock()
		for _, c := range conns {
			_ = c.WriteFrames(frame)
		}
		mu.Unlock()
		_, _ = w.Write([]byte(`{"result":{}}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base := strings.TrimPrefix(srv.URL, "http://")
	return testServer{ws: "ws://" + base + "/connection/websocket", api: "http://" + base + "/api"}
}

// serveCommands answers a connection's connect and subscribe commands
// (through the compressor, as every reply of a compressing server goes),
// calling subscribed after a subscribe; pongs are ignored.
func serveCommands(conn *websocket.Conn, z *websocket.Compression, subscribed func(reply func() error) error) {
	defer conn.Close(3000, "done")
	for {
		payload, _, err := conn.ReadMessage()
		if err != nil {
			return
		}
		for _, line := range bytes.Split(payload, []byte("\n")) {
			var cmd struct {
				ID        uint32          `json:"id"`
				Connect   json.RawMessage `json:"connect"`
				Subscribe json.RawMessage `json:"subscribe"`
			}
			if json.Unmarshal(line, &cmd) != nil || cmd.ID == 0 {
				continue
			}
			reply := &protocol.Reply{Id: cmd.ID}
			if cmd.Connect != nil {
				reply.Connect = &protocol.ConnectResult{Client: "c", Version: "test"}
			} else {
				reply.Subscribe = &protocol.SubscribeResult{}
			}
			b, err := protocol.AppendReply(nil, protocol.TypeJSON, reply)
			if err != nil {
				return
			}
			write := func() error { return conn.WriteFrames([]string{string(z.AppendFrame(nil, false, b))}) }
			if cmd.Subscribe != nil {
				err = subscribed(write)
			} else {
				err = write()
			}
			if err != nil {
				return
			}
		}
	}
}

// TestRunCompressed is a whole fanout run with compression negotiated by
// every connection, held here and in child processes: the summary must
// count them and the bytes.
func TestRunCompressed(t *testing.T) {
	srv := startCompressingServer(t)
	for _, procs := range []int{0, 2} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			cfg := Config{URL: srv.ws, API: srv.api, Conns: 10, Duration: 500 * time.Millisecond, Rate: 200,
				Compression: true, Payload: PayloadJSON, Size: 2048, Procs: procs}
			if procs > 0 {
				cfg.WorkerCommand = workerCommand(t)
			}
			res, err := Run(context.Background(), ScenarioFanout, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkOpened(t, res, cfg.Conns)
			checkDelivery(t, res)
			r := res.Received
			if r.NegotiatedBy != "all" || r.Negotiated != 10 || r.ContextTakeover != 0 {
				t.Fatalf("received %+v: want compression negotiated by all 10 connections", r)
			}
			// Every publication came compressed; the connect and subscribe
			// replies, under MinSize, did not.
			if want := res.Delivery.Received; r.CompressedMessages != want || r.Messages != want+20 {
				t.Fatalf("received %+v: want %d compressed of %d messages", r, want, want+20)
			}
			if r.Ratio < 2.5 || r.Ratio > 5 {
				t.Fatalf("ratio %.2f, want about 3 for the 2 KB feed", r.Ratio)
			}
			var table bytes.Buffer
			if err := res.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"offered; negotiated by all 10 connections (without context takeover)",
				"2048 B json,",
				fmt.Sprintf("(%s compressed)", count(r.CompressedMessages)),
				fmt.Sprintf("ratio %.2f", r.Ratio),
			} {
				if !strings.Contains(table.String(), want) {
					t.Fatalf("table without %q:\n%s", want, table.String())
				}
			}
		})
	}
}

// FuzzReadCompressed feeds the reader any bytes on a connection that
// negotiated compression, with and without context takeover: it must
// return messages or an error, never panic, and never inflate past the
// limit (a plain message is bounded by the input).
func FuzzReadCompressed(f *testing.F) {
	d := &deflater{}
	msg := []byte(`{"push":{"channel":"c","pub":{"data":{"gb":[0,1,2],"p":"xxxxxxxxxxxxxxxx"}}}}`)
	f.Add(d.frames(&testing.T{}, []serverMessage{{payload: msg, compressed: true}, {payload: msg}}, true), false)
	f.Add(d.frames(&testing.T{}, []serverMessage{{payload: msg, compressed: true, fragments: 3, pingBetween: true}}, false), true)
	f.Add([]byte{0xc1, 0x01, 0x00, 0x81, 0x00}, false)
	f.Fuzz(func(t *testing.T, stream []byte, takeover bool) {
		const limit = 1 << 16
		rs := &readState{z: &inflateState{takeover: takeover, windowSize: 1 << 15, limit: limit}}
		br := bufio.NewReader(bytes.NewReader(stream))
		for range 64 {
			_, bp, err := readMessage(br, func(ws.OpCode, []byte) error { return nil }, rs)
			if err != nil {
				return
			}
			if len(*bp) > max(limit, len(stream)) {
				t.Fatalf("message of %d bytes past the limit", len(*bp))
			}
			putBuf(bp)
		}
	})
}
