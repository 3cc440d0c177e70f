package loadtest

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gobwas/ws"
)

// serverFrames writes frames as a server sends them.
func serverFrames(t *testing.T, frames ...ws.Frame) *bufio.Reader {
	t.Helper()
	var b bytes.Buffer
	for _, f := range frames {
		if err := ws.WriteFrame(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return bufio.NewReaderSize(&b, 16)
}

func TestReadMessage(t *testing.T) {
	long := strings.Repeat("a", 70000)
	tests := []struct {
		name     string
		frames   []ws.Frame
		wantOp   ws.OpCode
		want     string
		controls []string
	}{
		{"text", []ws.Frame{ws.NewTextFrame([]byte(`{}`))}, ws.OpText, `{}`, nil},
		{"binary 16-bit length", []ws.Frame{ws.NewBinaryFrame(bytes.Repeat([]byte{1}, 300))}, ws.OpBinary, string(bytes.Repeat([]byte{1}, 300)), nil},
		{"64-bit length", []ws.Frame{ws.NewTextFrame([]byte(long))}, ws.OpText, long, nil},
		{"empty", []ws.Frame{ws.NewTextFrame(nil)}, ws.OpText, "", nil},
		{"fragments with a ping between", []ws.Frame{
			ws.NewFrame(ws.OpText, false, []byte("ab")),
			ws.NewPingFrame([]byte("p")),
			ws.NewFrame(ws.OpContinuation, false, []byte("cd")),
			ws.NewFrame(ws.OpContinuation, true, []byte("ef")),
		}, ws.OpText, "abcdef", []string{"ping p"}},
		{"pong first", []ws.Frame{ws.NewPongFrame(nil), ws.NewTextFrame([]byte("x"))}, ws.OpText, "x", []string{"pong "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var controls []string
			op, bp, err := readMessage(serverFrames(t, tt.frames...), func(op ws.OpCode, p []byte) error {
				name := map[ws.OpCode]string{ws.OpPing: "ping", ws.OpPong: "pong"}[op]
				controls = append(controls, name+" "+string(p))
				return nil
			}, &readState{})
			if err != nil {
				t.Fatal(err)
			}
			defer putBuf(bp)
			if op != tt.wantOp || string(*bp) != tt.want {
				t.Fatalf("got %v %.40q, want %v %.40q", op, *bp, tt.wantOp, tt.want)
			}
			if strings.Join(controls, ",") != strings.Join(tt.controls, ",") {
				t.Fatalf("controls %q, want %q", controls, tt.controls)
			}
		})
	}
}

func TestReadMessageErrors(t *testing.T) {
	masked := ws.MaskFrame(ws.NewTextFrame([]byte("x")))
	rsv := ws.NewTextFrame([]byte("x"))
	rsv.Header.Rsv = ws.Rsv(true, false, false)
	bigPing := ws.NewPingFrame(bytes.Repeat([]byte{1}, 126))
	huge := ws.NewTextFrame(nil)
	huge.Header.Length = maxMessage + 1
	closeFrame := ws.NewCloseFrame(ws.NewCloseFrameBody(3008, "slow"))
	tests := []struct {
		name   string
		frames []ws.Frame
		want   string
	}{
		{"masked", []ws.Frame{masked}, "masked"},
		{"reserved bits", []ws.Frame{rsv}, "reserved"},
		{"continuation first", []ws.Frame{ws.NewFrame(ws.OpContinuation, true, []byte("x"))}, "out of order"},
		{"new message inside one", []ws.Frame{ws.NewFrame(ws.OpText, false, []byte("x")), ws.NewTextFrame([]byte("y"))}, "out of order"},
		{"control too large", []ws.Frame{bigPing}, "control"},
		{"huge", []ws.Frame{huge}, "frame of"},
		{"cut short", []ws.Frame{ws.NewFrame(ws.OpText, false, []byte("x"))}, "EOF"},
		{"close", []ws.Frame{closeFrame}, "close 3008 slow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &conn{}
			_, _, err := readMessage(serverFrames(t, tt.frames...), func(op ws.OpCode, p []byte) error {
				if op == ws.OpClose {
					return c.control(op, p)
				}
				return nil
			}, &readState{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one with %q", err, tt.want)
			}
			if tt.name == "close" && !errors.Is(err, errServerClosed) {
				t.Fatalf("err %v, want errServerClosed", err)
			}
		})
	}
}

func TestAppendClientFrame(t *testing.T) {
	for _, n := range []int{0, 2, 125, 126, 65535, 65536, 200000} {
		payload := bytes.Repeat([]byte{'z'}, n)
		b := appendClientFrame(nil, ws.OpBinary, payload)
		f, err := ws.ReadFrame(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !f.Header.Masked || !f.Header.Fin || f.Header.OpCode != ws.OpBinary {
			t.Fatalf("%d bytes: header %+v", n, f.Header)
		}
		f = ws.UnmaskFrameInPlace(f)
		if !bytes.Equal(f.Payload, payload) {
			t.Fatalf("%d bytes: payload differs", n)
		}
	}
}
