package engines

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// The fault drills' handles on a native server (internal/faults): freeze it, crash it, bring
// it back on the same port with the same directory (so an AOF survives the crash).

// ErrNotNative: fault injection needs a server this process started natively (not given, not a container).
var ErrNotNative = errors.New("engines: fault injection needs a server this process started natively")

// Signal sends sig (SIGSTOP, SIGCONT, …) to the server process.
func (v *Valkey) Signal(sig syscall.Signal) error {
	if v == nil || v.proc == nil {
		return ErrNotNative
	}
	return v.proc.cmd.Process.Signal(sig)
}

// Crash SIGKILLs the server (no shutdown, no last write) and reaps it; its directory stays.
func (v *Valkey) Crash() error {
	if v == nil || v.proc == nil {
		return ErrNotNative
	}
	_ = v.proc.cmd.Process.Signal(syscall.SIGKILL)
	<-v.proc.done
	return nil
}

// Restart starts a crashed server again with its arguments, port and directory, and waits
// until it answers. Stop stops the new process and removes the directory.
func (v *Valkey) Restart(ctx context.Context) error {
	if v == nil || v.proc == nil {
		return ErrNotNative
	}
	old := v.proc
	if !old.exited() {
		return fmt.Errorf("engines: restart of a running %s (pid %d)", old.name, old.pid())
	}
	cmd := exec.Command(old.cmd.Path, old.cmd.Args[1:]...)
	cmd.Dir = old.cmd.Dir
	p, err := startProc(old.name, cmd, old.dir, old.logPath, old.stopSig)
	if err != nil {
		return err
	}
	if _, err := waitValkey(ctx, p, v.Addr, argValue(old.cmd.Args, "--requirepass")); err != nil {
		p.stop()
		return p.startErr(fmt.Errorf("engines: %s restart on %s: %w", old.name, v.Addr, err))
	}
	v.proc = p
	return nil
}
