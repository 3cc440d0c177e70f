package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// StartShared starts redis-server as Start does, but for a whole test
// binary rather than one test: its files go in a directory under dir, and
// the caller kills it (Kill) when the tests are done. Call Require (or
// Installed) first.
func StartShared(dir string, args ...string) (*Server, error) {
	port, err := freePort(false)
	if err != nil {
		return nil, err
	}
	return launchShared(dir, port, args...)
}

// StartSharedCluster starts a Redis Cluster of n masters as StartCluster
// does, for a whole test binary: the caller kills it (Cluster.Kill). On
// error no process is left running.
func StartSharedCluster(dir string, n int) (*Cluster, error) {
	c, err := formCluster(n, 0, func(port int, args ...string) (*Server, error) {
		return launchShared(dir, port, args...)
	})
	if err != nil {
		c.Kill()
		return nil, err
	}
	return c, nil
}

// launchShared starts a server without persistence in its own directory
// under dir.
func launchShared(dir string, port int, args ...string) (*Server, error) {
	own := filepath.Join(dir, "redis-"+strconv.Itoa(port))
	if err := os.MkdirAll(own, 0o700); err != nil {
		return nil, fmt.Errorf("redistest: server directory: %w", err)
	}
	return launch(own, port, "", redisArgs(args), true)
}
