package redistest

import (
	"os/exec"
	"syscall"
)

// killWithParent has Linux kill the process when the thread that started
// it exits. Go keeps the threads of goroutines that do not lock one, so in
// practice that is when the test binary exits.
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
