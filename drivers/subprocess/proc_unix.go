//go:build unix

package subprocess

import (
	"errors"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the port in its own process group, so that a kill reaches whatever it
// started (`go run`'s child, a shell's pipeline). A child that leaves the group (setsid, a
// daemonising fork, `setsid node …`) escapes the kill: the driver cannot see or reap it, so a
// port must keep its helpers in its process group.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the port's whole process group.
func killGroup(pid int) {
	if pid <= 0 {
		return
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
