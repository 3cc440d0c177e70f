package natstest

import (
	"testing"
)

func TestStartRestart(t *testing.T) {
	s := Start(t)
	if err := greet(s.Addr); err != nil {
		t.Fatalf("greet: %v", err)
	}
	s.Kill()
	if s.Running() {
		t.Fatal("running after Kill")
	}
	if err := greet(s.Addr); err == nil {
		t.Fatal("greeted after Kill")
	}
	s.Restart(t)
	if err := greet(s.Addr); err != nil {
		t.Fatalf("greet after Restart: %v", err)
	}
}
