//go:build !unix

package websocket

import (
	"net"
	"syscall"
)

// rawOf returns nil: TryWriteFrame is not implemented on this system.
func rawOf(net.Conn) syscall.RawConn { return nil }

func (c *Conn) writeNow([]byte) (int, error) { return 0, ErrClosed }
