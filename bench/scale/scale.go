// Package scale is the bench's scale axis: the bus's drain on Valkey Clusters of 1, 2 and 3
// primaries beside a standalone Valkey, each primary owning the same number of queues and
// getting the drain scenario's workers and backlog, so a perfect cluster would show n times the
// one-primary figure. It has engines of its own and runs once, after the durability axes.
package scale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/internal/engines"
)

// Deployments of the axis.
const (
	Standalone = "standalone"
	Cluster    = "cluster"
)

// Config sizes the axis from the bench's parameters.
type Config struct {
	Primaries        []int // cluster sizes
	QueuesPerPrimary int
	Workers          int // the drain scenario's W, shared by each primary's queues
	Parked           int // the drain scenario's parked slots, shared likewise
	Backlog          int // the drain scenario's backlog, per primary
	Repeats          int
}

// Axis is the drain across primaries.
type Axis struct {
	Title             string          `json:"title"`
	QueuesPerPrimary  int             `json:"queues_per_primary"`
	WorkersPerQueue   int             `json:"workers_per_queue"`
	ParkedPerQueue    int             `json:"parked_per_queue"`
	BacklogPerPrimary int             `json:"backlog_per_primary"`
	Repeats           int             `json:"repeats"`
	Results           []*Result       `json:"results"`
	Ratios            []measure.Ratio `json:"ratios"`
	Gaps              []string        `json:"gaps"`
}

// Result is one deployment at one size.
type Result struct {
	Deployment string          `json:"deployment"`
	Primaries  int             `json:"primaries"`
	Queues     int             `json:"queues"`
	Workers    int             `json:"workers"` // over every queue
	Backlog    int             `json:"backlog"` // jobs per round, over every queue
	JobsPerS   measure.Spread  `json:"jobs_per_s"`
	PerPrimary float64         `json:"per_primary_jobs_per_s"` // median ÷ primaries
	CPU        *measure.CPU    `json:"cpu,omitempty"`          // valkey: every primary together
	Startup    *measure.Spread `json:"startup_ms,omitempty"`
	// Nodes is each primary's share: its queues and Valkey's own time in scripts.
	Nodes []Node `json:"nodes,omitempty"`
	// Redirects the router followed (MOVED, ASK, TRYAGAIN): 0 when every call went to its owner.
	Redirects int64 `json:"redirects"`
	// Redelivered counts handler starts of a job already started in the round (at-least-once
	// redeliveries; with a 30 s lease there should be none).
	Redelivered int64  `json:"redelivered"`
	Err         string `json:"error,omitempty"`
}

// Node is one primary over every round.
type Node struct {
	Addr        string  `json:"addr"`
	Queues      int     `json:"queues"`
	Jobs        int64   `json:"jobs"`
	Calls       int64   `json:"evalsha_calls"`
	UsecPerJob  float64 `json:"usec_per_job"`
	ScriptShare float64 `json:"script_share"` // script µs ÷ window µs: how busy this primary's thread was in scripts
}

// Label names a result as the report prints it: "standalone", "cluster-2".
func (r *Result) Label() string {
	if r.Deployment == Standalone {
		return Standalone
	}
	return Cluster + "-" + strconv.Itoa(r.Primaries)
}

// errClusterSize: a cluster given from outside (EMQ_VALKEY_CLUSTER) has another size.
var errClusterSize = errors.New("bench: scale: cluster of another size")

// ledger, when given, sees every job id enqueued and every handler start of every round, so a
// test can check each job was drained exactly once independently of the round's own count.
type ledger interface {
	enqueued(deployment, queue string, ids []string)
	started(deployment, queue, id string)
}

// sizes is one round's shape: k queues per primary of perQueue jobs, workers and parked slots
// per queue.
type sizes struct{ k, perQueue, workers, parked int }

// Run measures the axis. A deployment that cannot be started or measured is an error row or a
// gap; nothing fails the rest of the bench.
func Run(ctx context.Context, cfg Config, prog io.Writer) *Axis { return run(ctx, cfg, prog, nil) }

func run(ctx context.Context, cfg Config, prog io.Writer, led ledger) *Axis {
	k := max(1, cfg.QueuesPerPrimary)
	sz := sizes{k: k, perQueue: max(1, cfg.Backlog/k), workers: max(1, cfg.Workers/k), parked: max(1, cfg.Parked/k)}
	ax := &Axis{QueuesPerPrimary: k, WorkersPerQueue: sz.workers, ParkedPerQueue: sz.parked, BacklogPerPrimary: sz.perQueue * k, Repeats: cfg.Repeats,
		Title: fmt.Sprintf("drain of %d jobs per primary over %d queues per primary (%d jobs each; queue names chosen by slot so each primary owns %d), "+
			"%d workers per queue (each primary's queues together get the drain scenario's %d), empty handler; timed from the first handler start until every queue's pending and active are empty",
			sz.perQueue*k, k, sz.perQueue, k, sz.workers, sz.workers*k)}
	d := &deployments{ax: ax, sz: sz, prog: prog, led: led}
	defer d.close()
	fmt.Fprintf(prog, "emq-bench: scale: starting a standalone Valkey and clusters of %v primaries\n", cfg.Primaries)
	d.start(ctx, &Result{Deployment: Standalone, Primaries: 1}, startStandalone)
	for _, n := range cfg.Primaries {
		d.start(ctx, &Result{Deployment: Cluster, Primaries: n}, func(ctx context.Context) (*target, func() error, error) { return startCluster(ctx, n) })
	}
	// Rounds interleave the deployments, as the other scenarios interleave systems: a drift of
	// the machine's load spreads over all of them.
	for rep := range cfg.Repeats {
		for _, t := range d.targets {
			if t.res.Err != "" {
				continue
			}
			rate, startup, err := t.round(ctx, sz)
			if err != nil {
				t.res.Err = err.Error()
				fmt.Fprintf(prog, "emq-bench: scale %s: error: %v\n", t.res.Label(), err)
				continue
			}
			t.rates = append(t.rates, rate)
			t.starts = append(t.starts, float64(startup.Microseconds())/1000)
			fmt.Fprintf(prog, "emq-bench: scale %s round %d/%d: %.0f jobs/s (%d jobs on %d queues)\n", t.res.Label(), rep+1, cfg.Repeats, rate, t.res.Backlog, t.res.Queues)
		}
	}
	for _, t := range d.targets {
		t.finish()
	}
	ax.Ratios = ratios(ax.Results)
	return ax
}

// deployments are the axis's started engines and the targets opened on them.
type deployments struct {
	ax      *Axis
	sz      sizes
	prog    io.Writer
	led     ledger
	targets []*target
	stops   []func() error
}

func (d *deployments) close() {
	for _, t := range d.targets {
		t.close()
	}
	for _, stop := range d.stops {
		_ = stop()
	}
}

// start starts one deployment and records it as a result, an error row or a gap.
func (d *deployments) start(ctx context.Context, res *Result, f func(context.Context) (*target, func() error, error)) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t, stop, err := f(sctx)
	cancel()
	if stop != nil {
		d.stops = append(d.stops, stop)
	}
	res.Queues, res.Workers = res.Primaries*d.sz.k, res.Primaries*d.sz.k*d.sz.workers
	res.Backlog = res.Queues * d.sz.perQueue
	if errors.Is(err, engines.ErrUnavailable) || errors.Is(err, errClusterSize) {
		// No such deployment here (engines given from outside): a gap, not a failure.
		d.ax.Gaps = append(d.ax.Gaps, fmt.Sprintf("%s: not measured: %v", res.Label(), err))
		fmt.Fprintf(d.prog, "emq-bench: scale %s: not measured: %v\n", res.Label(), err)
		return
	}
	d.ax.Results = append(d.ax.Results, res)
	if err == nil {
		t.res, t.ledger = res, d.led
		if err = t.connect(ctx); err == nil {
			d.targets = append(d.targets, t)
			return
		}
		t.close()
	}
	res.Err = err.Error()
	fmt.Fprintf(d.prog, "emq-bench: scale %s: error: %v\n", res.Label(), err)
}

func startStandalone(ctx context.Context) (*target, func() error, error) {
	vk, err := engines.StartValkey(ctx, engines.ValkeyOptions{})
	if err != nil {
		return nil, nil, err
	}
	return standaloneTarget(vk.Addr, vk.PID()), vk.Stop, nil
}

func startCluster(ctx context.Context, n int) (*target, func() error, error) {
	c, err := engines.StartValkeyCluster(ctx, engines.ClusterOptions{Primaries: n})
	if err != nil {
		return nil, nil, err
	}
	if len(c.Addrs) != n {
		// A given cluster (EMQ_VALKEY_CLUSTER) has the size it has.
		return nil, c.Stop, fmt.Errorf("%w: the given cluster has %d nodes, want %d primaries", errClusterSize, len(c.Addrs), n)
	}
	return clusterTarget(c.Addrs, c.PIDs()), c.Stop, nil
}
