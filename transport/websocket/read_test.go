package websocket

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/internal/wstest"
)

// frame is one client frame: fin, opcode and payload.
type frame struct {
	fin     bool
	op      ws.OpCode
	payload string
}

func TestReadMessage(t *testing.T) {
	big := strings.Repeat("0123456789", 3000) // beyond the in-place buffer
	tests := []struct {
		name       string
		frames     []frame
		want       string
		wantBinary bool
	}{
		{name: "text", frames: []frame{{true, ws.OpText, `{"id":1}`}}, want: `{"id":1}`},
		{name: "binary", frames: []frame{{true, ws.OpBinary, "\x00\x01\xff"}}, want: "\x00\x01\xff", wantBinary: true},
		{name: "empty", frames: []frame{{true, ws.OpText, ""}}, want: ""},
		{name: "16-bit length", frames: []frame{{true, ws.OpText, strings.Repeat("a", 300)}}, want: strings.Repeat("a", 300)},
		{name: "fills the read buffer", frames: []frame{{true, ws.OpBinary, strings.Repeat("b", readBufSize)}}, want: strings.Repeat("b", readBufSize), wantBinary: true},
		{name: "64-bit length", frames: []frame{{true, ws.OpText, strings.Repeat("c", 70000)}}, want: strings.Repeat("c", 70000)},
		{name: "large", frames: []frame{{true, ws.OpText, big}}, want: big},
		{
			name:   "fragmented text",
			frames: []frame{{false, ws.OpText, "hel"}, {false, ws.OpContinuation, "lo, "}, {true, ws.OpContinuation, "world"}},
			want:   "hello, world",
		},
		{
			name:       "fragmented binary",
			frames:     []frame{{false, ws.OpBinary, "\x01"}, {true, ws.OpContinuation, "\x02"}},
			want:       "\x01\x02",
			wantBinary: true,
		},
		{
			name:   "fragments with empty ones",
			frames: []frame{{false, ws.OpText, ""}, {false, ws.OpContinuation, "x"}, {true, ws.OpContinuation, ""}},
			want:   "x",
		},
		{
			name:   "large fragments",
			frames: []frame{{false, ws.OpText, big}, {true, ws.OpContinuation, big}},
			want:   big + big,
		},
		{
			name:   "UTF-8 split across fragments",
			frames: []frame{{false, ws.OpText, "\xce"}, {true, ws.OpContinuation, "\xba"}},
			want:   "κ",
		},
		{
			name:   "pong ignored",
			frames: []frame{{true, ws.OpPong, "x"}, {true, ws.OpText, "after pong"}},
			want:   "after pong",
		},
	}
	s := newTestServer(t, Options{ReadLimit: 1 << 20})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, c := s.connect(t, "/")
			for _, f := range tt.frames {
				cl.send(f.op, f.fin, []byte(f.payload))
			}
			got, binary := mustRead(t, c)
			if string(got) != tt.want || binary != tt.wantBinary {
				t.Errorf("got %q binary=%v, want %q binary=%v", abbrev(got), binary, abbrev([]byte(tt.want)), tt.wantBinary)
			}
		})
	}
}

// TestReadMessageSequence reads many messages sent in one burst, so that
// frames straddle reads and the buffer moves between the small array and the
// pool.
func TestReadMessageSequence(t *testing.T) {
	s := newTestServer(t, Options{ReadLimit: 1 << 20})
	cl, c := s.connect(t, "/")
	var want []string
	var burst bytes.Buffer
	for i := range 200 {
		p := strings.Repeat(string(rune('a'+i%26)), (i*97)%9000)
		want = append(want, p)
		fin := byte(0x80)
		burst.Write(wstest.MaskedFrame(fin|byte(ws.OpText), []byte(p)))
	}
	go func() { _, _ = cl.conn.Write(burst.Bytes()) }()
	for i, w := range want {
		got, _, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if string(got) != w {
			t.Fatalf("message %d: got %d bytes, want %d", i, len(got), len(w))
		}
	}
}

func TestReadMessageAnswersPing(t *testing.T) {
	s := newTestServer(t, Options{})
	cl, c := s.connect(t, "/")
	cl.send(ws.OpText, false, []byte("frag"))
	cl.send(ws.OpPing, true, []byte("ping-data"))
	cl.send(ws.OpContinuation, true, []byte("ment"))
	cl.send(ws.OpPing, true, nil)
	cl.send(ws.OpText, true, []byte("next"))
	got, _ := mustRead(t, c)
	if string(got) != "fragment" {
		t.Errorf("got %q, want fragment", got)
	}
	expectPong(t, cl, "ping-data")
	if got, _ := mustRead(t, c); string(got) != "next" {
		t.Errorf("got %q, want next", got)
	}
	expectPong(t, cl, "")
}

func expectPong(t *testing.T, cl *client, want string) {
	t.Helper()
	f := cl.recv()
	if f.Header.OpCode != ws.OpPong || string(f.Payload) != want {
		t.Errorf("got op %v payload %q, want pong %q", f.Header.OpCode, f.Payload, want)
	}
}

func TestReadMessagePeerClose(t *testing.T) {
	tests := []struct {
		name       string
		payload    []byte
		wantCode   uint16
		wantReason string
	}{
		{name: "code and reason", payload: ws.NewCloseFrameBody(1000, "bye"), wantCode: 1000, wantReason: "bye"},
		{name: "application code", payload: ws.NewCloseFrameBody(4001, ""), wantCode: 4001},
		{name: "no status", payload: nil, wantCode: statusNoStatus},
	}
	s := newTestServer(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, c := s.connect(t, "/")
			cl.send(ws.OpClose, true, tt.payload)
			r := waitRead(t, readAsync(c))
			var ce *CloseError
			if !errors.As(r.err, &ce) {
				t.Fatalf("ReadMessage error %v, want *CloseError", r.err)
			}
			if ce.Code != tt.wantCode || ce.Reason != tt.wantReason {
				t.Errorf("CloseError %d %q, want %d %q", ce.Code, ce.Reason, tt.wantCode, tt.wantReason)
			}
			f := cl.recv()
			if f.Header.OpCode != ws.OpClose || !bytes.Equal(f.Payload, tt.payload) {
				t.Errorf("echo op %v payload %q, want close %q", f.Header.OpCode, f.Payload, tt.payload)
			}
			cl.expectEOF()
			if err := c.WriteFrame([]byte("late")); !errors.Is(err, ErrClosed) {
				t.Errorf("WriteFrame after peer close: %v, want ErrClosed", err)
			}
			if _, _, err := c.ReadMessage(); err != r.err {
				t.Errorf("second ReadMessage: %v, want the same error", err)
			}
		})
	}
}

func TestReadMessageRejectsBadFrames(t *testing.T) {
	unmasked := []byte{0x81, 0x02, '{', '}'}
	tests := []struct {
		name    string
		raw     [][]byte
		wantErr error
	}{
		{name: "unmasked", raw: [][]byte{unmasked}, wantErr: ErrProtocol},
		{name: "reserved bit", raw: [][]byte{wstest.MaskedFrame(0x80|0x40|byte(ws.OpText), []byte("x"))}, wantErr: ErrProtocol},
		{name: "reserved data opcode", raw: [][]byte{wstest.MaskedFrame(0x80|0x3, []byte("x"))}, wantErr: ErrProtocol},
		{name: "reserved control opcode", raw: [][]byte{wstest.MaskedFrame(0x80|0xb, nil)}, wantErr: ErrProtocol},
		{name: "fragmented ping", raw: [][]byte{wstest.MaskedFrame(byte(ws.OpPing), nil)}, wantErr: ErrProtocol},
		{name: "long ping", raw: [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpPing), make([]byte, 126))}, wantErr: ErrProtocol},
		{name: "lone continuation", raw: [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpContinuation), []byte("x"))}, wantErr: ErrProtocol},
		{
			name:    "text inside fragments",
			raw:     [][]byte{wstest.MaskedFrame(byte(ws.OpText), []byte("a")), wstest.MaskedFrame(0x80|byte(ws.OpText), []byte("b"))},
			wantErr: ErrProtocol,
		},
		{name: "one-byte close", raw: [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpClose), []byte{3})}, wantErr: ErrProtocol},
		{name: "close code 1005", raw: [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpClose), []byte{0x03, 0xed})}, wantErr: ErrProtocol},
		{name: "close code 5000", raw: [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpClose), []byte{0x13, 0x88})}, wantErr: ErrProtocol},
		{name: "close reason not UTF-8", raw: [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpClose), []byte{0x03, 0xe8, 0xff})}, wantErr: ErrInvalidUTF8},
		{name: "text not UTF-8", raw: [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpText), []byte("\xff\xfe"))}, wantErr: ErrInvalidUTF8},
		{
			name:    "fragmented text not UTF-8",
			raw:     [][]byte{wstest.MaskedFrame(byte(ws.OpText), []byte("ok")), wstest.MaskedFrame(0x80|byte(ws.OpContinuation), []byte("\xc3"))},
			wantErr: ErrInvalidUTF8,
		},
		{
			name:    "length with high bit",
			raw:     [][]byte{{0x82, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4}},
			wantErr: ErrProtocol,
		},
	}
	s := newTestServer(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, c := s.connect(t, "/")
			for _, b := range tt.raw {
				cl.sendRaw(b)
			}
			r := waitRead(t, readAsync(c))
			if !errors.Is(r.err, tt.wantErr) {
				t.Fatalf("ReadMessage error %v, want %v", r.err, tt.wantErr)
			}
			if _, _, err := c.ReadMessage(); err != r.err {
				t.Errorf("second ReadMessage: %v, want the same error", err)
			}
			if c.in.big != nil || c.msgBuf != nil {
				t.Error("a failed connection still holds pooled buffers")
			}
		})
	}
}

// TestReadMessageTooLarge checks the limit is applied from headers: the
// client never sends the whole payload, so a reader that tried to read it
// would block.
func TestReadMessageTooLarge(t *testing.T) {
	const limit = 1024
	tests := []struct {
		name    string
		raw     [][]byte
		wantErr error
		wantMsg string // the error's text, which names the size and the limit
		want    string
	}{
		{
			name:    "header announces 10 MB",
			raw:     [][]byte{{0x82, 0x80 | 127, 0, 0, 0, 0, 0, 0xa0, 0, 0, 1, 2, 3, 4}, make([]byte, 100)},
			wantErr: ErrMessageTooLarge,
			wantMsg: "websocket: message too large: 10485760 bytes, limit 1024",
		},
		{
			name:    "one byte over",
			raw:     [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpText), bytes.Repeat([]byte("a"), limit+1))[:200]},
			wantErr: ErrMessageTooLarge,
			wantMsg: "websocket: message too large: 1025 bytes, limit 1024",
		},
		{
			name: "fragments add up",
			raw: [][]byte{
				wstest.MaskedFrame(byte(ws.OpText), bytes.Repeat([]byte("a"), 400)),
				wstest.MaskedFrame(byte(ws.OpContinuation), bytes.Repeat([]byte("a"), 400)),
				wstest.MaskedFrame(0x80|byte(ws.OpContinuation), bytes.Repeat([]byte("a"), 400))[:20],
			},
			wantErr: ErrMessageTooLarge,
			wantMsg: "websocket: message too large: 1200 bytes, limit 1024",
		},
		{
			name: "exactly the limit",
			raw:  [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpText), bytes.Repeat([]byte("a"), limit))},
			want: strings.Repeat("a", limit),
		},
	}
	s := newTestServer(t, Options{ReadLimit: limit})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, c := s.connect(t, "/")
			for _, b := range tt.raw {
				cl.sendRaw(b)
			}
			r := waitRead(t, readAsync(c))
			if !errors.Is(r.err, tt.wantErr) || (tt.wantErr == nil) != (r.err == nil) {
				t.Fatalf("ReadMessage error %v, want %v", r.err, tt.wantErr)
			}
			if r.err != nil {
				if r.err.Error() != tt.wantMsg {
					t.Errorf("error %q, want %q", r.err, tt.wantMsg)
				}
				if _, _, err := c.ReadMessage(); err != r.err {
					t.Errorf("second ReadMessage: %v, want the same error", err)
				}
			}
			if string(r.payload) != tt.want {
				t.Errorf("payload of %d bytes, want %d", len(r.payload), len(tt.want))
			}
		})
	}
}

func TestReadMessageDroppedConnection(t *testing.T) {
	tests := []struct {
		name    string
		raw     [][]byte
		wantErr error
	}{
		{name: "between frames", raw: nil, wantErr: io.EOF},
		{name: "inside the header", raw: [][]byte{{0x81}}, wantErr: io.ErrUnexpectedEOF},
		{name: "inside the mask", raw: [][]byte{{0x81, 0x85, 1, 2}}, wantErr: io.ErrUnexpectedEOF},
		{name: "inside a small payload", raw: [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpText), []byte("hello"))[:8]}, wantErr: io.ErrUnexpectedEOF},
		{name: "inside a large payload", raw: [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpText), make([]byte, 20000))[:9000]}, wantErr: io.ErrUnexpectedEOF},
		{name: "inside a control payload", raw: [][]byte{wstest.MaskedFrame(0x80|byte(ws.OpPing), []byte("abc"))[:7]}, wantErr: io.ErrUnexpectedEOF},
		{name: "between fragments", raw: [][]byte{wstest.MaskedFrame(byte(ws.OpText), []byte("part"))}, wantErr: io.ErrUnexpectedEOF},
	}
	s := newTestServer(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, c := s.connect(t, "/")
			for _, b := range tt.raw {
				cl.sendRaw(b)
			}
			_ = cl.conn.Close()
			r := waitRead(t, readAsync(c))
			if !errors.Is(r.err, tt.wantErr) {
				t.Fatalf("ReadMessage error %v, want %v", r.err, tt.wantErr)
			}
		})
	}
}

// TestIdleConnectionHoldsNoBuffers checks that once a message has been
// consumed, a connection waiting for the next one holds no pooled memory.
func TestIdleConnectionHoldsNoBuffers(t *testing.T) {
	tests := []struct {
		name   string
		frames []frame
	}{
		{name: "small", frames: []frame{{true, ws.OpText, "{}"}}},
		{name: "in place", frames: []frame{{true, ws.OpText, strings.Repeat("x", 3000)}}},
		{name: "large", frames: []frame{{true, ws.OpText, strings.Repeat("x", 30000)}}},
		{name: "fragmented", frames: []frame{{false, ws.OpText, "a"}, {true, ws.OpContinuation, "b"}}},
	}
	s := newTestServer(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, c := s.connect(t, "/")
			for _, f := range tt.frames {
				cl.send(f.op, f.fin, []byte(f.payload))
			}
			mustRead(t, c)
			ch := readAsync(c) // now blocked waiting for a header
			cl.send(ws.OpText, true, []byte("{}"))
			if r := waitRead(t, ch); r.err != nil || string(r.payload) != "{}" {
				t.Fatalf("second read: %q %v", r.payload, r.err)
			}
			if c.in.big != nil || c.msgBuf != nil {
				t.Errorf("after a small message: read buffer pooled=%v, message buffer=%v", c.in.big != nil, c.msgBuf != nil)
			}
		})
	}
}

func abbrev(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// TestReadMessageAllocatesAsDataArrives checks that a header announcing a
// large message reserves memory only for the bytes that follow it.
func TestReadMessageAllocatesAsDataArrives(t *testing.T) {
	const announced = 32 << 20
	s := newTestServer(t, Options{ReadLimit: 64 << 20})
	cl, c := s.connect(t, "/")
	frame := wstest.MaskedFrame(0x80|byte(ws.OpBinary), make([]byte, announced))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cl.sendRaw(frame[:200<<10])
	_ = cl.conn.Close()
	r := waitRead(t, readAsync(c))
	runtime.ReadMemStats(&after)
	if !errors.Is(r.err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadMessage: %v, want unexpected EOF", r.err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > announced/4 {
		t.Errorf("allocated %d bytes for a message of which 200 KiB arrived", got)
	}
}
