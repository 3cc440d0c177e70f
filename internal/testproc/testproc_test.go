package testproc

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestLifecycle runs a real process (sleep) through start, pause,
// resume, kill and a start again.
func TestLifecycle(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep program")
	}
	p := &Proc{Name: "sleep", Args: []string{"60"}, Addr: "-", Ready: func() error { return nil }, Log: func() string { return "" }}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if !p.Running() {
		t.Fatal("not running after Start")
	}
	if err := p.Start(); err == nil {
		t.Fatal("a second Start of a running process succeeded")
	}
	p.Pause()
	p.Resume()
	p.Kill()
	if p.Running() {
		t.Fatal("running after Kill")
	}
	if err := p.Start(); err != nil {
		t.Fatalf("Start after Kill: %v", err)
	}
	p.Stop()
	if p.Running() {
		t.Fatal("running after Stop")
	}
}

// TestExitAtStart: a process that exits before it answers is an error
// naming its log.
func TestExitAtStart(t *testing.T) {
	if _, err := exec.LookPath("true"); err != nil {
		t.Skip("no true program")
	}
	p := &Proc{Name: "true", Addr: "-", Ready: func() error { return errors.New("never") }, Log: func() string { return "the log" }}
	err := p.Start()
	if err == nil || !strings.Contains(err.Error(), "exited at start") || !strings.Contains(err.Error(), "the log") {
		t.Fatalf("Start = %v", err)
	}
}
