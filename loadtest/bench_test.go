package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/protocol"
)

// publicationFrame is a WebSocket frame of perFrame publications as a
// server sends them to a fan-out subscriber.
func publicationFrame(tb testing.TB, typ protocol.Type, perFrame, size int) []byte {
	tb.Helper()
	var msgs [][]byte
	for i := range perFrame {
		data := appendPayload(nil, 0, uint64(i+1), time.Now().UnixNano(), size)
		r := &protocol.Reply{Push: &protocol.Push{Channel: "bench-fanout", Pub: &protocol.Publication{Data: data, Offset: uint64(i + 1)}}}
		m, err := protocol.AppendReply(nil, typ, r)
		if err != nil {
			tb.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	payload := protocol.JoinFrame(nil, typ, msgs)
	op := ws.OpText
	if typ == protocol.TypeProtobuf {
		op = ws.OpBinary
	}
	frame, err := ws.CompileFrame(ws.NewFrame(op, true, payload))
	if err != nil {
		tb.Fatal(err)
	}
	return frame
}

func typeName(typ protocol.Type) string { return typ.String() }

// BenchmarkHandleFrame is the client's CPU per delivery once the bytes
// are in memory: frame header, split, recognising the publication,
// reading its stamp, counting. An op is one delivery.
func BenchmarkHandleFrame(b *testing.B) {
	for _, typ := range []protocol.Type{protocol.TypeJSON, protocol.TypeProtobuf} {
		for _, perFrame := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/per_frame=%d", typeName(typ), perFrame), func(b *testing.B) {
				b.ReportAllocs()
				frame := publicationFrame(b, typ, perFrame, 128)
				src := &repeatReader{frame: frame}
				c := &conn{p: &pool{}, typ: typ, br: bufio.NewReaderSize(src, 2048), last: make([]uint64, 1), got: make([]uint64, 1)}
				b.ResetTimer()
				for i := 0; i < b.N; i += perFrame {
					_, bp, err := readMessage(c.br, c.control, &c.rs)
					if err != nil {
						b.Fatal(err)
					}
					if typ == protocol.TypeJSON {
						err = c.handleJSON(*bp, 0)
					} else {
						err = c.handleProtobuf(*bp, 0)
					}
					c.endFrame(0)
					putBuf(bp)
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// repeatReader yields the same frame forever.
type repeatReader struct {
	frame []byte
	off   int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.frame[r.off:])
		n += c
		r.off = (r.off + c) % len(r.frame)
	}
	return n, nil
}

// BenchmarkAbsorb is how many deliveries a second the client takes in
// over real loopback WebSockets when the sender is as fast as it can be
// (pre-built frames written in a loop): an op is one delivery, and
// deliveries/s is the client's ceiling on this machine, with the sender
// sharing its cores.
func BenchmarkAbsorb(b *testing.B) {
	for _, typ := range []protocol.Type{protocol.TypeJSON, protocol.TypeProtobuf} {
		for _, conns := range []int{1, 100} {
			for _, perFrame := range []int{1, 16} {
				name := fmt.Sprintf("%s/conns=%d/per_frame=%d", typeName(typ), conns, perFrame)
				b.Run(name, func(b *testing.B) { benchAbsorb(b, typ, conns, perFrame) })
			}
		}
	}
}

func benchAbsorb(b *testing.B, typ protocol.Type, conns, perFrame int) {
	b.ReportAllocs()
	frame := publicationFrame(b, typ, perFrame, 128)
	frames := (b.N + conns*perFrame - 1) / (conns * perFrame)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go blast(ln, frame, frames)
	p := &pool{}
	cs := make([]*conn, conns)
	for i := range cs {
		cs[i] = &conn{p: p, typ: typ, last: make([]uint64, 1), got: make([]uint64, 1)}
		if err := cs[i].dial(context.Background(), "ws://"+ln.Addr().String()+"/", newDialer(nil), false); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.run()
		}()
	}
	wg.Wait()
	took := time.Since(start)
	b.StopTimer()
	var got int64
	for _, c := range cs {
		got += c.received.Load()
		c.nc.Close()
	}
	if want := int64(frames * conns * perFrame); got != want {
		b.Fatalf("received %d, want %d", got, want)
	}
	b.ReportMetric(float64(got)/took.Seconds(), "deliveries/s")
}

// blast accepts WebSocket connections and writes frame n times to each,
// then closes it.
func blast(ln net.Listener, frame []byte, n int) {
	up := ws.Upgrader{Protocol: func([]byte) bool { return true }}
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer nc.Close()
			if _, err := up.Upgrade(nc); err != nil {
				return
			}
			w := bufio.NewWriterSize(nc, 64<<10)
			for range n {
				if _, err := w.Write(frame); err != nil {
					return
				}
			}
			_ = w.Flush()
		}()
	}
}

var _ io.Reader = (*repeatReader)(nil)

func BenchmarkPBPublicationData(b *testing.B) {
	b.ReportAllocs()
	r := &protocol.Reply{Push: &protocol.Push{Channel: "bench-fanout", Pub: &protocol.Publication{Data: appendPayload(nil, 0, 1, 1, 128), Offset: 9}}}
	msg, _ := r.MarshalVT()
	for b.Loop() {
		if _, ok := pbPublicationData(msg); !ok {
			b.Fatal("not found")
		}
	}
	_ = bytes.MinRead
}

// BenchmarkInflate is BenchmarkHandleFrame for compressed messages: one
// publication of a 1 KB JSON feed document per message, inflated (with a
// pooled inflater, and the connection's window with context takeover) or
// found in the process's cache, and handled. An op is one delivery.
func BenchmarkInflate(b *testing.B) {
	for _, tt := range []struct {
		name     string
		takeover bool
		shared   *inflatedCache
	}{
		{"inflate", false, nil},
		{"inflate_takeover", true, nil},
		{"cached", false, &inflatedCache{}},
	} {
		takeover := tt.takeover
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			t := &testing.T{}
			msg := publications(t, 1, 1, 1, 1024)[0]
			// A run of messages, repeated: with context takeover the
			// first ones start from an empty window, the others from a
			// full one; the stream restarts with the repetition.
			d := &deflater{takeover: takeover}
			frames := d.frames(t, []serverMessage{{payload: msg, compressed: true}}, false)
			src := &repeatReader{frame: frames}
			c := &conn{p: &pool{}, typ: protocol.TypeJSON, br: bufio.NewReaderSize(src, 2048), last: make([]uint64, 1), got: make([]uint64, 1)}
			c.rs.z = &inflateState{takeover: takeover, windowSize: 1 << 15, limit: maxMessage, shared: tt.shared}
			b.SetBytes(int64(len(msg)))
			b.ResetTimer()
			for range b.N {
				_, bp, err := readMessage(c.br, c.control, &c.rs)
				if err != nil {
					b.Fatal(err)
				}
				err = c.handleJSON(*bp, 0)
				c.endFrame(0)
				putBuf(bp)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.rs.Wire)/float64(b.N), "wire-B/op")
		})
	}
}
