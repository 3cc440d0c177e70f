//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package frontdoor

import (
	"errors"
	"net"
)

var errNoPeek = errors.New("frontdoor: cannot peek at connections on this system")

func peek(net.Conn, []byte) (int, error) { return 0, errNoPeek }
