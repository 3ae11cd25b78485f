// Package faults holds the reference bus's fault drills (issue 10): a consumer drains a queue
// on Valkey with appendfsync always while a fault strikes — the server frozen (SIGSTOP), killed
// and restarted on its AOF, every bus connection killed (CLIENT KILL), the network blackholed
// by a proxy, the consumer process killed — and each drill checks that no job is lost, that
// duplicates stay within the at-least-once bound (only jobs whose lease was live at the fault),
// that progress resumes within one lease + 2 s of the healing, and that nothing is left running.
package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
)

// Options size a drill.
type Options struct {
	Jobs    int           // jobs to drain; half are enqueued before the fault, half during it
	Workers int           // the consumer's concurrency
	Lease   time.Duration // the consumer's lease
	Outage  time.Duration // how long a freeze or a blackhole lasts
	// Child re-executes the current binary as a consumer process (the consumer-kill drill);
	// nil skips that drill. It must run ChildConsumer when the environment says so.
	Child func(addr, queue string) (Process, error)
}

// Short is the drill size `make test` runs; Long the one `make faults` runs.
var (
	Short = Options{Jobs: 400, Workers: 8, Lease: 500 * time.Millisecond, Outage: time.Second}
	Long  = Options{Jobs: 5000, Workers: 32, Lease: time.Second, Outage: 5 * time.Second}
)

// Process is a consumer running in another process.
type Process interface {
	Handled() <-chan string // the ids its handler ran, as it reports them
	Kill() error            // SIGKILL and reap
}

// Drill is one fault.
type Drill struct {
	Name string
	// fault strikes and heals; it returns when healed. snap records the active set around it.
	fault func(ctx context.Context, e *env) error
}

// Drills is every drill, in transcript order.
var Drills = []Drill{
	{"sigstop-sigcont", func(ctx context.Context, e *env) error {
		e.snapActive()
		if err := e.v.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		time.Sleep(e.opt.Outage)
		return e.v.Signal(syscall.SIGCONT)
	}},
	{"sigkill-restart-aof", func(ctx context.Context, e *env) error {
		e.snapActive()
		if err := e.v.Crash(); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
		if err := e.v.Restart(ctx); err != nil {
			return err
		}
		e.snapActive() // the AOF kept the leases of the moment it died
		return nil
	}},
	{"client-kill-all", func(ctx context.Context, e *env) error {
		e.snapActive()
		_, err := e.in.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
		e.snapActive()
		return err
	}},
	{"proxy-blackhole", func(ctx context.Context, e *env) error {
		e.snapActive()
		e.px.pause()
		time.Sleep(e.opt.Outage)
		e.snapActive() // what reached the server before the hole
		e.px.resume()
		return nil
	}},
	{"consumer-sigkill", nil}, // run by runConsumerKill
}

// Result is one drill's outcome. Only counts and verdicts: the transcript holds no timings.
type Result struct {
	Name                   string
	Jobs, Completed, Dead  int
	Lost                   []string // enqueued, yet neither completed nor in the morgue
	Dups, OutsideBound     int      // handled more than once; of those, not live at the fault
	Resumed                time.Duration
	ResumedOK, NothingLeft bool
	Reconnects             int64
	Err                    error
}

// OK is the drill's verdict.
func (r Result) OK() bool {
	return r.Err == nil && len(r.Lost) == 0 && r.OutsideBound == 0 && r.ResumedOK && r.NothingLeft &&
		r.Completed+r.Dead == r.Jobs
}

// Line is the result's transcript line: counts and verdicts, no timings, no sizes (the short
// and the long drills print the same lines when they pass).
func (r Result) Line() string {
	v := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	return fmt.Sprintf("%-20s lost %d; every job completed or in the morgue %s; duplicates within the at-least-once bound %s; progress resumed within one lease + 2s %s; nothing left running %s; verdict %s",
		r.Name, len(r.Lost), v(r.Completed+r.Dead == r.Jobs && r.Err == nil), v(r.OutsideBound == 0), v(r.ResumedOK), v(r.NothingLeft), v(r.OK()))
}

// Transcript renders results as transcripts/faults.out.
func Transcript(w io.Writer, rs []Result) {
	fmt.Fprintln(w, "# EchoMQ fault drills (internal/faults): the reference bus on Valkey with appendfsync always")
	for _, r := range rs {
		fmt.Fprintln(w, r.Line())
	}
}

// env is one drill's world.
type env struct {
	opt   Options
	v     *engines.Valkey
	px    *proxy
	in    *connector.Conn // the drill's own inspector, straight to the server
	queue string

	mu      sync.Mutex
	handled map[string]int
	times   []time.Time // completion instants
	live    map[string]bool
}

func (e *env) record(id string) {
	e.mu.Lock()
	e.handled[id]++
	e.times = append(e.times, time.Now())
	e.mu.Unlock()
}

// snapActive adds the jobs leased right now to the at-least-once bound. Right after a restart
// the inspector's first calls fail while it redials: it tries again until the server answers,
// so the leases the AOF kept are never missed.
func (e *env) snapActive() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	v, err := e.in.Do(ctx, "ZRANGE", "emq:{"+e.queue+"}:active", 0, -1)
	for err != nil && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
		v, err = e.in.Do(ctx, "ZRANGE", "emq:{"+e.queue+"}:active", 0, -1)
	}
	if err != nil {
		return
	}
	e.mu.Lock()
	for _, el := range v.Elems {
		e.live[string(el.Str)] = true
	}
	e.mu.Unlock()
}

// Run runs one drill on a fresh server.
func Run(ctx context.Context, d Drill, opt Options) (r Result) {
	r = Result{Name: d.Name, Jobs: opt.Jobs}
	v, err := engines.StartValkey(ctx, engines.ValkeyOptions{Args: []string{"--appendonly", "yes", "--appendfsync", "always"}})
	if err != nil {
		r.Err = err
		return r
	}
	defer v.Stop()
	e := &env{opt: opt, v: v, queue: "drill", handled: map[string]int{}, live: map[string]bool{}}
	if e.px, err = newProxy(v.Addr); err != nil {
		r.Err = err
		return r
	}
	defer e.px.close()
	if e.in, err = connector.Dial(ctx, v.Addr, connector.Options{DialTimeout: time.Second, Redial: true}); err != nil {
		r.Err = err
		return r
	}
	defer e.in.Close()
	r.Err = e.drain(ctx, d, &r)
	e.account(ctx, &r)
	return r
}

// drain enqueues, runs the consumer through the fault, and waits for every job.
func (e *env) drain(ctx context.Context, d Drill, r *Result) error {
	b, err := bus.Open(ctx, e.px.addr(), bus.Options{DialTimeout: time.Second})
	if err != nil {
		return err
	}
	ids := make([]string, e.opt.Jobs)
	for i := range ids {
		if ids[i], err = b.Mint(ctx); err != nil {
			b.Close()
			return err
		}
	}
	half := len(ids) / 2
	if err := enqueue(ctx, b, e.queue, ids[:half]); err != nil {
		b.Close()
		return err
	}
	var child Process
	stop := func() {}
	if d.fault == nil {
		if e.opt.Child == nil {
			b.Close()
			return errors.New("the consumer-kill drill needs Options.Child")
		}
		if child, err = e.opt.Child(e.px.addr(), e.queue); err != nil {
			b.Close()
			return err
		}
		go func() {
			for id := range child.Handled() {
				e.record(id)
			}
		}()
	} else {
		stop = e.consume(ctx, b)
	}
	e.waitHandled(ctx, len(ids)/8)
	// The rest is enqueued while the fault strikes: callers see errors at once and retry
	// (enqueue is idempotent by id).
	enq := make(chan error, 1)
	go func() { enq <- enqueue(ctx, b, e.queue, ids[half:]) }()
	var healed time.Time
	if d.fault == nil {
		e.snapActive()
		e.mu.Lock()
		for id, n := range e.handled { // handled but maybe not yet completed by the child
			if n > 0 {
				e.live[id] = true
			}
		}
		e.mu.Unlock()
		if err := child.Kill(); err != nil {
			return err
		}
		healed = time.Now()
		stop = e.consume(ctx, b) // a new consumer takes over
	} else {
		if err := d.fault(ctx, e); err != nil {
			stop()
			b.Close()
			return fmt.Errorf("fault: %w", err)
		}
		healed = time.Now()
	}
	err = <-enq
	done := e.waitAll(ctx, ids)
	stop()
	r.Reconnects = b.Reconnects()
	b.Close()
	r.Resumed, r.ResumedOK = e.resumedAfter(healed)
	switch {
	case err != nil:
		return fmt.Errorf("enqueue during the fault: %w", err)
	case !done:
		return errors.New("the drain did not finish within 30s")
	}
	return nil
}

// consume runs the in-process consumer until the returned stop is called.
func (e *env) consume(ctx context.Context, b *bus.Bus) (stop func()) {
	c, err := b.Consumer(e.queue, bus.ConsumerOptions{Concurrency: e.opt.Workers, Lease: e.opt.Lease,
		Park: 200 * time.Millisecond, Maintain: e.opt.Lease / 5, Grace: time.Second, MaxAttempts: 1000,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }},
		func(ctx context.Context, j *bus.Job) error {
			e.record(j.ID)
			return nil
		})
	if err != nil {
		panic(err) // the options above are valid
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(cctx)
	}()
	return func() { cancel(); <-done }
}

func enqueue(ctx context.Context, b *bus.Bus, queue string, ids []string) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := b.Enqueue(cctx, queue, []byte("job "+id), bus.WithID(id))
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

func (e *env) waitHandled(ctx context.Context, n int) {
	for ctx.Err() == nil {
		e.mu.Lock()
		got := len(e.handled)
		e.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitAll waits until every id was handled and the queue holds nothing pending or leased.
func (e *env) waitAll(ctx context.Context, ids []string) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		e.mu.Lock()
		all := true
		for _, id := range ids {
			if e.handled[id] == 0 {
				all = false
				break
			}
		}
		e.mu.Unlock()
		if all && e.card(ctx, "pending") == 0 && e.card(ctx, "active") == 0 {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func (e *env) card(ctx context.Context, kind string) int64 {
	v, err := e.in.Do(ctx, "ZCARD", "emq:{"+e.queue+"}:"+kind)
	if err != nil {
		return -1
	}
	return v.Int
}

// resumedAfter is the first completion after healed, and whether it came within one lease + 2s
// (or the drain had finished before healing).
func (e *env) resumedAfter(healed time.Time) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts := append([]time.Time(nil), e.times...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	for _, t := range ts {
		if !t.Before(healed) {
			d := t.Sub(healed)
			return d, d <= e.opt.Lease+2*time.Second
		}
	}
	return 0, len(e.handled) == e.opt.Jobs
}

// account checks the server after the drain: lost jobs, the morgue, duplicates, leftovers.
func (e *env) account(ctx context.Context, r *Result) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	dead := map[string]bool{}
	if v, err := e.in.Do(ctx, "ZRANGE", "emq:{"+e.queue+"}:dead", 0, -1); err == nil {
		for _, el := range v.Elems {
			dead[string(el.Str)] = true
		}
	}
	e.mu.Lock()
	for id, n := range e.handled {
		if n > 1 {
			r.Dups++
			if !e.live[id] {
				r.OutsideBound++
			}
		}
	}
	ids := make([]string, 0, len(e.handled))
	for id := range e.handled {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	// Every job's row is gone (completed) or buried; none is anywhere else.
	v, err := e.in.Do(ctx, "KEYS", "emq:{"+e.queue+"}:job:*")
	if err == nil {
		for _, el := range v.Elems {
			id := strings.TrimPrefix(string(el.Str), "emq:{"+e.queue+"}:job:")
			if !dead[id] {
				r.Lost = append(r.Lost, id)
			}
		}
	}
	r.Dead = len(dead)
	r.Completed = max(0, len(ids)-len(dead)-len(r.Lost))
	if len(ids) < r.Jobs {
		for range r.Jobs - len(ids) {
			r.Lost = append(r.Lost, "(never handled)")
		}
	}
	// Nothing left running: no connection but the inspector's.
	r.NothingLeft = true
	for start := time.Now(); time.Since(start) < 3*time.Second; time.Sleep(20 * time.Millisecond) {
		v, err := e.in.Do(ctx, "CLIENT", "LIST", "TYPE", "normal")
		if err != nil {
			continue
		}
		n := strings.Count(strings.TrimSpace(v.Text()), "\n") + 1
		if r.NothingLeft = n == 1; r.NothingLeft {
			break
		}
	}
}
