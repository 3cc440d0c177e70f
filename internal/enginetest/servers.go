package enginetest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// The servers the variants run on, each started at its first use.
var (
	redisOne = &servers{name: "redis-server", start: func(dir string) ([]string, func(), error) {
		s, err := redistest.StartShared(dir)
		if err != nil {
			return nil, nil, err
		}
		return []string{s.Addr}, s.Kill, nil
	}}
	redisTwo = &servers{name: "two redis-servers", start: func(dir string) ([]string, func(), error) {
		a, err := redistest.StartShared(dir)
		if err != nil {
			return nil, nil, err
		}
		b, err := redistest.StartShared(dir)
		if err != nil {
			a.Kill()
			return nil, nil, err
		}
		return []string{a.Addr, b.Addr}, func() { a.Kill(); b.Kill() }, nil
	}}
	natsOne = &servers{name: "nats-server", start: func(dir string) ([]string, func(), error) {
		s, err := natstest.StartDir(dir)
		if err != nil {
			return nil, nil, err
		}
		return []string{s.URL}, s.Kill, nil
	}}
	redisCluster = &servers{name: "Redis Cluster", start: func(dir string) ([]string, func(), error) {
		c, err := redistest.StartSharedCluster(dir, 3)
		if err != nil {
			return nil, nil, err
		}
		return c.Addrs(), c.Kill, nil
	}}
)

// servers are processes that every test of the binary shares. start runs
// them with their files under dir and returns their addresses and what
// stops them.
type servers struct {
	name  string
	start func(dir string) (addrs []string, stop func(), err error)

	once sync.Once
	list []string
	err  error
}

// addrs starts the servers if no test did yet and returns their
// addresses; it fails t if they could not start.
func (s *servers) addrs(t testing.TB) []string {
	t.Helper()
	s.once.Do(func() { s.list, s.err = s.run() })
	if s.err != nil {
		t.Fatalf("enginetest: start %s: %v", s.name, s.err)
	}
	return s.list
}

func (s *servers) run() ([]string, error) {
	dir, err := os.MkdirTemp("", "gyre-enginetest-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	list, stop, err := s.start(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	onStop(func() {
		stop()
		_ = os.RemoveAll(dir)
	})
	return list, nil
}

var (
	stopMu sync.Mutex
	stops  []func()
)

func onStop(f func()) {
	stopMu.Lock()
	defer stopMu.Unlock()
	stops = append(stops, f)
}

// stopServers stops every server started, once the tests are done.
func stopServers() {
	stopMu.Lock()
	defer stopMu.Unlock()
	for _, f := range stops {
		f()
	}
	stops = nil
}

// SharedRedis is the address of the redis-server that the tests of the
// binary share, started at its first use, for suites that configure a
// whole server rather than a node (server/consume/consumetest). Main
// stops it.
func SharedRedis(t testing.TB) string {
	t.Helper()
	redistest.Require(t)
	return redisOne.addrs(t)[0]
}

// SharedNATS is the URL of the nats-server (with JetStream) that the
// tests of the binary share, as SharedRedis.
func SharedNATS(t testing.TB) string {
	t.Helper()
	natstest.Require(t)
	return natsOne.addrs(t)[0]
}
