package server

import (
	"context"
	"net"
	"syscall"
	"testing"
)

// TestAcceptedSockets: the keep-alive set on the listening socket reaches
// the sockets it accepts, which are plain TCP, not MPTCP in fallback.
func TestAcceptedSockets(t *testing.T) {
	lc := listenConfig()
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if p, err := sockopt(t, ln.(*net.TCPListener), syscall.SOL_SOCKET, syscall.SO_PROTOCOL); err != nil || p != syscall.IPPROTO_TCP {
		t.Errorf("the listening socket's protocol is %d (%v), want TCP (%d)", p, err, syscall.IPPROTO_TCP)
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, o := range []struct {
		name       string
		level, opt int
		want       int
	}{
		{"SO_KEEPALIVE", syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
		{"TCP_KEEPIDLE", syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, 15},
		{"TCP_KEEPINTVL", syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, 15},
		{"TCP_KEEPCNT", syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, 9},
		{"TCP_NODELAY", syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1},
	} {
		if got, err := sockopt(t, nc.(*net.TCPConn), o.level, o.opt); err != nil || got != o.want {
			t.Errorf("%s = %d (%v), want %d", o.name, got, err, o.want)
		}
	}
}

// sockopt reads an integer option of c's socket.
func sockopt(t *testing.T, c syscall.Conn, level, opt int) (int, error) {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) { v, gerr = syscall.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	return v, gerr
}
