// Package testproc runs the server processes that tests start (redis-server,
// nats-server): started and waited for until they answer, then killed,
// stopped, paused, resumed and started again on the same arguments.
package testproc

import (
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// StartTimeout bounds how long a process may take to answer.
const StartTimeout = 20 * time.Second

// Proc is one server process. Its methods are safe for concurrent use.
type Proc struct {
	// Name is the program run ("redis-server"); Args its arguments.
	Name string
	Args []string
	// Addr names the process in errors.
	Addr string
	// Ready reports whether the process answers; Log returns the end of
	// its log for errors.
	Ready func() error
	Log   func() string
	// DieWithParent has the system kill the process should the test
	// binary die first (Linux), for processes shared by a whole binary.
	DieWithParent bool

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start runs the process and waits until Ready answers, failing if it
// exits first or does not answer within StartTimeout.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("testproc: %s on %s already running", p.Name, p.Addr)
	}
	cmd := exec.Command(p.Name, p.Args...)
	if p.DieWithParent {
		killWithParent(cmd)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testproc: start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	deadline := time.Now().Add(StartTimeout)
	for {
		if err := p.Ready(); err == nil {
			return nil
		}
		select {
		case <-done:
			p.cmd = nil
			return fmt.Errorf("testproc: %s on %s exited at start; log: %s", p.Name, p.Addr, p.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testproc: %s on %s did not answer; log: %s", p.Name, p.Addr, p.Log())
		}
	}
}

// Kill ends the process at once with SIGKILL, as a crash would, and waits
// for it. Killing a stopped process does nothing.
func (p *Proc) Kill() { p.signalAndWait(syscall.SIGKILL) }

// Stop ends the process with SIGTERM (a clean shutdown) and waits for it.
func (p *Proc) Stop() { p.signalAndWait(syscall.SIGTERM) }

func (p *Proc) signalAndWait(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a paused process cannot handle SIGTERM
	_ = p.cmd.Process.Signal(sig)
	<-p.done
	p.cmd, p.done = nil, nil
}

// Pause freezes the process (SIGSTOP): connections stay open but nothing
// answers, as with a hung server or a network partition.
func (p *Proc) Pause() { p.signal(syscall.SIGSTOP) }

// Resume continues a paused process.
func (p *Proc) Resume() { p.signal(syscall.SIGCONT) }

func (p *Proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// Running reports whether the process is alive.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}
