package websocket

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/httphead"
	"github.com/gobwas/ws"
)

// testPayloads are messages of every kind a frame may carry.
type testPayloads struct {
	json    []byte // compresses well
	records []byte // 300 KiB of JSON records with random tokens: compresses to a third
	random  []byte // does not compress
}

func newTestPayloads(seed byte) testPayloads {
	rng := rand.New(rand.NewChaCha8([32]byte{seed}))
	p := testPayloads{
		json:   []byte(strings.Repeat(`{"channel":"prices","data":{"bid":1.2345,"ask":1.2346}}`, 40)),
		random: make([]byte, 3<<10),
	}
	for i := 0; len(p.records) < 300<<10; i++ {
		p.records = fmt.Appendf(p.records, `{"id":%d,"token":"%016x"},`, i, rng.Uint64())
	}
	for i := range p.random {
		p.random[i] = byte(rng.Uint32())
	}
	return p
}

// readServerFrames parses frames as a client does, with gobwas/ws, and
// checks what every server frame must be: final and unmasked, RSV2 and
// RSV3 clear.
func readServerFrames(t *testing.T, r io.Reader, n int) []ws.Frame {
	t.Helper()
	frames := make([]ws.Frame, 0, n)
	for range n {
		f, err := ws.ReadFrame(r)
		if err != nil {
			t.Fatalf("frame %d: %v", len(frames), err)
		}
		if !f.Header.Fin || f.Header.Masked || f.Header.Rsv2() || f.Header.Rsv3() {
			t.Fatalf("frame %d: fin=%v masked=%v rsv=%#x", len(frames), f.Header.Fin, f.Header.Masked, f.Header.Rsv)
		}
		frames = append(frames, f)
	}
	return frames
}

// messageOf is what a frame carries, inflated with the standard library
// when RSV1 says it is compressed.
func messageOf(t *testing.T, f ws.Frame) []byte {
	t.Helper()
	if !f.Header.Rsv1() {
		return f.Payload
	}
	p, err := stdInflate(f.Payload)
	if err != nil {
		t.Fatalf("a compressed frame does not inflate: %v", err)
	}
	return p
}

func TestAppendFrame(t *testing.T) {
	p := newTestPayloads(1)
	tests := []struct {
		name       string
		minSize    int
		payload    []byte
		binary     bool
		compressed bool
	}{
		{name: "empty", payload: nil},
		{name: "under 8 bytes", payload: []byte("aaaaaaa")},
		{name: "under MinSize", minSize: 4096, payload: p.json},
		{name: "at MinSize", minSize: len(p.json), payload: p.json, compressed: true},
		{name: "json", payload: p.json, compressed: true},
		{name: "binary", payload: p.json, binary: true, compressed: true},
		{name: "incompressible", payload: p.random},
		{name: "incompressible, 125 bytes", payload: p.random[:125]},
		{name: "incompressible, 126 bytes", payload: p.random[:126]},
		{name: "64-bit length compressed", payload: p.records, compressed: true},
		{name: "16-bit length compressed", payload: p.records[:20000], compressed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z := &Compression{Level: 1, MinSize: tt.minSize}
			prefix := []byte("kept")
			frame := z.AppendFrame(bytes.Clone(prefix), tt.binary, tt.payload)
			if !bytes.HasPrefix(frame, prefix) {
				t.Fatal("AppendFrame lost what dst held")
			}
			r := bytes.NewReader(frame[len(prefix):])
			f := readServerFrames(t, r, 1)[0]
			if r.Len() != 0 {
				t.Fatalf("%d bytes after the frame", r.Len())
			}
			wantOp := ws.OpText
			if tt.binary {
				wantOp = ws.OpBinary
			}
			if f.Header.OpCode != wantOp || f.Header.Rsv1() != tt.compressed {
				t.Errorf("opcode %v RSV1 %v, want %v %v", f.Header.OpCode, f.Header.Rsv1(), wantOp, tt.compressed)
			}
			if tt.compressed && len(f.Payload) >= len(tt.payload) {
				t.Errorf("compressed to %d bytes from %d", len(f.Payload), len(tt.payload))
			}
			if got := messageOf(t, f); !bytes.Equal(got, tt.payload) {
				t.Errorf("frame carries %d bytes %q, want %d", len(got), abbrev(got), len(tt.payload))
			}
		})
	}
}

// TestAppendFrameLevels checks every level decodes with the standard
// library, and that out-of-range levels fall back to a working one. Level
// 0 only stores, which never makes a message shorter, so its frames are
// plain.
func TestAppendFrameLevels(t *testing.T) {
	p := newTestPayloads(2)
	for level := -3; level <= 10; level++ {
		t.Run(strconv.Itoa(level), func(t *testing.T) {
			z := &Compression{Level: level}
			for _, payload := range [][]byte{p.json, p.records[:50000]} {
				// Twice: the second time with a pooled compressor.
				for range 2 {
					f := readServerFrames(t, bytes.NewReader(z.AppendFrame(nil, false, payload)), 1)[0]
					if f.Header.Rsv1() != (level != 0) {
						t.Errorf("RSV1 %v at level %d", f.Header.Rsv1(), level)
					}
					if got := messageOf(t, f); !bytes.Equal(got, payload) {
						t.Fatalf("frame carries %d bytes, want %d", len(got), len(payload))
					}
				}
			}
		})
	}
}

// TestWriteFramesCompressed writes many frames, compressed and not, under
// and over the size at which they are copied, in one call.
func TestWriteFramesCompressed(t *testing.T) {
	p := newTestPayloads(3)
	payloads := [][]byte{
		[]byte("{}"),            // plain, under MinSize
		p.json,                  // compressed, small
		p.random,                // plain, over 2 KiB
		p.records[:10000],       // compressed, over 2 KiB
		[]byte(`{"id":1}`),      // plain
		p.records,               // compressed, 64-bit length
		p.random[:copyPartMax],  // plain, exactly 2 KiB
		[]byte("tail message"),  // plain
		bytes.Repeat(p.json, 5), // compressed
	}
	opts := Options{Compression: &Compression{Level: 5, MinSize: 16}}
	transports(t, opts, func(t *testing.T, s *testServer) {
		for _, sub := range []string{SubprotocolJSON, SubprotocolProtobuf} {
			t.Run(sub, func(t *testing.T) {
				cl, c := s.connectDeflateTLS(t, offerGorilla, sub)
				binary := sub == SubprotocolProtobuf
				frames := make([]string, len(payloads))
				for i, m := range payloads {
					frames[i] = string(c.Compression().AppendFrame(nil, binary, m))
				}
				done := make(chan error, 1)
				go func() {
					// Nothing from an empty call: the client reads the
					// frames of the second one first.
					if err := c.WriteFrames(nil); err != nil {
						done <- err
						return
					}
					done <- c.WriteFrames(frames)
				}()
				got := readServerFrames(t, cl.r, len(frames))
				if err := <-done; err != nil {
					t.Fatalf("WriteFrames: %v", err)
				}
				wantOp := ws.OpText
				if binary {
					wantOp = ws.OpBinary
				}
				for i, f := range got {
					wantRsv1 := frames[i][0]&rsv1 != 0
					if f.Header.OpCode != wantOp || f.Header.Rsv1() != wantRsv1 {
						t.Errorf("frame %d: opcode %v RSV1 %v, want %v %v", i, f.Header.OpCode, f.Header.Rsv1(), wantOp, wantRsv1)
					}
					if m := messageOf(t, f); !bytes.Equal(m, payloads[i]) {
						t.Errorf("frame %d carries %d bytes, want %d", i, len(m), len(payloads[i]))
					}
				}
				compressed := 0
				for _, f := range got {
					if f.Header.Rsv1() {
						compressed++
					}
				}
				if compressed != 4 {
					t.Errorf("%d frames compressed, want 4", compressed)
				}
			})
		}
	})
}

// connectDeflateTLS is connectDeflate on the test server's TLS or plain
// listener, with a subprotocol: gobwas/ws dials, offering
// permessage-deflate.
func (s *testServer) connectDeflateTLS(t *testing.T, offer, subprotocol string) (*client, *Conn) {
	t.Helper()
	exts, ok := httphead.ParseOptions([]byte(offer), nil)
	if !ok {
		t.Fatalf("offer %q does not parse", offer)
	}
	d := ws.Dialer{Protocols: []string{subprotocol}, Extensions: exts}
	cl := s.dialWith(t, "/", d)
	u := s.accept(t)
	if u.err != nil {
		t.Fatalf("upgrade: %v", u.err)
	}
	t.Cleanup(func() { _ = u.conn.Close(1000, "") })
	if u.conn.Compression() == nil {
		t.Fatal("compression was not negotiated")
	}
	return cl, u.conn
}

// TestWriteFrameCompressed checks WriteFrame and WriteFrameParts on a
// connection that negotiated compression: each message is compressed for
// the connection, when long enough.
func TestWriteFrameCompressed(t *testing.T) {
	p := newTestPayloads(4)
	opts := Options{Compression: &Compression{Level: 1, MinSize: 64}}
	transports(t, opts, func(t *testing.T, s *testServer) {
		for _, sub := range []string{SubprotocolJSON, SubprotocolProtobuf} {
			t.Run(sub, func(t *testing.T) {
				cl, c := s.connectDeflateTLS(t, offerBrowser, sub)
				wantOp := ws.OpText
				if sub == SubprotocolProtobuf {
					wantOp = ws.OpBinary
				}
				parts := [][]byte{p.json[:100], []byte("\n"), p.json, []byte("\n"), p.random}
				writes := []struct {
					name       string
					write      func() error
					want       []byte
					compressed bool
				}{
					{"WriteFrame short", func() error { return c.WriteFrame([]byte("{}")) }, []byte("{}"), false},
					{"WriteFrame json", func() error { return c.WriteFrame(p.json) }, p.json, true},
					{"WriteFrame incompressible", func() error { return c.WriteFrame(p.random) }, p.random, false},
					{"WriteFrame large", func() error { return c.WriteFrame(p.records) }, p.records, true},
					{"WriteFrameParts", func() error { return c.WriteFrameParts(parts) }, bytes.Join(parts, nil), true},
					{"WriteFrameParts short", func() error { return c.WriteFrameParts([][]byte{[]byte("a"), []byte("b")}) }, []byte("ab"), false},
				}
				for _, w := range writes {
					done := make(chan error, 1)
					go func() { done <- w.write() }()
					f := readServerFrames(t, cl.r, 1)[0]
					if err := <-done; err != nil {
						t.Fatalf("%s: %v", w.name, err)
					}
					if f.Header.OpCode != wantOp || f.Header.Rsv1() != w.compressed {
						t.Errorf("%s: opcode %v RSV1 %v, want %v %v", w.name, f.Header.OpCode, f.Header.Rsv1(), wantOp, w.compressed)
					}
					if m := messageOf(t, f); !bytes.Equal(m, w.want) {
						t.Errorf("%s: %d bytes, want %d", w.name, len(m), len(w.want))
					}
				}
			})
		}
	})
}

// TestWriteFramesShared sends the same frames, made once, to many
// connections at once, as a broadcast does: every client gets them whole
// and the frames are never written to.
func TestWriteFramesShared(t *testing.T) {
	p := newTestPayloads(5)
	z := &Compression{Level: 1, MinSize: 32}
	s := newTestServer(t, Options{Compression: z})
	payloads := [][]byte{p.json, []byte("{}"), p.records[:40000], p.random}
	frames := make([]string, len(payloads))
	for i, m := range payloads {
		frames[i] = string(z.AppendFrame(nil, false, m))
	}
	orig := make([]string, len(frames))
	for i, f := range frames {
		orig[i] = strings.Clone(f)
	}
	const conns, rounds = 16, 5
	var wg sync.WaitGroup
	for i := range conns {
		cl, c, _ := s.connectDeflate(t, offerGorilla)
		if c.Compression() != z {
			t.Fatal("the connection's Compression is not the server's")
		}
		wg.Go(func() {
			for range rounds {
				if err := c.WriteFrames(frames); err != nil {
					t.Errorf("connection %d: WriteFrames: %v", i, err)
					return
				}
			}
		})
		wg.Go(func() {
			_ = cl.conn.SetReadDeadline(time.Now().Add(hangTimeout))
			for r := range rounds {
				for j := range frames {
					f, err := ws.ReadFrame(cl.r)
					if err != nil {
						t.Errorf("connection %d round %d frame %d: %v", i, r, j, err)
						return
					}
					if !bytes.Equal(f.Payload, []byte(orig[j][len(orig[j])-len(f.Payload):])) {
						t.Errorf("connection %d round %d frame %d differs from the frame sent", i, r, j)
					}
				}
			}
		})
	}
	wg.Wait()
	for i := range frames {
		if frames[i] != orig[i] {
			t.Errorf("frame %d changed while it was being sent", i)
		}
	}
}

// TestAppendFrameAllocations keeps compressing a message once for a
// broadcast free of allocations when dst has room.
func TestAppendFrameAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	p := newTestPayloads(6)
	z := &Compression{Level: 1}
	dst := make([]byte, 0, 2*len(p.records))
	for _, payload := range [][]byte{p.json, p.records, p.random} {
		allocs := testing.AllocsPerRun(50, func() { dst = z.AppendFrame(dst[:0], false, payload) })
		if allocs != 0 {
			t.Errorf("%d bytes: %v allocations, want 0", len(payload), allocs)
		}
	}
}
