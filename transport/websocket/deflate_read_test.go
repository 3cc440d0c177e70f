package websocket

import (
	"bytes"
	"cmp"
	stdflate "compress/flate"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/internal/wstest"
)

// First header bytes of client frames, as on the wire.
const (
	b0Fin  = 0x80
	b0Rsv1 = 0x40
	b0Rsv2 = 0x20
	b0Rsv3 = 0x10
)

func TestReadCompressed(t *testing.T) {
	text := []byte(strings.Repeat(`{"method":"publish","params":{"channel":"news","data":{"x":1}}}`, 100))
	bin := bytes.Repeat([]byte{0x00, 0x01, 0xfe, 0xff, 0x80}, 2000)
	big := bytes.Repeat([]byte("0123456789abcdef"), 40000) // beyond every read buffer
	zText := stdDeflate(t, text, stdflate.BestCompression)
	zBin := stdDeflate(t, bin, stdflate.BestSpeed)
	third := len(zText) / 3
	ping := func(p string) []byte { return wstest.MaskedFrame(b0Fin|byte(ws.OpPing), []byte(p)) }
	pong := wstest.MaskedFrame(b0Fin|byte(ws.OpPong), []byte("unsolicited"))

	// A message may end in a final block instead of a sync flush (RFC
	// 7692, section 7.2.3.3).
	var final bytes.Buffer
	fw, _ := stdflate.NewWriter(&final, stdflate.DefaultCompression)
	_, _ = fw.Write(text)
	_ = fw.Close()

	tests := []struct {
		name       string
		raw        [][]byte
		want       []byte
		wantBinary bool
		wantPongs  []string
	}{
		{name: "text", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), zText)}, want: text},
		{name: "binary", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpBinary), zBin)}, want: bin, wantBinary: true},
		{name: "large", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), stdDeflate(t, big, 1))}, want: big},
		{name: "empty", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), stdDeflate(t, nil, 6))}, want: []byte{}},
		{name: "ends in a final block", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), final.Bytes())}, want: text},
		{
			name: "fragmented text",
			raw: [][]byte{
				wstest.MaskedFrame(b0Rsv1|byte(ws.OpText), zText[:third]),
				wstest.MaskedFrame(byte(ws.OpContinuation), zText[third:2*third]),
				wstest.MaskedFrame(b0Fin|byte(ws.OpContinuation), zText[2*third:]),
			},
			want: text,
		},
		{
			name: "fragmented binary",
			raw: [][]byte{
				wstest.MaskedFrame(b0Rsv1|byte(ws.OpBinary), zBin[:1]),
				wstest.MaskedFrame(b0Fin|byte(ws.OpContinuation), zBin[1:]),
			},
			want:       bin,
			wantBinary: true,
		},
		{
			name: "control frames between fragments",
			raw: [][]byte{
				wstest.MaskedFrame(b0Rsv1|byte(ws.OpText), zText[:third]),
				ping("p1"),
				wstest.MaskedFrame(byte(ws.OpContinuation), zText[third:2*third]),
				pong,
				ping("p2"),
				wstest.MaskedFrame(b0Fin|byte(ws.OpContinuation), zText[2*third:]),
			},
			want:      text,
			wantPongs: []string{"p1", "p2"},
		},
		{
			name: "empty fragments",
			raw: [][]byte{
				wstest.MaskedFrame(b0Rsv1|byte(ws.OpText), nil),
				wstest.MaskedFrame(byte(ws.OpContinuation), zText),
				wstest.MaskedFrame(b0Fin|byte(ws.OpContinuation), nil),
			},
			want: text,
		},
		{name: "plain message", raw: [][]byte{wstest.MaskedFrame(b0Fin|byte(ws.OpText), []byte("as it is"))}, want: []byte("as it is")},
	}
	s := newTestServer(t, Options{Compression: &Compression{Level: 1}, ReadLimit: 1 << 20})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, c, _ := s.connectDeflate(t, offerGorilla)
			cl.sendRaw(bytes.Join(tt.raw, nil))
			got, binary := mustRead(t, c)
			if !bytes.Equal(got, tt.want) || binary != tt.wantBinary {
				t.Errorf("got %q binary=%v, want %q binary=%v", abbrev(got), binary, abbrev(tt.want), tt.wantBinary)
			}
			for _, p := range tt.wantPongs {
				expectPong(t, cl, p)
			}
			// The next read gives the buffers of this one back.
			ch := readAsync(c)
			cl.sendRaw(wstest.MaskedFrame(b0Fin|byte(ws.OpText), []byte("{}")))
			if r := waitRead(t, ch); r.err != nil || string(r.payload) != "{}" {
				t.Fatalf("next read: %q %v", r.payload, r.err)
			}
			if c.in.big != nil || c.msgBuf != nil || c.zbuf != nil {
				t.Errorf("after a small message: read buffer %v, message buffer %v, inflated buffer %v", c.in.big != nil, c.msgBuf != nil, c.zbuf != nil)
			}
		})
	}
}

// TestReadCompressedSequence reads a burst of compressed and plain
// messages of many sizes: each inflates alone (no context takeover) with
// a pooled inflater.
func TestReadCompressedSequence(t *testing.T) {
	s := newTestServer(t, Options{Compression: &Compression{}, ReadLimit: 1 << 20})
	cl, c, _ := s.connectDeflate(t, offerBrowser)
	var want [][]byte
	var burst bytes.Buffer
	for i := range 120 {
		p := []byte(strings.Repeat(string(rune('a'+i%26))+"-", (i*397)%20000))
		want = append(want, p)
		if i%5 == 4 {
			burst.Write(wstest.MaskedFrame(b0Fin|byte(ws.OpText), p))
			continue
		}
		burst.Write(wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), stdDeflate(t, p, i%10)))
	}
	go func() { _, _ = cl.conn.Write(burst.Bytes()) }()
	for i, w := range want {
		got, _, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !bytes.Equal(got, w) {
			t.Fatalf("message %d: got %d bytes %q, want %d", i, len(got), abbrev(got), len(w))
		}
	}
}

func TestReadCompressedRejects(t *testing.T) {
	const limit = 1024
	small := []byte(`{"id":1}`)
	zSmall := stdDeflate(t, small, 6)
	tests := []struct {
		name    string
		offer   string // the client's offer; empty means offerGorilla
		noOffer bool   // the client offers no compression
		raw     [][]byte
		wantErr error
		wantMsg string // the error's text, when it matters
	}{
		{
			name:    "RSV1 on a continuation",
			raw:     [][]byte{wstest.MaskedFrame(byte(ws.OpText), zSmall[:1]), wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpContinuation), zSmall[1:])},
			wantErr: ErrProtocol,
		},
		{
			name:    "RSV1 on the first frame and a continuation",
			raw:     [][]byte{wstest.MaskedFrame(b0Rsv1|byte(ws.OpText), zSmall[:1]), wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpContinuation), zSmall[1:])},
			wantErr: ErrProtocol,
		},
		{name: "RSV1 on a ping", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpPing), nil)}, wantErr: ErrProtocol},
		{name: "RSV1 on a pong", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpPong), nil)}, wantErr: ErrProtocol},
		{name: "RSV1 on a close", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpClose), []byte{0x03, 0xe8})}, wantErr: ErrProtocol},
		{
			name:    "RSV1 on a ping between fragments",
			raw:     [][]byte{wstest.MaskedFrame(b0Rsv1|byte(ws.OpText), zSmall[:1]), wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpPing), nil)},
			wantErr: ErrProtocol,
		},
		{name: "RSV2", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv2|byte(ws.OpText), small)}, wantErr: ErrProtocol},
		{name: "RSV3", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv3|byte(ws.OpBinary), small)}, wantErr: ErrProtocol},
		{name: "RSV1 and RSV2", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|b0Rsv2|byte(ws.OpText), zSmall)}, wantErr: ErrProtocol},
		{name: "RSV1 on a reserved opcode", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|0x3, zSmall)}, wantErr: ErrProtocol},
		{
			name:    "RSV1 without negotiation",
			noOffer: true,
			raw:     [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), zSmall)},
			wantErr: ErrProtocol,
		},
		{
			name:    "RSV1 after a declined offer",
			offer:   "permessage-deflate; server_max_window_bits=10",
			raw:     [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), zSmall)},
			wantErr: ErrProtocol,
		},
		{name: "reserved block type", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), []byte{0xff, 0xff, 0xff})}, wantErr: ErrProtocol},
		{name: "stored block length mismatch", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), []byte{0x00, 0x05, 0x00, 0x00, 0x00})}, wantErr: ErrProtocol},
		{
			// 16 bytes announced, one sent: the bytes the reader appends
			// (RFC 7692, section 7.2.2) do not make up the rest.
			name:    "stored block cut short",
			raw:     [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpBinary), []byte{0x00, 0x10, 0x00, 0xef, 0xff, 'a'})},
			wantErr: ErrProtocol,
		},
		{
			name:    "inflates past the limit",
			raw:     [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), stdDeflate(t, bytes.Repeat([]byte("a"), 4096), 9))},
			wantErr: ErrMessageTooLarge,
		},
		{
			name: "fragments inflate past the limit",
			raw: func() [][]byte {
				z := stdDeflate(t, bytes.Repeat([]byte("ab"), limit), 9)
				return [][]byte{wstest.MaskedFrame(b0Rsv1|byte(ws.OpText), z[:4]), wstest.MaskedFrame(b0Fin|byte(ws.OpContinuation), z[4:])}
			}(),
			wantErr: ErrMessageTooLarge,
		},
		{
			name:    "one byte past the limit",
			raw:     [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpBinary), stdDeflate(t, make([]byte, limit+1), 9))},
			wantErr: ErrMessageTooLarge,
		},
		{
			// Only the header arrives: the size alone refuses it.
			name:    "compressed frame longer than any message",
			raw:     [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), make([]byte, compressedLimit(limit)+1))[:100]},
			wantErr: ErrMessageTooLarge,
			wantMsg: "websocket: message too large: 1105 bytes, limit 1104",
		},
		{name: "text not UTF-8", raw: [][]byte{wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), stdDeflate(t, []byte("ok \xff\xfe"), 6))}, wantErr: ErrInvalidUTF8},
		{
			name: "fragmented text not UTF-8",
			raw: func() [][]byte {
				z := stdDeflate(t, []byte("caf\xc3"), 6)
				return [][]byte{wstest.MaskedFrame(b0Rsv1|byte(ws.OpText), z[:2]), wstest.MaskedFrame(b0Fin|byte(ws.OpContinuation), z[2:])}
			}(),
			wantErr: ErrInvalidUTF8,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, Options{Compression: &Compression{}, ReadLimit: limit})
			offer := cmp.Or(tt.offer, offerGorilla)
			var cl *client
			var c *Conn
			if tt.noOffer {
				cl, c = s.connect(t, "/")
			} else {
				cl, c, _ = s.connectDeflate(t, offer)
			}
			if want := !tt.noOffer && offer == offerGorilla; (c.Compression() != nil) != want {
				t.Fatalf("compression negotiated: %v, want %v", c.Compression() != nil, want)
			}
			for _, b := range tt.raw {
				cl.sendRaw(b)
			}
			r := waitRead(t, readAsync(c))
			if !errors.Is(r.err, tt.wantErr) {
				t.Fatalf("ReadMessage error %v, want %v", r.err, tt.wantErr)
			}
			if tt.wantMsg != "" && r.err.Error() != tt.wantMsg {
				t.Errorf("error %q, want %q", r.err, tt.wantMsg)
			}
			if _, _, err := c.ReadMessage(); err != r.err {
				t.Errorf("second ReadMessage: %v, want the same error", err)
			}
			if c.in.big != nil || c.msgBuf != nil || c.zbuf != nil {
				t.Error("a failed connection still holds pooled buffers")
			}
		})
	}
}

// TestReadCompressedAtTheLimit sends messages of incompressible bytes,
// which deflate makes a little longer than they are: one of exactly the
// read limit is read although its compressed frame is longer than the
// limit; one byte more is too large.
func TestReadCompressedAtTheLimit(t *testing.T) {
	const limit = 64 << 10
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	for _, tt := range []struct {
		name    string
		size    int
		level   int
		wantErr error
	}{
		{name: "stored blocks", size: limit, level: stdflate.NoCompression},
		{name: "huffman only", size: limit, level: stdflate.HuffmanOnly},
		{name: "best compression", size: limit, level: stdflate.BestCompression},
		{name: "one byte over", size: limit + 1, level: stdflate.NoCompression, wantErr: ErrMessageTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, Options{Compression: &Compression{}, ReadLimit: limit})
			cl, c, _ := s.connectDeflate(t, offerBrowser)
			payload := make([]byte, tt.size)
			for i := range payload {
				payload[i] = byte(rng.Uint32())
			}
			z := stdDeflate(t, payload, tt.level)
			if len(z) <= limit {
				t.Fatalf("compressed to %d bytes, want more than the limit to test it", len(z))
			}
			go cl.sendRaw(wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpBinary), z))
			r := waitRead(t, readAsync(c))
			if !errors.Is(r.err, tt.wantErr) || (tt.wantErr == nil) != (r.err == nil) {
				t.Fatalf("ReadMessage error %v, want %v", r.err, tt.wantErr)
			}
			if tt.wantErr == nil && !bytes.Equal(r.payload, payload) {
				t.Errorf("read %d bytes, not the %d sent", len(r.payload), len(payload))
			}
		})
	}
}

// TestReadCompressedMaxInflated: with Compression.MaxInflated set, a
// compressed message may inflate past the read limit up to MaxInflated,
// and a smaller MaxInflated refuses what the read limit would take; an
// uncompressed message keeps the read limit.
func TestReadCompressedMaxInflated(t *testing.T) {
	const limit = 4 << 10
	big := bytes.Repeat([]byte(`{"text":"hello"}`), 3*limit/16) // 12 KiB, compresses to little
	for _, tt := range []struct {
		name        string
		maxInflated int64
		payload     []byte
		compressed  bool
		wantErr     error
	}{
		{name: "up to max_inflated", maxInflated: 4 * limit, payload: big, compressed: true},
		{name: "past max_inflated", maxInflated: 2 * limit, payload: big, compressed: true, wantErr: ErrMessageTooLarge},
		{name: "zero keeps the read limit", payload: big, compressed: true, wantErr: ErrMessageTooLarge},
		{name: "below the read limit", maxInflated: limit / 4, payload: big[:limit/2], compressed: true, wantErr: ErrMessageTooLarge},
		{name: "plain messages keep the read limit", maxInflated: 4 * limit, payload: big, wantErr: ErrMessageTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, Options{Compression: &Compression{MaxInflated: tt.maxInflated}, ReadLimit: limit})
			cl, c, _ := s.connectDeflate(t, offerBrowser)
			frame := wstest.MaskedFrame(b0Fin|byte(ws.OpText), tt.payload)
			if tt.compressed {
				frame = wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), stdDeflate(t, tt.payload, stdflate.BestSpeed))
			}
			go cl.sendRaw(frame)
			r := waitRead(t, readAsync(c))
			if !errors.Is(r.err, tt.wantErr) || (tt.wantErr == nil) != (r.err == nil) {
				t.Fatalf("ReadMessage error %v, want %v", r.err, tt.wantErr)
			}
			if tt.wantErr == nil && !bytes.Equal(r.payload, tt.payload) {
				t.Errorf("read %d bytes, not the %d sent", len(r.payload), len(tt.payload))
			}
		})
	}
}

// TestReadCompressedBomb sends a message of about 1 MB that inflates to
// 1 GiB of zeros. It must be refused with ErrMessageTooLarge once it
// inflates past the read limit, and what the read allocates in all (the
// compressed message and the inflated part, garbage included) must stay
// within a few times the limit.
func TestReadCompressedBomb(t *testing.T) {
	const limit = 1 << 20
	bomb := deflateBomb(t, 1<<30, compressedLimit(limit))
	s := newTestServer(t, Options{Compression: &Compression{}, ReadLimit: limit})
	cl, c, _ := s.connectDeflate(t, offerGorilla)
	frame := wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpBinary), bomb.data)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go cl.sendRaw(frame)
	r := waitRead(t, readAsync(c))
	runtime.ReadMemStats(&after)
	if !errors.Is(r.err, ErrMessageTooLarge) {
		t.Fatalf("ReadMessage: %v, want ErrMessageTooLarge", r.err)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a bomb of %d bytes (%d MiB inflated) cost %d KiB", len(bomb.data), bomb.inflated>>20, allocated>>10)
	if allocated > 8*limit {
		t.Errorf("reading the bomb allocated %d bytes, want at most %d (8 times the read limit)", allocated, 8*limit)
	}
}

// bomb is a compressed message and the size it inflates to.
type bomb struct {
	data     []byte
	inflated int64
}

// deflateBomb builds a message of at most maxLen bytes that inflates to
// zeros, up to size. After the first chunk, the window is all zeros and
// every further chunk compresses to the same bytes, so the message is
// built by repeating them rather than by compressing a gigabyte.
func deflateBomb(t *testing.T, size, maxLen int64) bomb {
	t.Helper()
	const chunk = 1 << 20
	var b bytes.Buffer
	w, err := stdflate.NewWriter(&b, stdflate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, chunk)
	var parts [3][]byte
	for i := range parts {
		b.Reset()
		_, _ = w.Write(zeros)
		_ = w.Flush()
		parts[i] = bytes.Clone(b.Bytes())
	}
	first, rest := parts[0], parts[1]
	if !bytes.Equal(rest, parts[2]) {
		t.Fatal("chunks of zeros do not compress alike: the bomb cannot be built by repetition")
	}
	out := bomb{data: first, inflated: chunk}
	for out.inflated+chunk <= size && int64(len(out.data)+len(rest)) <= maxLen {
		out.data = append(out.data, rest...)
		out.inflated += chunk
	}
	out.data = bytes.TrimSuffix(out.data, []byte{0x00, 0x00, 0xff, 0xff})
	return out
}

// TestServeReadsCompressed reads compressed messages through ServeReads,
// with a Poller (the connection goes back to it between messages) and
// without, from frames that arrive in pieces.
func TestServeReadsCompressed(t *testing.T) {
	text := []byte(strings.Repeat(`{"push":{"channel":"chat","pub":{"data":"hello"}}}`, 50))
	z := stdDeflate(t, text, 6)
	first := wstest.MaskedFrame(b0Rsv1|byte(ws.OpText), z[:10])
	last := wstest.MaskedFrame(b0Fin|byte(ws.OpContinuation), z[10:])
	whole := wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpBinary), z)
	ping := wstest.MaskedFrame(b0Fin|byte(ws.OpPing), []byte("p"))
	pollModes(t, func(t *testing.T, p *Poller) {
		s := newTestServer(t, Options{Compression: &Compression{}})
		cl, c, _ := s.connectDeflate(t, offerCoderNoContext)
		sk := newSink()
		c.ServeReads(p, sk.onMessage, sk.onError)
		chunks(cl, first[:3], first[3:], concat(ping, last[:5]), last[5:], whole[:20], concat(whole[20:], wstest.MaskedFrame(b0Fin|byte(ws.OpText), []byte("plain"))))
		for i, want := range []struct {
			payload []byte
			binary  bool
		}{{text, false}, {text, true}, {[]byte("plain"), false}} {
			got := sk.next(t)
			if !bytes.Equal(got.payload, want.payload) || got.binary != want.binary {
				t.Fatalf("message %d: %q binary=%v, want %q binary=%v", i, abbrev(got.payload), got.binary, abbrev(want.payload), want.binary)
			}
		}
		expectPong(t, cl, "p")
		_ = c.Close(1000, "")
		if err := sk.end(t); !errors.Is(err, ErrClosed) {
			t.Fatalf("reading ended with %v, want ErrClosed", err)
		}
		if sk.overlap.Load() {
			t.Error("two messages were handled at once")
		}
		if c.in.big != nil || c.msgBuf != nil || c.zbuf != nil {
			t.Error("a connection done reading still holds pooled buffers")
		}
	})
}

// TestReadCompressedNoHistory reads a message that is corrupt in a way a
// decompressor must not look past: a block whose distance tree is empty,
// yet which uses a distance. Right before it, on the same connection, a
// valid message built alike uses the same distance code with a distance
// tree. A pooled decompressor that kept that message's tables would read
// the corrupt one as "aaaa"; it must be refused every time.
func TestReadCompressedNoHistory(t *testing.T) {
	valid, corrupt := craftedDeflate(false), craftedDeflate(true)
	for i := range 20 {
		out := readStream(t, true,
			wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), valid),
			wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), corrupt))
		if len(out.msgs) != 1 || out.msgs[0].payload != "aaaa" {
			t.Fatalf("round %d: the valid message read as %v", i, out)
		}
		if !strings.HasPrefix(out.err, ErrProtocol.Error()) {
			t.Fatalf("round %d: the corrupt message read as %v, want a protocol error", i, out)
		}
	}
}

// craftedDeflate is one dynamic block (RFC 1951, section 3.2.7) that
// writes "a" and then copies 3 bytes from distance 1: "aaaa". Its
// literal/length tree has codes for 'a' (0), end of block (10) and length
// 3 (11); its distance tree has codes for distances 1 and 2, or, with
// emptyDist, none at all, which makes the copy corrupt.
func craftedDeflate(emptyDist bool) []byte {
	var w deflateBits
	w.bits(0, 1) // not the final block: the message ends in a sync flush
	w.bits(2, 2) // dynamic Huffman codes
	w.bits(1, 5) // 258 literal/length codes
	nDist := uint64(2)
	if emptyDist {
		nDist = 1 // one code, of length 0
	}
	w.bits(nDist-1, 5)
	// Code lengths of the code length alphabet, in its odd order: 2 for
	// 0, 1, 2 and 18 (codes 00, 01, 10, 11), 0 for the others, up to 1.
	order := []int{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1}
	w.bits(uint64(len(order)-4), 4)
	for _, sym := range order {
		switch sym {
		case 0, 1, 2, 18:
			w.bits(2, 3)
		default:
			w.bits(0, 3)
		}
	}
	zeros := func(n uint64) { // code 18: 11 to 138 zero lengths
		w.code(0b11, 2)
		w.bits(n-11, 7)
	}
	zeros(97)       // literals 0 to 96
	w.code(0b01, 2) // 'a': length 1
	zeros(138)      // 98 to 235
	zeros(20)       // 236 to 255
	w.code(0b10, 2) // end of block: length 2
	w.code(0b10, 2) // length code 257: length 2
	if emptyDist {
		w.code(0b00, 2) // distance code 0: length 0
	} else {
		w.code(0b01, 2) // distance codes 0 and 1: length 1
		w.code(0b01, 2)
	}
	w.code(0b0, 1)  // 'a'
	w.code(0b11, 2) // length 3
	w.code(0b0, 1)  // distance 1
	w.code(0b10, 2) // end of block
	// The sync flush a sender strips: an empty stored block, aligned to a
	// byte, without its 00 00 ff ff.
	w.bits(0, 3)
	return w.flush()
}

// deflateBits writes deflate's bit stream: values least significant bit
// first, Huffman codes most significant bit first.
type deflateBits struct {
	out  []byte
	acc  uint64
	nacc uint
}

func (w *deflateBits) bits(v uint64, n uint) {
	w.acc |= v << w.nacc
	w.nacc += n
	for w.nacc >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

func (w *deflateBits) code(c uint64, n uint) {
	var r uint64
	for i := range n {
		r = r<<1 | (c>>i)&1
	}
	w.bits(r, n)
}

func (w *deflateBits) flush() []byte {
	if w.nacc > 0 {
		w.out = append(w.out, byte(w.acc))
	}
	return w.out
}

// TestServeReadsCompressedErrors ends ServeReads with each error a
// compressed message can give, after a good message: without a Poller the
// message is inflated on the goroutine that handles it, which must end
// reading as the reading goroutine does.
func TestServeReadsCompressedErrors(t *testing.T) {
	const limit = 1024
	good := wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), stdDeflate(t, []byte(`{"id":1}`), 6))
	tests := []struct {
		name    string
		frame   []byte
		wantErr error
	}{
		{name: "does not inflate", frame: wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), []byte{0xff, 0xff, 0xff}), wantErr: ErrProtocol},
		{name: "inflates past the limit", frame: wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpBinary), stdDeflate(t, make([]byte, 2*limit), 9)), wantErr: ErrMessageTooLarge},
		{name: "not UTF-8", frame: wstest.MaskedFrame(b0Fin|b0Rsv1|byte(ws.OpText), stdDeflate(t, []byte("\xc3\x28"), 6)), wantErr: ErrInvalidUTF8},
	}
	pollModes(t, func(t *testing.T, p *Poller) {
		s := newTestServer(t, Options{Compression: &Compression{}, ReadLimit: limit})
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cl, c, _ := s.connectDeflate(t, offerGorilla)
				sk := newSink()
				c.ServeReads(p, sk.onMessage, sk.onError)
				cl.sendRaw(good)
				if got := sk.next(t); string(got.payload) != `{"id":1}` {
					t.Fatalf("first message %q", got.payload)
				}
				cl.sendRaw(concat(tt.frame, good))
				if err := sk.end(t); !errors.Is(err, tt.wantErr) {
					t.Fatalf("reading ended with %v, want %v", err, tt.wantErr)
				}
				if c.in.big != nil || c.msgBuf != nil || c.zbuf != nil {
					t.Error("a connection done reading still holds pooled buffers")
				}
				if _, _, err := c.ReadMessage(); !errors.Is(err, tt.wantErr) {
					t.Errorf("ReadMessage after the end: %v, want the same error", err)
				}
			})
		}
	})
}
