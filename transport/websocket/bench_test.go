package websocket

import (
	"bytes"
	"io"
	"strconv"
	"testing"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/internal/wstest"
)

// benchConn returns the server side of a connection whose client discards
// everything, over plain TCP or TLS.
func benchConn(b *testing.B, tls bool, protocols ...string) *Conn {
	b.Helper()
	s := newTestServer(b, Options{})
	if tls {
		s = newTLSTestServer(b, Options{})
	}
	cl, c := s.connect(b, "/", protocols...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, cl.r)
	}()
	b.Cleanup(func() {
		_ = c.Close(1000, "")
		<-done
	})
	return c
}

func BenchmarkWriteFrame1K(b *testing.B) {
	for _, mode := range []struct {
		name string
		tls  bool
	}{{"tcp", false}, {"tls", true}} {
		b.Run(mode.name, func(b *testing.B) {
			c := benchConn(b, mode.tls)
			payload := bytes.Repeat([]byte("x"), 1024)
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				if err := c.WriteFrame(payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteFrameCoalesced writes 100 pending 128-byte messages as one
// frame: joined by the caller into one buffer, or handed over as parts.
func BenchmarkWriteFrameCoalesced(b *testing.B) {
	const count, size = 100, 128
	msgs := make([][]byte, count)
	for i := range msgs {
		msgs[i] = bytes.Repeat([]byte{byte('a' + i%26)}, size)
	}
	newline := []byte("\n")
	parts := make([][]byte, 0, 2*count)
	for i, m := range msgs {
		if i > 0 {
			parts = append(parts, newline)
		}
		parts = append(parts, m)
	}
	b.Run("joined", func(b *testing.B) {
		c := benchConn(b, false)
		buf := make([]byte, 0, count*(size+1))
		b.ReportAllocs()
		b.SetBytes(count * size)
		for b.Loop() {
			buf = buf[:0]
			for i, m := range msgs {
				if i > 0 {
					buf = append(buf, '\n')
				}
				buf = append(buf, m...)
			}
			if err := c.WriteFrame(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parts", func(b *testing.B) {
		c := benchConn(b, false)
		b.ReportAllocs()
		b.SetBytes(count * size)
		for b.Loop() {
			if err := c.WriteFrameParts(parts); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadMessage reads 128-byte text messages that a client streams
// in bursts of 1,000 frames.
func BenchmarkReadMessage(b *testing.B) {
	for _, size := range []int{128, 16 << 10} {
		b.Run(sizeName(size), func(b *testing.B) {
			s := newTestServer(b, Options{})
			cl, c := s.connect(b, "/")
			const burst = 1000
			var frames bytes.Buffer
			for range burst {
				frames.Write(wstest.MaskedFrame(0x80|byte(ws.OpText), bytes.Repeat([]byte("r"), size)))
			}
			stop := make(chan struct{})
			go func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := cl.conn.Write(frames.Bytes()); err != nil {
						return
					}
				}
			}()
			b.Cleanup(func() { close(stop); _ = cl.conn.Close() })
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, _, err := c.ReadMessage(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1<<10 {
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
