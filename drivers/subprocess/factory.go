// Package subprocess is a drivers.Factory for ports that are programs: it starts one process per
// session, speaks the port protocol (contracts/PROTOCOL.md Part B) on its standard input and
// output, validates every reply against protocol/port-protocol.schema.json, and turns a crash, a
// hang, garbage, an out-of-sequence reply or an unknown error type into a *drivers.PortError that
// quotes the offending line and the tail of the port's stderr. A misbehaving port can fail a
// contract; it can never hang or crash the harness: deadlines kill the port's process group.
package subprocess

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/drivers"
)

// Defaults of Options.
const (
	DefaultDeadline      = 10 * time.Second
	DefaultParkSlack     = 5 * time.Second
	DefaultStartDeadline = 60 * time.Second
	DefaultMuteAfter     = 10 * time.Second
	// lingerWait is how long a session waits to exit after close once one of its port's has
	// stayed after close for a whole deadline.
	lingerWait        = time.Second
	DefaultStderrTail = 8 << 10
	DefaultMaxLine    = 16 << 20
)

// Options configure a Factory. The zero value takes the defaults.
type Options struct {
	// Dir is the port's working directory ("" = the harness's).
	Dir string
	// Env is added to the harness's environment for the port (KEY=VALUE).
	Env []string
	// Name names the port in reports; default: the command line.
	Name string
	// Deadline bounds every request (default 10 s), plus PerItem (default 2 ms) for each item
	// the request names (mint's n × parallel, a limit, a batch's jobs) and PerMiB (default 5 s)
	// for each MiB of the largest line the session has sent, this one included; park gets its
	// own timeout_ms + ParkSlack.
	Deadline  time.Duration
	PerItem   time.Duration
	PerMiB    time.Duration
	ParkSlack time.Duration
	// StartDeadline bounds the first request (hello) of every session, which pays for the
	// port's start-up (an interpreter, a `go run` that compiles; a process per clause, B-22);
	// default 60 s. A port that read its hello and then sits idle is named mute after MuteAfter
	// instead.
	StartDeadline time.Duration
	// MuteAfter ends the start deadline early for a mute port: one that read its first request
	// and whose processes then neither ran nor read or wrote anything for this long (default
	// 10 s; Linux only — elsewhere a mute port waits out StartDeadline). A start-up that is
	// loading or compiling uses the CPU, or has not read; a hello waiting on a slow server reads
	// and writes its socket. 3 s named a correct port mute when a loaded machine starved the
	// relay its hello went through.
	MuteAfter time.Duration
	// StderrTail is how many bytes of stderr are kept for reports (default 8 KiB).
	StderrTail int
	// MaxLine bounds one reply line (default 16 MiB): a longer line fails the session as soon
	// as the limit is read, quoting its head.
	MaxLine int
	// Faketime is the path of libfaketime's shared library (libfaketimeMT.so.1), which
	// StartWallClocked preloads into a port to set its wall clock; "" offers no wall clock.
	Faketime string
	// Prestart keeps one port process started ahead, so that the next session does not wait
	// for the port's start-up (an interpreter takes a good part of a clause). The process is as
	// fresh as one started on demand: it has received nothing. Close ends it.
	Prestart bool
}

func (o Options) withDefaults() Options {
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if o.PerItem <= 0 {
		o.PerItem = DefaultPerItem
	}
	if o.PerMiB <= 0 {
		o.PerMiB = DefaultPerMiB
	}
	if o.ParkSlack <= 0 {
		o.ParkSlack = DefaultParkSlack
	}
	if o.StartDeadline <= 0 {
		o.StartDeadline = DefaultStartDeadline
	}
	if o.MuteAfter <= 0 {
		o.MuteAfter = DefaultMuteAfter
	}
	if o.StderrTail <= 0 {
		o.StderrTail = DefaultStderrTail
	}
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	return o
}

// Factory starts a port program, one process per session.
type Factory struct {
	argv []string
	name string
	opt  Options
	v    *validator
	rec  *recorder
	// lingers: a session did not exit after close; later ones get lingerWait to exit.
	lingers atomic.Bool

	mu    sync.Mutex
	spare *driver // Prestart: the next session's process, started ahead
}

var _ drivers.Factory = (*Factory)(nil)

// New returns a Factory for a command line, split shell-like (see Split). The program is looked
// up on PATH, or relative to opt.Dir when it contains a slash.
func New(command string, opt Options) (*Factory, error) {
	argv, err := Split(command)
	if err != nil {
		return nil, err
	}
	v, err := newValidator()
	if err != nil {
		return nil, err
	}
	opt = opt.withDefaults()
	name := opt.Name
	if name == "" {
		name = command
	}
	return &Factory{argv: argv, name: name, opt: opt, v: v, rec: &recorder{}}, nil
}

// Name is the port's name in reports.
func (f *Factory) Name() string { return f.name }

// Argv is the split command line.
func (f *Factory) Argv() []string { return append([]string(nil), f.argv...) }

// Start starts a fresh port process (or, with Prestart, hands out the one started ahead and
// starts the next). It does not send hello; the first request does.
func (f *Factory) Start(ctx context.Context) (drivers.Driver, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	d := f.spare
	f.spare = nil
	f.mu.Unlock()
	if d != nil && !d.ended() {
		f.rec.session(d.stderr)
		f.prestart()
		return d, nil
	}
	if d != nil {
		d.kill()
	}
	d, err := f.launch()
	if err != nil {
		return nil, &drivers.PortError{Port: f.name, Op: "start", Reason: fmt.Sprintf("could not start %q: %v", f.argv[0], err)}
	}
	f.rec.session(d.stderr)
	f.prestart()
	return d, nil
}

// launch starts one port process, with env (KEY=VALUE) after the harness's and Options.Env (the
// last of a repeated name wins, os/exec).
func (f *Factory) launch(env ...string) (*driver, error) {
	cmd := exec.Command(f.argv[0], f.argv[1:]...)
	cmd.Dir = f.opt.Dir
	cmd.Env = append(append(os.Environ(), f.opt.Env...), env...)
	setProcessGroup(cmd)
	return start(cmd, f)
}

// prestart starts the next session's process ahead, with Prestart.
func (f *Factory) prestart() {
	if !f.opt.Prestart {
		return
	}
	d, err := f.launch()
	if err != nil {
		return // the next Start tries again and says why
	}
	f.mu.Lock()
	old := f.spare
	f.spare = d
	f.mu.Unlock()
	if old != nil {
		old.kill()
	}
}

// Close ends the process started ahead, if any.
func (f *Factory) Close() error {
	f.mu.Lock()
	d := f.spare
	f.spare = nil
	f.mu.Unlock()
	if d != nil {
		d.kill()
	}
	return nil
}
