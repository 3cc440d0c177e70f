//go:build !linux

package loadtest

import "syscall"

// bindAddressOnly does nothing where IP_BIND_ADDRESS_NO_PORT is missing:
// the bind picks the port.
func bindAddressOnly(_, _ string, _ syscall.RawConn) error { return nil }
