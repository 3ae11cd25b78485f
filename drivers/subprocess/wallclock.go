package subprocess

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/echomq/kit/drivers"
)

var _ drivers.WallClockFactory = (*Factory)(nil)

// StartWallClocked starts a fresh port process whose wall clock reads the real one plus offset
// and can be set again (drivers.WallClockFactory). libfaketime, preloaded, answers the process's
// wall-clock calls into the C library from a file the kit rewrites, read afresh at every call;
// the monotonic clock is left alone, so the port's timers and a lease timed as canon §3.4-8 says
// are not moved. The file lives in a folder of its own, removed once the process has exited.
func (f *Factory) StartWallClocked(ctx context.Context, offset time.Duration) (drivers.Driver, drivers.WallClock, error) {
	if f.opt.Faketime == "" {
		return nil, nil, fmt.Errorf("%w: no libfaketime (emq-conform -faketime, EMQ_FAKETIME; ci/provision-faketime.sh installs it)", drivers.ErrNoWallClock)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "emq-wallclock-")
	if err != nil {
		return nil, nil, err
	}
	wc := &wallClock{path: filepath.Join(dir, "offset")}
	if err := wc.Set(offset); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	preload := f.opt.Faketime
	if p := os.Getenv("LD_PRELOAD"); p != "" {
		preload += ":" + p
	}
	d, err := f.launch("LD_PRELOAD="+preload, "FAKETIME_TIMESTAMP_FILE="+wc.path, "FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1")
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, &drivers.PortError{Port: f.name, Op: "start", Reason: fmt.Sprintf("could not start %q with libfaketime preloaded: %v", f.argv[0], err)}
	}
	f.rec.session(d.stderr)
	go func() {
		<-d.exited
		os.RemoveAll(dir)
	}()
	return d, wc, nil
}

// wallClock is libfaketime's offset file of one process.
type wallClock struct{ path string }

// Set writes the offset in libfaketime's relative form ("-3600": an hour back), by a rename, so
// that the process never reads a half-written file.
func (w *wallClock) Set(offset time.Duration) error {
	tmp := w.path + ".next"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%+d\n", int64(offset/time.Second)), 0o600); err != nil {
		return fmt.Errorf("set the port's wall clock: %w", err)
	}
	if err := os.Rename(tmp, w.path); err != nil {
		return fmt.Errorf("set the port's wall clock: %w", err)
	}
	return nil
}
