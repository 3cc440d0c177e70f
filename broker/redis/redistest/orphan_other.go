//go:build !linux

package redistest

import "os/exec"

// killWithParent does nothing where the system cannot tie a process's life
// to its parent's: a test binary that dies leaves its shared servers.
func killWithParent(*exec.Cmd) {}
