package gyretest

import (
	"errors"
	"os/exec"
	"strconv"
)

// RedisMissing explains why tests on the Redis engine cannot run here, or
// is empty when redis-server is installed.
func RedisMissing() string {
	if _, err := exec.LookPath("redis-server"); err == nil {
		return ""
	}
	return "redis-server not found: install it with scripts/install-redis, or set GYRE_SKIP_REDIS=1 to skip Redis tests"
}

// Redis is a throwaway redis-server on a loopback port, without
// persistence.
type Redis struct {
	// Addr is host:port, as gyre's engine.redis.address takes it.
	Addr string

	d *daemon
}

// StartRedis starts redis-server on a free port and returns once it answers
// PING.
func StartRedis() (*Redis, error) {
	if missing := RedisMissing(); missing != "" {
		return nil, errors.New("gyretest: " + missing)
	}
	d, err := startDaemon("redis-server", func(port int, dir string) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", dir}
	}, func(addr string) bool { return firstLine(addr, "PING\r\n", "+PONG\r\n") })
	if err != nil {
		return nil, err
	}
	return &Redis{Addr: d.addr, d: d}, nil
}

// Stop kills the server and removes its directory.
func (r *Redis) Stop() { r.d.stop() }
