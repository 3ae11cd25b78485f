//go:build !unix

package subprocess

import (
	"os"
	"os/exec"
)

// setProcessGroup: without Unix process groups the port runs as a plain child; a kill reaches
// the port's own process only, so a port must not leave helpers running when it is killed.
func setProcessGroup(cmd *exec.Cmd) {}

// killGroup kills the port's process.
func killGroup(pid int) {
	if pid <= 0 {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
