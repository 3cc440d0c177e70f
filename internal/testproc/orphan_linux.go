package testproc

import (
	"os/exec"
	"syscall"
)

// killWithParent has Linux kill the server when the thread that started
// it exits (in practice, when the test binary exits), so that a test
// binary that dies leaves no server behind.
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
