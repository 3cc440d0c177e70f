//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package frontdoor

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// errNoPeek means the connection cannot be peeked at.
var errNoPeek = errors.New("frontdoor: cannot peek at this connection")

// peek waits until nc has input and copies what is there into buf without
// consuming it. It honours nc's read deadline.
func peek(nc net.Conn, buf []byte) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, errNoPeek
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, errNoPeek
	}
	var n int
	var rerr error
	err = raw.Read(func(fd uintptr) bool {
		for {
			n, _, rerr = syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK)
			if rerr != syscall.EINTR {
				return rerr != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
