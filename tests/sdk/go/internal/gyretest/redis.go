package gyretest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"
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

	cmd    *exec.Cmd
	dir    string
	exited chan struct{}
}

// StartRedis starts redis-server on a free port and returns once it answers
// PING.
func StartRedis() (*Redis, error) {
	if missing := RedisMissing(); missing != "" {
		return nil, errors.New("gyretest: " + missing)
	}
	port, err := freePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gyre-redis-")
	if err != nil {
		return nil, err
	}
	r := &Redis{
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:    dir,
		exited: make(chan struct{}),
	}
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := r.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("gyretest: start redis-server: %w", err)
	}
	go func() {
		_ = r.cmd.Wait()
		close(r.exited)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for !r.pong() {
		select {
		case <-r.exited:
			r.Stop()
			return nil, fmt.Errorf("gyretest: redis-server on port %d exited at start", port)
		default:
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, fmt.Errorf("gyretest: redis-server on port %d did not answer PING", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r, nil
}

func (r *Redis) pong() bool {
	c, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}

// Stop kills the server and removes its directory.
func (r *Redis) Stop() {
	select {
	case <-r.exited:
	default:
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	os.RemoveAll(r.dir)
}
