package websocket

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/protocol"
)

// The frame reader is fuzzed the way servers with the best parsers test
// theirs: the fuzzer's bytes are what a client sends, delivered to a Conn
// in pieces, and whatever the pieces, the reader must not panic, must end
// at the end of the stream, must never return a message over the read
// limit, and must return the same messages and the same error as when the
// bytes come at once.

// fuzzReadLimit keeps executions short and the limit within the fuzzer's
// reach.
const fuzzReadLimit = 4096

// everySplitMax is the longest input tried at every split position; each
// execution reads it that many times, twice.
const everySplitMax = 96

func FuzzReadMessage(f *testing.F) {
	addReadSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		checkSplitAt(t, data, int(split), false)
	})
}

func FuzzReadMessageCompressed(f *testing.F) {
	addReadSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		checkSplitAt(t, data, int(split), true)
	})
}

// FuzzReadMessageEverySplit reads the start of each input split at every
// position, by a plain and by a compressed connection.
func FuzzReadMessageEverySplit(f *testing.F) {
	addReadSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, _ uint16) {
		data = data[:min(len(data), everySplitMax)]
		for _, compressed := range []bool{false, true} {
			want := readStream(t, compressed, data)
			for i := range len(data) + 1 {
				if got := readStream(t, compressed, data[:i], data[i:]); !got.equal(want) {
					t.Fatalf("compressed=%v, split at %d of %d: read %v, at once %v", compressed, i, len(data), got, want)
				}
			}
		}
	})
}

// checkSplitAt compares reading data at once, in two pieces split at a
// position chosen by the fuzzer, and (for inputs short enough to keep an
// execution quick) a byte at a time.
func checkSplitAt(t *testing.T, data []byte, split int, compressed bool) {
	want := readStream(t, compressed, data)
	i := split % (len(data) + 1)
	if got := readStream(t, compressed, data[:i], data[i:]); !got.equal(want) {
		t.Fatalf("split at %d of %d: read %v, at once %v", i, len(data), got, want)
	}
	if len(data) > 1024 {
		return
	}
	bytewise := make([][]byte, len(data))
	for i := range data {
		bytewise[i] = data[i : i+1]
	}
	if got := readStream(t, compressed, bytewise...); !got.equal(want) {
		t.Fatalf("a byte at a time: read %v, at once %v", got, want)
	}
}

// readOutcome is everything a connection read from a stream: its messages
// and the error that ended it.
type readOutcome struct {
	msgs []readMessage
	err  string
}

type readMessage struct {
	payload string
	binary  bool
}

func (o readOutcome) equal(p readOutcome) bool {
	if o.err != p.err || len(o.msgs) != len(p.msgs) {
		return false
	}
	for i := range o.msgs {
		if o.msgs[i] != p.msgs[i] {
			return false
		}
	}
	return true
}

func (o readOutcome) String() string {
	return fmt.Sprintf("%d messages %+v, then %q", len(o.msgs), o.msgs, o.err)
}

// readStream reads the concatenation of chunks, given to the Conn one
// chunk per socket read, until reading ends.
func readStream(t *testing.T, compressed bool, chunks ...[]byte) readOutcome {
	t.Helper()
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	c := newConn(&chunkConn{chunks: chunks}, protocol.TypeJSON, Options{ReadLimit: fuzzReadLimit})
	if compressed {
		c.deflate = &Compression{}
	}
	var out readOutcome
	for {
		p, binary, err := c.ReadMessage()
		if err != nil {
			checkReadEnd(t, c, err)
			out.err = err.Error()
			return out
		}
		if len(p) > fuzzReadLimit {
			t.Fatalf("a message of %d bytes, over the limit of %d", len(p), fuzzReadLimit)
		}
		if !binary && !utf8.Valid(p) {
			t.Fatalf("a text message that is not UTF-8: %q", p)
		}
		out.msgs = append(out.msgs, readMessage{string(p), binary})
		// A masked frame takes at least 6 bytes: more messages than that
		// allows means the reader invents them.
		if len(out.msgs) > total/6 {
			t.Fatalf("%d messages from %d bytes", len(out.msgs), total)
		}
	}
}

// checkReadEnd checks how reading ended: with one of the errors the
// package documents, for good, and with no pooled buffer held.
func checkReadEnd(t *testing.T, c *Conn, err error) {
	t.Helper()
	var ce *CloseError
	switch {
	case errors.Is(err, ErrProtocol), errors.Is(err, ErrMessageTooLarge), errors.Is(err, ErrInvalidUTF8),
		errors.As(err, &ce), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
	default:
		t.Fatalf("reading ended with an undocumented error: %v", err)
	}
	if _, _, again := c.ReadMessage(); again != err {
		t.Fatalf("ReadMessage after %v: %v", err, again)
	}
	if c.in.big != nil || c.msgBuf != nil || c.zbuf != nil {
		t.Fatal("a connection done reading holds pooled buffers")
	}
}

// chunkConn is a client's stream: each Read returns (part of) the next
// chunk, then io.EOF once all are read. Writes (pongs, the close echo)
// are dropped.
type chunkConn struct {
	chunks [][]byte
}

func (c *chunkConn) Read(p []byte) (int, error) {
	for len(c.chunks) > 0 && len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	return n, nil
}

func (c *chunkConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *chunkConn) Close() error                     { return nil }
func (c *chunkConn) LocalAddr() net.Addr              { return fuzzAddr }
func (c *chunkConn) RemoteAddr() net.Addr             { return fuzzAddr }
func (c *chunkConn) SetDeadline(time.Time) error      { return nil }
func (c *chunkConn) SetReadDeadline(time.Time) error  { return nil }
func (c *chunkConn) SetWriteDeadline(time.Time) error { return nil }

var fuzzAddr = &net.UnixAddr{Name: "fuzz", Net: "unix"}

// addReadSeeds seeds a reader's corpus with client streams: valid frames
// (masked, fragmented, with control frames between, compressed) and a few
// that break the protocol, each with a split position.
func addReadSeeds(f *testing.F) {
	json := []byte(`{"id":1,"connect":{"token":"abc","name":"js"}}`)
	long := bytes.Repeat([]byte(`{"publish":{"channel":"c","data":{}}}`), 20)
	z := seedDeflate(json)
	zLong := seedDeflate(long)
	zZeros := seedDeflate(make([]byte, 64<<10)) // inflates past the limit
	ping := seedFrame(0x80|byte(ws.OpPing), []byte("p"))
	seeds := [][]byte{
		seedFrame(0x80|byte(ws.OpText), json),
		seedFrame(0x80|byte(ws.OpBinary), []byte{0x0a, 0x02, 0x08, 0x01}),
		seedFrame(0x80|byte(ws.OpText), long),
		concat(seedFrame(byte(ws.OpText), json[:10]), ping, seedFrame(0x80|byte(ws.OpContinuation), json[10:])),
		concat(seedFrame(0x80|byte(ws.OpPong), nil), seedFrame(0x80|byte(ws.OpText), nil), seedFrame(0x80|byte(ws.OpText), json)),
		seedFrame(0x80|byte(ws.OpClose), append([]byte{0x03, 0xe8}, "bye"...)),
		seedFrame(0x80|byte(ws.OpText), make([]byte, fuzzReadLimit+1))[:12],
		{0x81, 0x05, 'h', 'e', 'l', 'l', 'o'}, // unmasked
		seedFrame(0x80|0x40|byte(ws.OpText), z),
		seedFrame(0x80|0x40|byte(ws.OpBinary), zLong),
		concat(seedFrame(0x40|byte(ws.OpText), zLong[:5]), ping, seedFrame(0x80|byte(ws.OpContinuation), zLong[5:])),
		concat(seedFrame(0x40|byte(ws.OpText), z[:3]), seedFrame(0x80|0x40|byte(ws.OpContinuation), z[3:])),
		seedFrame(0x80|0x40|byte(ws.OpText), zZeros),
		seedFrame(0x80|0x40|byte(ws.OpText), seedDeflate([]byte("\xff\xfe"))),
		seedFrame(0x80|0x40|byte(ws.OpText), []byte{0xff, 0xff, 0xff}),
		concat(seedFrame(0x80|0x40|byte(ws.OpText), z), seedFrame(0x80|byte(ws.OpText), json), seedFrame(0x80|0x40|byte(ws.OpText), z)),
	}
	for i, s := range seeds {
		f.Add(s, uint16(i*7))
	}
}

// seedFrame builds a client frame with a fixed mask, so that the seeds
// are the same on every run.
func seedFrame(b0 byte, payload []byte) []byte {
	h := ws.Header{
		Fin:    b0&0x80 != 0,
		Rsv:    (b0 >> 4) & 0x7,
		OpCode: ws.OpCode(b0 & 0x0f),
		Masked: true,
		Mask:   [4]byte{0x12, 0x34, 0x56, 0x78},
		Length: int64(len(payload)),
	}
	var b bytes.Buffer
	_ = ws.WriteHeader(&b, h)
	p := bytes.Clone(payload)
	ws.Cipher(p, h.Mask, 0)
	return append(b.Bytes(), p...)
}

// seedDeflate compresses a message for a seed with the server's own
// compressor (the fuzz targets cannot fail a test while seeding).
func seedDeflate(p []byte) []byte {
	return (&Compression{Level: 9}).deflate(nil, p)
}
