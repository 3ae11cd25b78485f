package engines

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/echomq/kit/internal/tempdir"
)

// stopGrace is how long a stopping engine gets before SIGKILL.
const stopGrace = 10 * time.Second

// proc is one engine process we started: it owns the process (by PID), its private temp
// directory and its log file.
type proc struct {
	name    string // for messages: "valkey", "postgres"
	cmd     *exec.Cmd
	dir     string // private temp dir, removed on stop
	logPath string
	stopSig syscall.Signal // the engine's "shut down now" signal

	done    chan struct{} // closed once the process has been reaped
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

// startProc starts cmd in its own process group, with a parent-death signal so it dies with us,
// its output going to logPath. (Linux sends Pdeathsig when the forking thread exits; Go keeps its
// threads for the process's life unless a goroutine exits while locked to one, so do not start
// engines from a LockOSThread goroutine that ends.)
func startProc(name string, cmd *exec.Cmd, dir, logPath string, stopSig syscall.Signal) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("engines: %s log: %w", name, err)
	}
	defer logf.Close() // the child holds its own copy
	cmd.Stdout, cmd.Stderr = logf, logf
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("engines: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, dir: dir, logPath: logPath, stopSig: stopSig, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop signals the engine, escalates to SIGKILL of its whole process group after the grace
// period, reaps it and removes its temp dir. Safe to call more than once.
func (p *proc) stop() error {
	p.stopOnce.Do(func() {
		var errs []error
		if !p.exited() {
			_ = p.cmd.Process.Signal(p.stopSig)
			select {
			case <-p.done:
			case <-time.After(stopGrace):
				// The leader is not reaped yet, so its PID (= the group ID) cannot have been reused.
				_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
				<-p.done
				errs = append(errs, fmt.Errorf("engines: %s (pid %d) ignored %v for %v; killed", p.name, p.pid(), p.stopSig, stopGrace))
			}
		}
		if p.dir != "" {
			if err := os.RemoveAll(p.dir); err != nil {
				errs = append(errs, fmt.Errorf("engines: remove %s dir: %w", p.name, err))
			}
		}
		p.stopErr = errors.Join(errs...)
	})
	return p.stopErr
}

// logTail returns the last lines of the engine's log, for error messages.
func (p *proc) logTail() string { return fileTail(p.logPath, 20) }

func fileTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return tail(string(b), n)
}

// startErr wraps a start failure with the tail of the engine's log.
func (p *proc) startErr(err error) error {
	return fmt.Errorf("%w\n--- %s log (%s) tail ---\n%s", err, p.name, p.logPath, p.logTail())
}

// freePort asks the kernel for a free loopback port. Another process may take it before the
// engine binds it; callers retry on a bind failure.
func freePort() (int, error) {
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("engines: find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port != 6379 && port != 5432 {
			return port, nil
		}
	}
	return 0, errors.New("engines: no free loopback port")
}

// tempPrefix names our private temp dirs, one family (internal/tempdir) for every kind.
const tempPrefix = "emq-engine-"

// makeTempDir creates a private temp dir for one engine, its maker's PID recorded in it, so a
// later run removes it if we die without stopping (the engine itself dies with us by Pdeathsig).
func makeTempDir(kind string) (string, error) {
	dir, err := tempdir.New("", tempPrefix, tempPrefix+kind+"-")
	if err != nil {
		return "", fmt.Errorf("engines: temp dir: %w", err)
	}
	return dir, nil
}
