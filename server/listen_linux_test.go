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
	lraw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	_ = lraw.Control(func(fd uintptr) {
		if p, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PROTOCOL); err != nil || p != syscall.IPPROTO_TCP {
			t.Errorf("the listening socket's protocol is %d (%v), want TCP (%d)", p, err, syscall.IPPROTO_TCP)
		}
	})
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
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.Control(func(fd uintptr) {
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
			got, err := syscall.GetsockoptInt(int(fd), o.level, o.opt)
			if err != nil || got != o.want {
				t.Errorf("%s = %d (%v), want %d", o.name, got, err, o.want)
			}
		}
	})
}
