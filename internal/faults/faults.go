// Package faults holds the reference bus's fault drills (issues 10 and 23): a consumer drains a
// queue on Valkey with appendfsync always while a fault strikes — the server frozen (SIGSTOP),
// killed and restarted on its AOF, every bus connection killed (CLIENT KILL), the network
// blackholed by a proxy for a while, the consumer process killed — or a fault that never heals:
// every open connection frozen forever while new ones pass, every connection reset while new
// ones are accepted and never answered, every open connection no longer read in the middle of
// a large write. Each drill checks that no job is lost, that every duplicate was leased when
// the fault struck (the server's own record at that instant), that progress resumes within one
// lease + 2 s of the healing, that a fault which kills or freezes the bus's connections made
// the bus replace them (counted in Health()), and that nothing is left running.
package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/tempdir"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
)

// Options size a drill.
type Options struct {
	Jobs    int           // jobs to drain; half are enqueued before the fault, half during it
	Workers int           // the consumer's concurrency
	Lease   time.Duration // the consumer's lease
	Outage  time.Duration // how long a freeze, a blackhole or a mute lasts
	// Child re-executes the current binary as a consumer process (the consumer-kill drill);
	// nil skips that drill. It must run ChildConsumer when the environment says so.
	Child func(addr, queue string) (Process, error)
}

// Short is the drill size `make test` runs; Long the one `make faults` runs. The leases are
// short, so that leases lapse within the outages, yet long enough that a claim, its handler and
// its completion fit in one on a machine whose cores are busy with other work: a lease that
// lapses for slowness alone would be a duplicate the fault did not cause.
var (
	Short = Options{Jobs: 400, Workers: 8, Lease: time.Second, Outage: time.Second}
	Long  = Options{Jobs: 5000, Workers: 32, Lease: 2 * time.Second, Outage: 5 * time.Second}
)

// Process is a consumer running in another process.
type Process interface {
	Handled() <-chan string // the ids its handler ran, as it reports them
	Kill() error            // SIGKILL and reap
}

// Drill is one fault.
type Drill struct {
	Name string
	// Replaces: the fault kills or freezes the bus's connections for good, so the bus must
	// have replaced its main connection (Health().Reconnects > 0).
	Replaces bool
	// fault strikes (through e.strike, which records the leases live at that instant) and
	// heals; it returns when healed — at once for a fault whose new connections pass.
	fault func(ctx context.Context, e *env) error
}

// bigPayload is the enqueue the stop-reading drill sends into a connection that is no longer
// read: well past the kernel's buffers, so the write blocks mid-way.
const bigPayload = 16 << 20

// deafAfter is what each connection is still read from the bus once the stop-reading drill
// deafens it: a small part of bigPayload, so the fault strikes early in that write. (At 1 MiB,
// a machine at load 37 forwarded 450 KB in the 2 s before the bus's own write deadline gave the
// connection up: the fault never struck, and the drill judged a bus it had not faulted.)
const deafAfter = 64 << 10

// bigTries is how many large enqueues the stop-reading drill sends before it reports that its
// fault never struck: each one the bus gives up before any connection stopped being read is
// sent again, on the connection that replaced it (armed too).
const bigTries = 5

// stopReadingMidWrite arms every open connection to be read for deafAfter more bytes, then
// never again, and sends a large enqueue into them; the fault strikes when the first one stops
// (in the middle of that write, as a rule). The large write is the fault's first instant too:
// from the moment it begins the bus's calls queue behind it, and a bus that gives the write up
// at its own deadline loses the calls queued on that connection. So the leases are read both
// when each large write begins and when the first connection stops, and then until the bus
// has replaced a connection (leasesUntilReplaced): any of them bounds the duplicates, and the
// replacement is the healing.
func stopReadingMidWrite(ctx context.Context, e *env) error {
	struck := make(chan error, 1)
	var fired atomic.Bool
	var base atomic.Int64 // the bus's replaced connections when the first one stopped
	stopped := func() {
		base.Store(e.b.Reconnects())
		fired.Store(true)
		struck <- e.strike(func() error { return nil })
	}
	// The strike is the event; a busy machine only delays it (it took over 10 s at load 10).
	timeout := time.After(2 * time.Minute)
	var ended []string
	for {
		var done <-chan string
		if err := e.strike(func() error {
			e.px.deafen(deafAfter, stopped)
			done = e.bigEnqueue() // written once the strike releases the proxy
			return nil
		}); err != nil {
			return err
		}
		for waiting := true; waiting; {
			select {
			case err := <-struck:
				if err != nil {
					return err
				}
				return e.leasesUntilReplaced(ctx, base.Load())
			case how := <-done:
				if fired.Load() { // ended by the fault: its strike is under way
					done = nil
					continue
				}
				ended, waiting = append(ended, how), false
			case <-timeout:
				armed, most := e.px.deafState()
				return fmt.Errorf("%w within 2 min (%d armed, the most read from one since %d bytes; large enqueues ended: %v)", ErrNotStruck, armed, most, ended)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if len(ended) == bigTries {
			return fmt.Errorf("%w: the bus gave up each of %d large enqueues before it: %v", ErrNotStruck, bigTries, ended)
		}
	}
}

// leasesUntilReplaced adds every job the server leases to the duplicates' bound until the bus
// has replaced a connection since it stood at base (a minute at most): a connection no longer
// read stays the fault until the bus gives it up, and a job leased meanwhile whose completion
// went into it was leased while the fault struck. Then the fault has healed.
func (e *env) leasesUntilReplaced(ctx context.Context, base int64) error {
	for until := time.Now().Add(time.Minute); e.b.Reconnects() == base && time.Now().Before(until); {
		leased, err := e.activeNow(ctx)
		if err != nil {
			return fmt.Errorf("read the leases while the fault lasts: %w", err)
		}
		e.mu.Lock()
		for _, id := range leased {
			e.leased[id] = true
		}
		e.struck.leased = len(e.leased)
		e.mu.Unlock()
		time.Sleep(20 * time.Millisecond) // paces the reads; the bus's health check ends the wait
	}
	return nil
}

// ErrNotStruck is a drill whose fault never struck: the bus was not faulted, so the drill's
// checks judged nothing.
var ErrNotStruck = errors.New("the fault never struck")

// bigEnqueue sends a bigPayload enqueue without a deadline of its own (only the bus's health
// checking can end it once its connection is no longer read) and says how it ended.
func (e *env) bigEnqueue() <-chan string {
	done := make(chan string, 1)
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		start := time.Now()
		_, err := e.b.Enqueue(context.Background(), e.queue+"-big", make([]byte, bigPayload))
		done <- fmt.Sprintf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}()
	return done
}

// Drills is every drill, in transcript order.
var Drills = []Drill{
	{"sigstop-sigcont", false, func(ctx context.Context, e *env) error {
		if err := e.strike(func() error { return e.v.Signal(syscall.SIGSTOP) }); err != nil {
			return err
		}
		time.Sleep(e.opt.Outage)
		return e.v.Signal(syscall.SIGCONT)
	}},
	{"sigkill-restart-aof", true, func(ctx context.Context, e *env) error {
		// appendfsync always: the restarted server holds the leases of the moment it died.
		if err := e.strike(e.v.Crash); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
		return e.v.Restart(ctx)
	}},
	{"client-kill-all", true, func(ctx context.Context, e *env) error {
		return e.strike(func() error {
			_, err := e.in.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
			return err
		})
	}},
	{"proxy-blackhole", false, func(ctx context.Context, e *env) error {
		return e.strike(func() error { time.Sleep(e.opt.Outage); return nil }) // held: the hole
	}},
	{"freeze-forever", true, func(ctx context.Context, e *env) error {
		return e.strike(func() error { e.px.freeze(); return nil }) // healed at once: new ones pass
	}},
	{"accept-never-answer", true, func(ctx context.Context, e *env) error {
		if err := e.strike(func() error { e.px.reset(); e.px.mute(true); return nil }); err != nil {
			return err
		}
		time.Sleep(e.opt.Outage)
		e.px.mute(false)
		return nil
	}},
	{"stop-reading-mid-write", true, stopReadingMidWrite},
	{"consumer-sigkill", false, nil}, // run by drain: the consumer process is killed
}

// Result is one drill's outcome. Only counts and verdicts go into the transcript.
type Result struct {
	Name                  string
	Jobs, Completed, Dead int
	Lost                  []string // enqueued, yet neither completed nor in the morgue
	Dups, OutsideBound    int      // handled more than once; of those, not leased at the fault
	Leased, Running       int      // jobs the server had leased at the fault; handlers running then (in-process)
	Resumed               time.Duration
	ResumedOK             bool
	MustReplace           bool  // the drill requires a reconnect
	Reconnects            int64 // from the consumer's Health()
	NothingLeft           bool
	Err                   error
	// Latency is the server's latency monitor (LATENCY LATEST: its stalls over 100 ms, an
	// fsync behind other work among them), kept for a failed drill's log.
	Latency string
}

// OK is the drill's verdict.
func (r Result) OK() bool {
	return r.Err == nil && len(r.Lost) == 0 && r.OutsideBound == 0 && r.ResumedOK && r.NothingLeft &&
		r.Completed+r.Dead == r.Jobs && (!r.MustReplace || r.Reconnects > 0)
}

// Line is the result's transcript line: counts and verdicts, no timings, no sizes (the short
// and the long drills print the same lines when they pass).
func (r Result) Line() string {
	if errors.Is(r.Err, ErrNotStruck) { // nothing to judge: the drill did not run
		return fmt.Sprintf("%-22s NOT RUN: the fault never struck; verdict FAIL", r.Name)
	}
	v := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	replaced := ""
	if r.MustReplace {
		replaced = "; lost connections replaced, counted in Health() " + v(r.Reconnects > 0)
	}
	return fmt.Sprintf("%-22s lost %d; every job completed or in the morgue %s; duplicates only among the jobs leased at the fault %s; progress resumed within one lease + 2s %s%s; nothing left running %s; verdict %s",
		r.Name, len(r.Lost), v(r.Completed+r.Dead == r.Jobs && r.Err == nil), v(r.OutsideBound == 0), v(r.ResumedOK), replaced, v(r.NothingLeft), v(r.OK()))
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
	b     *bus.Bus        // the bus under test, through the proxy
	queue string

	bg sync.WaitGroup // a fault's own calls (the stop-reading drill's large enqueue)

	mu      sync.Mutex
	handled map[string]int
	running map[string]bool // handlers running now (the in-process consumer's)
	runs    []run           // every handler run
	healMS  int64           // the server's clock when the fault healed
	leased  map[string]bool // the server's active set when the fault struck: the duplicate bound
	struck  struct{ leased, running int }
}

// run is one handler run: when, and when the server had leased the job (0: unknown).
type run struct {
	at        time.Time
	claimedMS int64
}

// Run runs one drill on a fresh server.
func Run(ctx context.Context, d Drill, opt Options) (r Result) {
	r = Result{Name: d.Name, Jobs: opt.Jobs, MustReplace: d.Replaces}
	args := []string{"--appendonly", "yes", "--appendfsync", "always", "--latency-monitor-threshold", "100"}
	if dir, err := memDir(); err == nil {
		defer os.RemoveAll(dir)
		args = append(args, "--dir", dir) // after the engine's own --dir: this one holds
	}
	v, err := engines.StartValkey(ctx, engines.ValkeyOptions{Args: args})
	if err != nil {
		r.Err = err
		return r
	}
	defer v.Stop()
	e := &env{opt: opt, v: v, queue: "drill", handled: map[string]int{}, running: map[string]bool{}, leased: map[string]bool{}}
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
	if !r.OK() {
		r.Latency = e.latency(ctx)
	}
	return r
}

// memDir is a fresh directory on the host's memory-backed file system, for the server's AOF.
// appendfsync always still fsyncs before every reply, and the AOF still outlives a SIGKILL
// (what sigkill-restart-aof needs); but an fsync there costs nothing, so a drill measures the
// bus, not a disk shared with other work (a 3 s fsync stall behind another process's writes
// once made a lease lapse after the recovery). Where there is none, the engine's directory is
// used.
func memDir() (string, error) {
	const shm = "/dev/shm"
	if fi, err := os.Stat(shm); err != nil || !fi.IsDir() {
		return "", errors.New("no memory-backed file system")
	}
	return tempdir.New(shm, "emq-faults-", "emq-faults-")
}

// latency renders the server's LATENCY LATEST: event, latest and worst stall in ms.
func (e *env) latency(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	v, err := e.in.Do(ctx, "LATENCY", "LATEST")
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, ev := range v.Elems {
		if len(ev.Elems) >= 4 {
			fmt.Fprintf(&b, "%s latest %d ms, worst %d ms; ", ev.Elems[0].Text(), ev.Elems[2].Int, ev.Elems[3].Int)
		}
	}
	if b.Len() == 0 {
		return "no stall over 100 ms"
	}
	return b.String()
}

// strike holds the proxy — from then on nothing passes between the bus and the server, and
// nothing is half-way — reads what the server has leased at this instant (the at-least-once
// bound: the server's own record, not a sample taken beside a moving consumer), lets fault
// strike, and releases the proxy.
func (e *env) strike(fault func() error) error {
	e.px.hold()
	defer e.px.release()
	leased, err := e.activeSettled()
	if err != nil {
		return fmt.Errorf("read the leases at the fault: %w", err)
	}
	e.mu.Lock()
	for _, id := range leased {
		e.leased[id] = true
	}
	e.struck.leased, e.struck.running = len(e.leased), len(e.running)
	e.mu.Unlock()
	return fault()
}

// activeNow reads the active set.
func (e *env) activeNow(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	v, err := e.in.Do(ctx, "ZRANGE", "emq:{"+e.queue+"}:active", 0, -1)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(v.Elems))
	for i, el := range v.Elems {
		ids[i] = string(el.Str)
	}
	return ids, nil
}

// activeSettled reads the active set once the server has run what reached it before the hold:
// each read is a round trip, so the server passed through its event loop in between; the set
// is taken when three reads in a row agree.
func (e *env) activeSettled() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var last []string
	agree := 0
	for agree < 3 {
		ids, err := e.activeNow(ctx)
		if err != nil {
			return nil, err
		}
		if equal(ids, last) {
			agree++
		} else {
			agree = 1
		}
		last = ids
	}
	return last, nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) || a == nil != (b == nil) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
