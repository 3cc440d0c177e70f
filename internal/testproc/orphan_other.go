//go:build !linux

package testproc

import "os/exec"

// killWithParent does nothing where the system cannot tie a process's life
// to its parent's.
func killWithParent(*exec.Cmd) {}
