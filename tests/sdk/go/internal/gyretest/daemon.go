package gyretest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// daemon is a throwaway helper server (redis-server, nats-server) on a
// loopback port, with a temp dir of its own.
type daemon struct {
	addr   string
	cmd    *exec.Cmd
	dir    string
	exited chan struct{}
}

// startDaemon runs bin with the arguments args(port, dir) gives on a free
// port and returns once ready(addr) holds.
func startDaemon(bin string, args func(port int, dir string) []string, ready func(addr string) bool) (*daemon, error) {
	port, err := freePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gyre-"+bin+"-")
	if err != nil {
		return nil, err
	}
	d := &daemon{
		addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:    dir,
		exited: make(chan struct{}),
	}
	d.cmd = exec.Command(bin, args(port, dir)...)
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("gyretest: start %s: %w", bin, err)
	}
	go func() {
		_ = d.cmd.Wait()
		close(d.exited)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for !ready(d.addr) {
		select {
		case <-d.exited:
			d.stop()
			return nil, fmt.Errorf("gyretest: %s on port %d exited at start", bin, port)
		default:
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("gyretest: %s on port %d was not ready", bin, port)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return d, nil
}

// firstLine tells whether the server at addr, sent send (when not empty),
// answers with a line that starts with prefix.
func firstLine(addr, send, prefix string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if send != "" {
		if _, err := c.Write([]byte(send)); err != nil {
			return false
		}
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, prefix)
}

// stop kills the server and removes its directory.
func (d *daemon) stop() {
	select {
	case <-d.exited:
	default:
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	os.RemoveAll(d.dir)
}
