package redistest

import (
	"fmt"
	"net"
	"strconv"
)

// clusterBusOffset is how far above its client port a cluster node
// listens for the cluster bus.
const clusterBusOffset = 10000

// freePort returns a loopback port nobody listens on. With bus set, the
// port 10000 above it must be free too, for a cluster node's bus.
func freePort(bus bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !bus {
			l.Close()
			return port, nil
		}
		if port+clusterBusOffset > 65535 {
			l.Close()
			continue
		}
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+clusterBusOffset))
		l.Close()
		if err != nil {
			continue
		}
		l2.Close()
		return port, nil
	}
	return 0, fmt.Errorf("redistest: no free port pair for a cluster node")
}
