package conformcli

import "syscall"

// childAttr makes a child emq-engines die with this process, even on a crash; its servers die
// with it in turn.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
