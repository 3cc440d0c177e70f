package loadtest

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// bindAddressOnly makes the bind to a source address leave the port to
// connect, which picks one free for the whole 4-tuple. A plain bind to
// port 0 must find a port free for any destination, a longer search
// and far fewer ports.
func bindAddressOnly(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	})
	if err != nil {
		return err
	}
	return serr
}
