package websocket

import (
	"bytes"
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTryWriteFrameSockets writes a 200-byte message to 1,000
// loopback connections in turn, as a broadcast to personal channels
// does, and reports the CPU time of the writing thread per write
// (cpu-ns/write): what the kernel charges the sender for one small
// write on loopback, where it also runs the receiving side's TCP, is
// the floor of a delivery's cost. "write" is that floor, write(2) alone
// on the descriptor; "TryWriteFrame" is the path deliveries take.
func BenchmarkTryWriteFrameSockets(b *testing.B) {
	const conns, size = 1000, 200
	s := newTestServer(b, Options{})
	cs := make([]*Conn, conns)
	fds := make([]int, conns)
	for i := range cs {
		cl, c := s.connect(b, "/")
		go func() { _, _ = io.Copy(io.Discard, cl.r) }()
		cs[i] = c
		if err := c.raw.Control(func(fd uintptr) { fds[i] = int(fd) }); err != nil {
			b.Fatal(err)
		}
	}
	frame := tryFrame(bytes.Repeat([]byte("x"), size))
	wire := append([]byte(nil), frame...)
	n := putHeader(wire, cs[0].dataOp, size)
	wire = append(wire[:n], frame[FrameHeaderRoom:]...)

	for _, v := range []struct {
		name  string
		write func(i int) error
	}{
		{"write", func(i int) error {
			_, err := syscall.Write(fds[i], wire)
			return err
		}},
		{"TryWriteFrame", func(i int) error {
			complete, err := cs[i].TryWriteFrame(frame)
			if err == nil && !complete {
				err = cs[i].FlushFrame()
			}
			return err
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			// The thread's own CPU time: the readers run on others.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			before := threadCPU(b)
			i := 0
			for b.Loop() {
				if err := v.write(i); err != nil {
					b.Fatal(err)
				}
				if i++; i == conns {
					i = 0
				}
			}
			b.ReportMetric(float64(threadCPU(b)-before)/float64(b.N), "cpu-ns/write")
		})
	}
}

// threadCPU is the calling thread's user and system time.
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
