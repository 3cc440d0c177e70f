package server

import (
	"net"
	"syscall"
)

// keepAliveOnListener sets TCP keep-alive once, on the listening socket. Go
// sets it on every accepted socket instead, four setsockopt calls per
// connection; Linux copies a listening socket's options to the sockets it
// accepts, so this does the same for nothing. The values are Go's defaults.
func keepAliveOnListener() net.ListenConfig {
	return net.ListenConfig{
		KeepAlive: -1,
		Control: func(_, _ string, c syscall.RawConn) error {
			var err error
			cerr := c.Control(func(fd uintptr) {
				for _, o := range []struct{ level, opt, value int }{
					{syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, 15},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, 15},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, 9},
				} {
					if err == nil {
						err = syscall.SetsockoptInt(int(fd), o.level, o.opt, o.value)
					}
				}
			})
			if cerr != nil {
				return cerr
			}
			return err
		},
	}
}
