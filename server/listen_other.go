//go:build !linux

package server

import "net"

// keepAliveOnListener keeps Go's defaults: keep-alive set on each accepted socket.
func keepAliveOnListener() net.ListenConfig { return net.ListenConfig{} }
