// Package inproc is the drivers.Driver over the reference bus in this process: every op of the
// port protocol. A variant of the reference (a mutant, built by internal/mutant on top of this
// package) is given as bus options and a front over each session; this package knows none.
package inproc

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// Name is the driver's name in reports.
const Name = "echomq-go-reference"

// Options configure the factory: the bus configuration of every session, and for a variant of
// the reference its name and the front each session goes through.
type Options struct {
	Bus bus.Options
	// Variant names what Bus and Front change ("mutant:poll-park"): the factory is then named
	// "echomq-go-reference+mutant:poll-park" in reports.
	Variant string
	// Front, if set, wraps every session (a variant's own front over the driver).
	Front func(drivers.Driver) drivers.Driver
}

// Factory starts in-process reference sessions.
type Factory struct {
	opt   bus.Options
	name  string
	front func(drivers.Driver) drivers.Driver
}

// New builds a factory.
func New(opt Options) (*Factory, error) {
	f := &Factory{opt: opt.Bus, name: Name, front: opt.Front}
	if opt.Variant != "" {
		f.name = Name + "+" + opt.Variant
	}
	return f, nil
}

// Name identifies the reference (and its variant).
func (f *Factory) Name() string { return f.name }

// Start returns a fresh session; it connects at hello.
func (f *Factory) Start(ctx context.Context) (drivers.Driver, error) {
	d := &Driver{opt: f.opt, name: f.name}
	if f.front != nil {
		return f.front(d), nil
	}
	return d, nil
}

// Driver is one session of the reference bus. Methods are called from one goroutine at a time.
type Driver struct {
	opt  bus.Options
	name string
	b    *bus.Bus
	clk  ids.ScriptedClock // the minter's clock, scripted by the clock op
	// parking is the park in flight (EndInput, from another goroutine, ends it).
	parking struct {
		sync.Mutex
		stop context.CancelFunc
		done chan struct{}
	}
}

var (
	_ drivers.Driver     = (*Driver)(nil)
	_ drivers.Clocker    = (*Driver)(nil)
	_ drivers.InputEnder = (*Driver)(nil)
)

// Name identifies the driver.
func (d *Driver) Name() string { return d.name }

var errNoHello = errors.New("inproc: no session: hello first")

func (d *Driver) bus() (*bus.Bus, error) {
	if d.b == nil {
		return nil, errNoHello
	}
	return d.b, nil
}

// Hello connects (HELLO 2, server check, fence) and declares every contract; with a.Cluster it
// opens the bus in cluster mode (every primary fenced, calls routed by slot).
func (d *Driver) Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error) {
	if d.b != nil {
		return protocol.HelloResult{}, argErr("hello on an open session")
	}
	opt := d.opt
	if a.MinterTTLMS != 0 {
		if a.MinterTTLMS < 3 || a.MinterTTLMS > 1e9 {
			return protocol.HelloResult{}, argErr("hello minter_ttl_ms %d", a.MinterTTLMS)
		}
		opt.MinterTTL = time.Duration(a.MinterTTLMS) * time.Millisecond
	}
	opt.Minter.Now = d.clk.Now
	open := bus.Open
	if a.Cluster {
		// a.Valkey is one node of the cluster: the seed the bus reads the slot map from.
		open = openCluster
	}
	b, err := open(ctx, a.Valkey, opt)
	if err != nil {
		return protocol.HelloResult{}, err
	}
	d.b = b
	claims := append([]string(nil), protocol.ContractIDs...)
	return protocol.HelloResult{Name: d.name, Runtime: runtime.Version(), Bundle: lua.Version, Digest: b.Digest(), Claims: claims,
		Capabilities: []string{protocol.CapClock, protocol.CapMinterTTL, protocol.CapCluster, protocol.CapBatch}}, nil
}

// Mint mints N ids from each of Parallel concurrent callers sharing the session's minter.
func (d *Driver) Mint(ctx context.Context, a protocol.MintArgs) (protocol.MintResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.MintResult{}, err
	}
	par := max(a.Parallel, 1)
	// One reply holds every id: bounded as protocol.MaxMint says.
	if a.N < 0 || a.N > protocol.MaxMint || par > protocol.MaxParallel || a.N*par > protocol.MaxMint {
		return protocol.MintResult{}, argErr("mint n %d parallel %d", a.N, a.Parallel)
	}
	out := make([][]string, par)
	errs := make([]error, par)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]string, 0, a.N)
			for range a.N {
				id, err := b.Mint(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				ids = append(ids, id)
			}
			out[i] = ids
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return protocol.MintResult{}, err
	}
	return protocol.MintResult{IDs: out}, nil
}

// Clock scripts the minter's clock (the clock op): SetMS Unix milliseconds, advancing one
// millisecond per Scale real ones; SetMS 0 is the real clock again.
func (d *Driver) Clock(ctx context.Context, a protocol.ClockArgs) error {
	if a.SetMS < 0 || a.Scale < 0 || a.Scale > 1e6 {
		return argErr("clock set_ms %d scale %d", a.SetMS, a.Scale)
	}
	if a.SetMS == 0 {
		d.clk.Reset()
		return nil
	}
	d.clk.Set(time.UnixMilli(a.SetMS), a.Scale)
	return nil
}

// Key is the bus's key builder; no server traffic.
func (d *Driver) Key(ctx context.Context, a protocol.KeyArgs) (protocol.KeyResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.KeyResult{}, err
	}
	k, err := b.Key(a.Queue, a.Type, a.ID, a.Lane)
	return protocol.KeyResult{Key: k}, err
}

// Slot is the key's cluster slot.
func (d *Driver) Slot(ctx context.Context, a protocol.SlotArgs) (protocol.SlotResult, error) {
	return protocol.SlotResult{Slot: int(keys.Slot(a.Key))}, nil
}

// Enqueue enqueues one job (into a lane when named).
func (d *Driver) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.EnqueueResult{}, err
	}
	p, err := unb64("payload_b64", a.PayloadB64)
	if err != nil {
		return protocol.EnqueueResult{}, err
	}
	delay, err := durMS("delay_ms", a.DelayMS)
	if err != nil {
		return protocol.EnqueueResult{}, err
	}
	e, err := b.Send(ctx, a.Queue, bus.Message{ID: a.ID, Payload: p, Delay: delay, Lane: a.Lane})
	return protocol.EnqueueResult{ID: e.ID, Created: e.Created}, err
}

// Claim leases the oldest pending job.
func (d *Driver) Claim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	b, err := d.bus()
	if err != nil {
		return nil, err
	}
	lease, err := durMS("lease_ms", a.LeaseMS)
	if err != nil {
		return nil, err
	}
	j, err := b.Claim(ctx, a.Queue, lease)
	return claimResult(j, err)
}

// LaneClaim leases a job from the lane at the ring's head.
func (d *Driver) LaneClaim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	b, err := d.bus()
	if err != nil {
		return nil, err
	}
	lease, err := durMS("lease_ms", a.LeaseMS)
	if err != nil {
		return nil, err
	}
	j, err := b.LaneClaim(ctx, a.Queue, lease)
	return claimResult(j, err)
}

func claimResult(j *bus.Job, err error) (*protocol.ClaimResult, error) {
	if err != nil || j == nil {
		return nil, err
	}
	r := &protocol.ClaimResult{ID: j.ID, PayloadB64: base64.StdEncoding.EncodeToString(j.Payload), Token: j.Token, Lane: j.Lane}
	if j.LastCheckpoint != nil {
		s := base64.StdEncoding.EncodeToString(j.LastCheckpoint)
		r.CheckpointB64 = &s
	}
	return r, nil
}

// Extend moves the lease deadline.
func (d *Driver) Extend(ctx context.Context, a protocol.ExtendArgs) (protocol.ExtendResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.ExtendResult{}, err
	}
	lease, err := durMS("lease_ms", a.LeaseMS)
	if err != nil {
		return protocol.ExtendResult{}, err
	}
	dl, err := b.Extend(ctx, a.Queue, a.ID, a.Token, lease)
	return protocol.ExtendResult{DeadlineMS: dl}, err
}

// Complete retires a job.
func (d *Driver) Complete(ctx context.Context, a protocol.FenceArgs) error {
	b, err := d.bus()
	if err != nil {
		return err
	}
	return b.Complete(ctx, a.Queue, a.ID, a.Token)
}

// Retry retries or buries a job.
func (d *Driver) Retry(ctx context.Context, a protocol.RetryArgs) (protocol.RetryResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.RetryResult{}, err
	}
	delay, err := durMS("delay_ms", a.DelayMS)
	if err != nil {
		return protocol.RetryResult{}, err
	}
	dead, err := b.Retry(ctx, a.Queue, a.ID, a.Token, a.MaxAttempts, delay, a.Error)
	if err != nil {
		return protocol.RetryResult{}, err
	}
	if dead {
		return protocol.RetryResult{Outcome: "dead"}, nil
	}
	return protocol.RetryResult{Outcome: "retried"}, nil
}

// Fail buries a job.
func (d *Driver) Fail(ctx context.Context, a protocol.FailArgs) error {
	b, err := d.bus()
	if err != nil {
		return err
	}
	return b.Fail(ctx, a.Queue, a.ID, a.Token, a.Error)
}

// Checkpoint stores bytes for the current attempt.
func (d *Driver) Checkpoint(ctx context.Context, a protocol.CheckpointArgs) error {
	b, err := d.bus()
	if err != nil {
		return err
	}
	data, err := unb64("data_b64", a.DataB64)
	if err != nil {
		return err
	}
	return b.Checkpoint(ctx, a.Queue, a.ID, a.Token, data)
}

// Reap returns expired leases.
func (d *Driver) Reap(ctx context.Context, a protocol.ReapArgs) (protocol.CountResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.CountResult{}, err
	}
	n, err := b.Reap(ctx, a.Queue, a.MaxAttempts, limit(a.Limit, 1000))
	return protocol.CountResult{Count: n}, err
}

// Promote moves due scheduled jobs.
func (d *Driver) Promote(ctx context.Context, a protocol.PromoteArgs) (protocol.CountResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.CountResult{}, err
	}
	n, err := b.Promote(ctx, a.Queue, limit(a.Limit, 1000))
	return protocol.CountResult{Count: n}, err
}

// Morgue lists dead jobs.
func (d *Driver) Morgue(ctx context.Context, a protocol.MorgueArgs) (protocol.MorgueResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.MorgueResult{}, err
	}
	m, err := b.Morgue(ctx, a.Queue, limit(a.Limit, 100))
	if err != nil {
		return protocol.MorgueResult{}, err
	}
	out := protocol.MorgueResult{Jobs: make([]protocol.DeadJob, len(m))}
	for i, j := range m {
		out.Jobs[i] = protocol.DeadJob{ID: j.ID, Attempts: j.Attempts, PayloadB64: base64.StdEncoding.EncodeToString(j.Payload), Error: j.Error, DiedMS: j.Died}
	}
	return out, nil
}

// Revive returns a dead job to pending.
func (d *Driver) Revive(ctx context.Context, a protocol.JobArgs) (protocol.ChangedResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.ChangedResult{}, err
	}
	ok, err := b.Revive(ctx, a.Queue, a.ID)
	return protocol.ChangedResult{Changed: ok}, err
}

// Purge removes a dead job.
func (d *Driver) Purge(ctx context.Context, a protocol.JobArgs) (protocol.ChangedResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.ChangedResult{}, err
	}
	ok, err := b.Purge(ctx, a.Queue, a.ID)
	return protocol.ChangedResult{Changed: ok}, err
}

// Pause pauses the queue.
func (d *Driver) Pause(ctx context.Context, a protocol.QueueArgs) error {
	b, err := d.bus()
	if err != nil {
		return err
	}
	return b.Pause(ctx, a.Queue)
}

// Resume resumes the queue.
func (d *Driver) Resume(ctx context.Context, a protocol.QueueArgs) error {
	b, err := d.bus()
	if err != nil {
		return err
	}
	return b.Resume(ctx, a.Queue)
}

// LanePause pauses a lane.
func (d *Driver) LanePause(ctx context.Context, a protocol.QueueArgs) error {
	b, err := d.bus()
	if err != nil {
		return err
	}
	return b.LanePause(ctx, a.Queue, a.Lane)
}

// LaneResume resumes a lane.
func (d *Driver) LaneResume(ctx context.Context, a protocol.QueueArgs) error {
	b, err := d.bus()
	if err != nil {
		return err
	}
	return b.LaneResume(ctx, a.Queue, a.Lane)
}

// LaneCeiling sets a lane's ceiling.
func (d *Driver) LaneCeiling(ctx context.Context, a protocol.QueueArgs) error {
	b, err := d.bus()
	if err != nil {
		return err
	}
	return b.LaneCeiling(ctx, a.Queue, a.Lane, a.Ceiling)
}

// Park runs Consumers consumers, each parked on its own connection when idle, until Jobs jobs
// were claimed and completed or TimeoutMS passed. Maintenance is off: an idle consumer sends
// nothing but its blocking pop.
func (d *Driver) Park(ctx context.Context, a protocol.ParkArgs) (protocol.ParkResult, error) {
	b, err := d.bus()
	if err != nil {
		return protocol.ParkResult{}, err
	}
	if a.Consumers < 1 || a.Consumers > 256 || a.Jobs < 0 || a.TimeoutMS < 1 {
		return protocol.ParkResult{}, argErr("park consumers %d jobs %d timeout_ms %d", a.Consumers, a.Jobs, a.TimeoutMS)
	}
	runCtx, cancel := context.WithTimeout(ctx, ms(a.TimeoutMS))
	defer cancel()
	defer d.parkInFlight(cancel)()
	var mu sync.Mutex
	res := protocol.ParkResult{Jobs: []protocol.Parked{}}
	c, err := b.Consumer(a.Queue, bus.ConsumerOptions{
		Concurrency: a.Consumers, Lease: bus.Millis(a.LeaseMS), Park: ms(a.ParkMS), Maintain: -1, Grace: 2 * time.Second,
	}, func(ctx context.Context, j *bus.Job) error {
		if err := j.Complete(ctx); err != nil {
			return err
		}
		mu.Lock()
		res.Jobs = append(res.Jobs, protocol.Parked{Consumer: j.Worker, ID: j.ID, Token: j.Token})
		if len(res.Jobs) >= a.Jobs {
			cancel()
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return protocol.ParkResult{}, err
	}
	if a.Jobs == 0 {
		cancel()
	}
	if err := c.Run(runCtx); err != nil {
		return protocol.ParkResult{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	return res, nil
}

// parkInFlight records a park's cancel for EndInput; the function it returns ends the record.
func (d *Driver) parkInFlight(stop context.CancelFunc) func() {
	d.parking.Lock()
	defer d.parking.Unlock()
	done := make(chan struct{})
	d.parking.stop, d.parking.done = stop, done
	return func() {
		d.parking.Lock()
		defer d.parking.Unlock()
		d.parking.stop, d.parking.done = nil, nil
		close(done)
	}
}

// EndInput ends the session as the reference's port ends it when its standard input ends
// (internal/portserver's Serve, B-286): the park in flight ends at once, as if nobody were left
// to read its reply, then the session closes (the minter lease released). It is the one method
// called while another (the park) runs.
func (d *Driver) EndInput(ctx context.Context, until time.Time) error {
	d.parking.Lock()
	stop, done := d.parking.stop, d.parking.done
	d.parking.Unlock()
	if stop != nil {
		stop()
		timer := time.NewTimer(time.Until(until))
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			return fmt.Errorf("inproc: the park in flight still runs at the end of input")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return d.Close(ctx)
}

// Reconnect drops the session's connection and dials anew; the fence runs first.
func (d *Driver) Reconnect(ctx context.Context) error {
	b, err := d.bus()
	if err != nil {
		return err
	}
	return b.Reconnect(ctx)
}

// Close releases the minter lease and closes the session.
func (d *Driver) Close(ctx context.Context) error {
	if d.b == nil {
		return nil
	}
	b := d.b
	d.b = nil
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(closeWait):
		// A bus that never closes (a mutated reference whose redial loop never ends) fails
		// its clause as a subprocess that never exits does; its goroutines are left behind.
		return &drivers.PortError{Port: d.name, Op: "close", Reason: fmt.Sprintf("the bus's Close did not return within %s", closeWait)}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeWait bounds Close as the subprocess driver's deadline bounds a port's exit.
const closeWait = 10 * time.Second

// durMS checks a protocol duration for the bus, which takes it in whole milliseconds: never
// through a time.Duration, which ends near 9.2e12 ms, inside A16's range. Past 1e14 ms it is
// EMQARG (A16); below the op's minimum the bus refuses it.
func durMS(field string, n int64) (bus.Millis, error) {
	if n > protocol.MaxMS {
		return 0, argErr("%s %d: want at most %d", field, n, int64(protocol.MaxMS))
	}
	return bus.Millis(n), nil
}

// ms converts protocol milliseconds, saturating past what a time.Duration holds on either side,
// so a huge negative value stays negative and the bus refuses it (EMQARG).
func ms(n int64) time.Duration {
	switch {
	case n > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	case n < math.MinInt64/int64(time.Millisecond):
		return math.MinInt64
	}
	return time.Duration(n) * time.Millisecond
}

func limit(n, def int64) int {
	if n == 0 {
		return int(def)
	}
	return int(max(min(n, math.MaxInt32), math.MinInt32))
}

func unb64(field, s string) ([]byte, error) {
	p, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, argErr("%s: %v", field, err)
	}
	return p, nil
}

func argErr(format string, a ...any) *emqerr.Error {
	return &emqerr.Error{Type: emqerr.TypeArg, Message: fmt.Sprintf(format, a...)}
}
