package gyretest

import (
	"errors"
	"os/exec"
	"strconv"
)

// NATSMissing explains why tests on the NATS broker cannot run here, or is
// empty when nats-server is installed.
func NATSMissing() string {
	if _, err := exec.LookPath("nats-server"); err == nil {
		return ""
	}
	return "nats-server not found: install it with scripts/install-nats, or set GYRE_SKIP_NATS=1 to skip NATS tests"
}

// NATS is a throwaway nats-server with JetStream on a loopback port, its
// store in a temp dir.
type NATS struct {
	// URL is nats://host:port, as gyre's broker.nats.url takes it.
	URL string

	d *daemon
}

// StartNATS starts nats-server with JetStream on a free port and returns
// once it greets a client: it sends its INFO line once it accepts them.
func StartNATS() (*NATS, error) {
	if missing := NATSMissing(); missing != "" {
		return nil, errors.New("gyretest: " + missing)
	}
	d, err := startDaemon("nats-server", func(port int, dir string) []string {
		return []string{"-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", dir}
	}, func(addr string) bool { return firstLine(addr, "", "INFO ") })
	if err != nil {
		return nil, err
	}
	return &NATS{URL: "nats://" + d.addr, d: d}, nil
}

// Stop kills the server and removes its directory.
func (n *NATS) Stop() { n.d.stop() }
