package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
)

// ScScale names the scale axis: the bus's drain on 1, 2 and 3 Valkey Cluster primaries beside a
// standalone Valkey. It has engines of its own, so it runs once, after the durability axes.
const ScScale = "scale"

// HeadScale heads the scale axis's section of bench.out.
const HeadScale = "== SCALE"

// Deployments of the scale axis.
const (
	DeployStandalone = "standalone"
	DeployCluster    = "cluster"
)

// ScaleAxis is the drain across primaries: each primary owns the same number of queues and gets
// the drain scenario's workers and backlog, so a primary's load is the same at every size.
type ScaleAxis struct {
	Title             string         `json:"title"`
	QueuesPerPrimary  int            `json:"queues_per_primary"`
	WorkersPerQueue   int            `json:"workers_per_queue"`
	ParkedPerQueue    int            `json:"parked_per_queue"`
	BacklogPerPrimary int            `json:"backlog_per_primary"`
	Results           []*ScaleResult `json:"results"`
	Ratios            []Ratio        `json:"ratios"`
	Gaps              []string       `json:"gaps"`
}

// ScaleResult is one deployment at one size.
type ScaleResult struct {
	Deployment string  `json:"deployment"`
	Primaries  int     `json:"primaries"`
	Queues     int     `json:"queues"`
	Workers    int     `json:"workers"` // over every queue
	Backlog    int     `json:"backlog"` // jobs per round, over every queue
	JobsPerS   Spread  `json:"jobs_per_s"`
	PerPrimary float64 `json:"per_primary_jobs_per_s"` // median ÷ primaries
	CPU        *CPU    `json:"cpu,omitempty"`          // valkey: every primary together
	Startup    *Spread `json:"startup_ms,omitempty"`
	// Nodes is each primary's share: its queues and Valkey's own time in scripts.
	Nodes []ScaleNode `json:"nodes,omitempty"`
	// Redirects the router followed (MOVED, ASK, TRYAGAIN): 0 when every call went to its owner.
	Redirects int64 `json:"redirects"`
	// Redelivered counts handler starts of a job already started in the round (at-least-once
	// redeliveries; with a 30 s lease there should be none).
	Redelivered int64  `json:"redelivered"`
	Err         string `json:"error,omitempty"`
}

// ScaleNode is one primary over every round.
type ScaleNode struct {
	Addr        string  `json:"addr"`
	Queues      int     `json:"queues"`
	Jobs        int64   `json:"jobs"`
	Calls       int64   `json:"evalsha_calls"`
	UsecPerJob  float64 `json:"usec_per_job"`
	ScriptShare float64 `json:"script_share"` // script µs ÷ window µs: how busy this primary's thread was in scripts
}

// Label names a result as the report prints it: "standalone", "cluster-2".
func (r *ScaleResult) Label() string {
	if r.Deployment == DeployStandalone {
		return DeployStandalone
	}
	return DeployCluster + "-" + strconv.Itoa(r.Primaries)
}

// errClusterSize: a cluster given from outside (EMQ_VALKEY_CLUSTER) has another size.
var errClusterSize = errors.New("bench: scale: cluster of another size")

// scaleTarget is one deployment the axis drains: how to open the bus on it and where a queue
// lives on it.
type scaleTarget struct {
	res   *ScaleResult
	addrs []string
	pids  []int
	open  func(ctx context.Context) (*bus.Bus, error)
	owner func(b *bus.Bus, queue string) string
	redir func(b *bus.Bus) int64
	// primaries lists the primaries as the bus's own map names them (nil: addrs as given).
	primaries func(b *bus.Bus) []string

	b      *bus.Bus
	ledger scaleLedger                // nil: none
	admins map[string]*connector.Conn // per primary, the harness's own connection
	seq    int
	rates  []float64
	starts []float64
	cpu    cpuAcc
	nodes  map[string]*nodeAcc
}

type nodeAcc struct {
	queues          int
	jobs, calls, us int64
	wallUS          int64
}

// scaleLedger, when given, sees every job id enqueued and every handler start of every round,
// so a test can check each job was drained exactly once independently of the round's own count.
type scaleLedger interface {
	enqueued(deployment, queue string, ids []string)
	started(deployment, queue, id string)
}

// runScale measures the axis. A deployment that cannot be started or measured is an error row
// or a gap; nothing fails the rest of the bench.
func runScale(ctx context.Context, p Params, prog io.Writer) *ScaleAxis {
	return runScaleWith(ctx, p, prog, nil)
}

func runScaleWith(ctx context.Context, p Params, prog io.Writer, led scaleLedger) *ScaleAxis {
	k := max(1, p.ScaleQueues)
	workers := max(1, p.Workers/k)
	parked := max(1, busParked/k)
	perQueue := max(1, p.Backlog/k)
	ax := &ScaleAxis{QueuesPerPrimary: k, WorkersPerQueue: workers, ParkedPerQueue: parked, BacklogPerPrimary: perQueue * k,
		Title: fmt.Sprintf("drain of %d jobs per primary over %d queues per primary (%d jobs each; queue names chosen by slot so each primary owns %d), "+
			"%d workers per queue (each primary's queues together get the drain scenario's %d), empty handler; timed from the first handler start until every queue's pending and active are empty",
			perQueue*k, k, perQueue, k, workers, workers*k)}
	var targets []*scaleTarget
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	var stops []func() error
	defer func() {
		for _, stop := range stops {
			_ = stop()
		}
	}()
	start := func(res *ScaleResult, f func(context.Context) (*scaleTarget, func() error, error)) {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		t, stop, err := f(sctx)
		cancel()
		if stop != nil {
			stops = append(stops, stop)
		}
		res.Queues, res.Workers = res.Primaries*k, res.Primaries*k*workers
		res.Backlog = res.Queues * perQueue
		if errors.Is(err, engines.ErrUnavailable) || errors.Is(err, errClusterSize) {
			// No such deployment here (engines given from outside): a gap, not a failure.
			ax.Gaps = append(ax.Gaps, fmt.Sprintf("%s: not measured: %v", res.Label(), err))
			fmt.Fprintf(prog, "emq-bench: scale %s: not measured: %v\n", res.Label(), err)
			return
		}
		if err != nil {
			res.Err = err.Error()
			fmt.Fprintf(prog, "emq-bench: scale %s: error: %v\n", res.Label(), err)
			ax.Results = append(ax.Results, res)
			return
		}
		t.res, t.ledger = res, led
		if err := t.connect(ctx); err != nil {
			res.Err = err.Error()
			fmt.Fprintf(prog, "emq-bench: scale %s: error: %v\n", res.Label(), err)
		} else {
			targets = append(targets, t)
		}
		ax.Results = append(ax.Results, res)
	}
	fmt.Fprintf(prog, "emq-bench: scale: starting a standalone Valkey and clusters of %v primaries\n", p.ScalePrimaries)
	start(&ScaleResult{Deployment: DeployStandalone, Primaries: 1}, func(ctx context.Context) (*scaleTarget, func() error, error) {
		vk, err := engines.StartValkey(ctx, engines.ValkeyOptions{})
		if err != nil {
			return nil, nil, err
		}
		return standaloneTarget(vk.Addr, vk.PID()), vk.Stop, nil
	})
	for _, n := range p.ScalePrimaries {
		start(&ScaleResult{Deployment: DeployCluster, Primaries: n}, func(ctx context.Context) (*scaleTarget, func() error, error) {
			c, err := engines.StartValkeyCluster(ctx, engines.ClusterOptions{Primaries: n})
			if err != nil {
				return nil, nil, err
			}
			if len(c.Addrs) != n {
				// A given cluster (EMQ_VALKEY_CLUSTER) has the size it has.
				return nil, c.Stop, fmt.Errorf("%w: the given cluster has %d nodes, want %d primaries", errClusterSize, len(c.Addrs), n)
			}
			return clusterTarget(c.Addrs, c.PIDs()), c.Stop, nil
		})
	}
	// Rounds interleave the deployments, as the other scenarios interleave systems: a drift of
	// the machine's load spreads over all of them.
	for rep := range p.Repeats {
		for _, t := range targets {
			if t.res.Err != "" {
				continue
			}
			r, err := t.round(ctx, k, perQueue, workers, parked)
			if err != nil {
				t.res.Err = err.Error()
				fmt.Fprintf(prog, "emq-bench: scale %s: error: %v\n", t.res.Label(), err)
				continue
			}
			t.rates = append(t.rates, r.rate)
			t.starts = append(t.starts, float64(r.startup.Microseconds())/1000)
			fmt.Fprintf(prog, "emq-bench: scale %s round %d/%d: %.0f jobs/s (%d jobs on %d queues)\n", t.res.Label(), rep+1, p.Repeats, r.rate, t.res.Backlog, t.res.Queues)
		}
	}
	for _, t := range targets {
		t.finish()
	}
	ax.Ratios = scaleRatios(ax.Results)
	return ax
}

func standaloneTarget(addr string, pid int) *scaleTarget {
	return &scaleTarget{addrs: []string{addr}, pids: []int{pid},
		open: func(ctx context.Context) (*bus.Bus, error) {
			return bus.Open(ctx, addr, bus.Options{BatchEnqueue: true})
		},
		owner: func(*bus.Bus, string) string { return addr },
		redir: func(*bus.Bus) int64 { return 0 }}
}

func (t *scaleTarget) connect(ctx context.Context) error {
	b, err := t.open(ctx)
	if err != nil {
		return err
	}
	t.b = b
	if t.primaries != nil {
		// Owner answers in the map's spelling of an address; the admin connections use it too.
		ps := t.primaries(b)
		if len(ps) != len(t.addrs) {
			return fmt.Errorf("bench: scale %s: the bus's map has %d primaries (%v), the cluster %d", t.res.Label(), len(ps), ps, len(t.addrs))
		}
		t.addrs = ps
	}
	t.admins = map[string]*connector.Conn{}
	t.nodes = map[string]*nodeAcc{}
	for _, a := range t.addrs {
		c, err := connector.Dial(ctx, a, connector.Options{})
		if err != nil {
			return fmt.Errorf("bench: valkey admin connection %s: %w", a, err)
		}
		t.admins[a] = c
		t.nodes[a] = &nodeAcc{}
	}
	return nil
}

func (t *scaleTarget) close() {
	if t.b != nil {
		t.b.Close()
	}
	for _, c := range t.admins {
		c.Close()
	}
}

// queues picks k fresh queue names per primary: the names are tried in order and each kept only
// while its owner has fewer than k, so every primary owns exactly k.
func (t *scaleTarget) queues(k int) (map[string][]string, error) {
	t.seq++
	by := map[string][]string{}
	want := len(t.addrs) * k
	got := 0
	for i := 0; got < want; i++ {
		if i > 1000*want {
			return nil, fmt.Errorf("bench: scale %s: no spread of %d queues per primary found (owners %v)", t.res.Label(), k, by)
		}
		q := fmt.Sprintf("bench-scale-%d-%d-%d", time.Now().UnixMilli()%1_000_000, t.seq, i)
		a := t.owner(t.b, q)
		if _, ok := t.admins[a]; !ok {
			return nil, fmt.Errorf("bench: scale %s: queue %s is owned by %q, not a primary of the map %v", t.res.Label(), q, a, t.addrs)
		}
		if len(by[a]) < k {
			by[a] = append(by[a], q)
			got++
		}
	}
	return by, nil
}

// round fills every queue and drains them all at once with one consumer per queue.
func (t *scaleTarget) round(ctx context.Context, k, perQueue, workers, parked int) (drainResult, error) {
	by, err := t.queues(k)
	if err != nil {
		return drainResult{}, err
	}
	var all []string
	for _, a := range t.addrs {
		all = append(all, by[a]...)
	}
	defer t.clean(context.WithoutCancel(ctx), by)
	fill := func(q string) error {
		return fillBatches(ctx, perQueue, 500, func(ctx context.Context, ps [][]byte) error {
			msgs := make([]bus.Message, len(ps))
			for i, p := range ps {
				msgs[i] = bus.Message{Payload: p}
			}
			out, err := t.b.EnqueueBatch(ctx, q, msgs)
			if err == nil && t.ledger != nil {
				ids := make([]string, len(out))
				for i, e := range out {
					ids[i] = e.ID
				}
				t.ledger.enqueued(t.res.Label(), q, ids)
			}
			return err
		})
	}
	redir0 := t.redir(t.b) // the fill's calls count too: every one should go straight to its owner
	if err := parallel(len(all), len(all), func(i int) error { return fill(all[i]) }); err != nil {
		return drainResult{}, err
	}
	n := int64(len(all) * perQueue)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	for _, c := range t.admins {
		if err := resetStats(dctx, c); err != nil {
			return drainResult{}, err
		}
	}
	clk := cpuClock{valkeyPIDs: t.pids}
	c0 := clk.read()
	begun := time.Now()

	var first atomic.Int64
	var started atomic.Int64
	seen := make([]sync.Map, len(all))
	var redelivered atomic.Int64
	errc := make(chan error, 1)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	done := make(chan struct{})
	var stops []func() error
	stopAll := func() error {
		var errs []error
		for _, s := range stops {
			errs = append(errs, s())
		}
		stops = nil
		return errors.Join(errs...)
	}
	defer stopAll()
	for i, q := range all {
		c, err := t.b.Consumer(q, bus.ConsumerOptions{Concurrency: workers, Parked: parked, Lease: busLease, Grace: 5 * time.Second,
			Logf: func(f string, args ...any) {
				select {
				case <-done:
				default:
					report(fmt.Errorf("bench: scale consumer: "+f, args...))
				}
			}}, func(ctx context.Context, j *bus.Job) error {
			if first.Load() == 0 {
				first.CompareAndSwap(0, time.Now().UnixNano())
			}
			if _, dup := seen[i].LoadOrStore(j.ID, struct{}{}); dup {
				redelivered.Add(1)
			}
			started.Add(1)
			if t.ledger != nil {
				t.ledger.started(t.res.Label(), j.Queue, j.ID)
			}
			if _, err := sentAt(j.Payload); err != nil {
				report(err)
				return bus.Permanent(err)
			}
			return nil
		})
		if err != nil {
			return drainResult{}, err
		}
		cctx, ccancel := context.WithCancel(dctx)
		ended := make(chan error, 1)
		go func() { ended <- c.Run(cctx) }()
		var once sync.Once
		var rerr error
		stops = append(stops, func() error {
			once.Do(func() { ccancel(); rerr = <-ended })
			return rerr
		})
	}
	// The end is read from the servers, as in the drain scenario: every job started, and every
	// queue's pending and active empty on its owner.
	last, err := t.pollEmpty(dctx, by, func() bool { return started.Load() >= n }, errc)
	close(done)
	c1 := clk.read()
	// Valkey's script time is read before the consumers stop: their last empty claims are not
	// the drain's.
	type stat struct{ calls, us int64 }
	stats := map[string]stat{}
	if err == nil {
		for a := range by {
			calls, us, serr := evalshaStats(ctx, t.admins[a])
			if serr != nil {
				err = serr
				break
			}
			stats[a] = stat{calls, us}
		}
	}
	if serr := stopAll(); err == nil {
		err = serr
	}
	if err != nil {
		return drainResult{}, err
	}
	if got := started.Load() - redelivered.Load(); got != n {
		return drainResult{}, fmt.Errorf("%w: %d distinct jobs started of %d", errIncomplete, got, n)
	}
	f := first.Load()
	if f == 0 || last.UnixNano() <= f {
		return drainResult{}, fmt.Errorf("%w: no drain window", errIncomplete)
	}
	wall := last.Sub(time.Unix(0, f))
	for a, qs := range by {
		na := t.nodes[a]
		na.queues = len(qs)
		na.jobs += int64(len(qs) * perQueue)
		na.calls += stats[a].calls
		na.us += stats[a].us
		na.wallUS += wall.Microseconds()
	}
	t.res.Redirects += t.redir(t.b) - redir0
	t.res.Redelivered += redelivered.Load()
	t.cpu.add(c0, c1)
	return drainResult{rate: float64(n) / wall.Seconds(), startup: time.Unix(0, f).Sub(begun)}, nil
}

// pollEmpty returns the instant every queue was seen with no pending and no active job, polled
// each millisecond once ready holds (one pipeline per primary).
func (t *scaleTarget) pollEmpty(ctx context.Context, by map[string][]string, ready func() bool, errc <-chan error) (time.Time, error) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%w: %w", errIncomplete, ctx.Err())
		case err := <-errc:
			return time.Time{}, err
		case <-tick.C:
		}
		if !ready() {
			continue
		}
		empty := true
		for a, qs := range by {
			cmds := make([]connector.Cmd, 0, 2*len(qs))
			for _, q := range qs {
				cmds = append(cmds, connector.Cmd{Args: []any{"ZCARD", "emq:{" + q + "}:pending"}}, connector.Cmd{Args: []any{"ZCARD", "emq:{" + q + "}:active"}})
			}
			vs, err := t.admins[a].Pipeline(ctx, cmds...)
			if err != nil {
				return time.Time{}, fmt.Errorf("bench: scale poll %s: %w", a, err)
			}
			for _, v := range vs {
				if e := v.Err(); e != nil {
					return time.Time{}, fmt.Errorf("bench: scale poll %s: %w", a, e)
				}
				if v.Int != 0 {
					empty = false
				}
			}
			if !empty {
				break
			}
		}
		if empty {
			return time.Now(), nil
		}
	}
}

// clean deletes the round's queues' keys on their owners.
func (t *scaleTarget) clean(ctx context.Context, by map[string][]string) {
	for a, qs := range by {
		for _, q := range qs {
			_ = unlinkMatch(ctx, t.admins[a], "emq:{"+q+"}:*")
		}
	}
}

// unlinkMatch deletes every key matching pattern on one node.
func unlinkMatch(ctx context.Context, c *connector.Conn, pattern string) error {
	cursor := "0"
	for {
		v, err := c.Do(ctx, "SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
		if err != nil {
			return fmt.Errorf("bench: scan %s: %w", pattern, err)
		}
		if len(v.Elems) != 2 {
			return fmt.Errorf("bench: scan %s: unexpected reply", pattern)
		}
		cursor = string(v.Elems[0].Str)
		if keys := v.Elems[1].Elems; len(keys) > 0 {
			cmd := make([]any, 0, len(keys)+1)
			cmd = append(cmd, "UNLINK")
			for _, k := range keys {
				cmd = append(cmd, string(k.Str))
			}
			if _, err := c.Do(ctx, cmd...); err != nil {
				return fmt.Errorf("bench: unlink: %w", err)
			}
		}
		if cursor == "0" {
			return nil
		}
	}
}

// finish turns the rounds into the result.
func (t *scaleTarget) finish() {
	r := t.res
	if r.Err != "" || len(t.rates) == 0 {
		return
	}
	r.JobsPerS = spreadOf(t.rates)
	r.PerPrimary = r.JobsPerS.Median / float64(r.Primaries)
	sp := spreadOf(t.starts)
	r.Startup = &sp
	r.CPU = t.cpu.cpu()
	for _, a := range t.addrs {
		na := t.nodes[a]
		node := ScaleNode{Addr: a, Queues: na.queues, Jobs: na.jobs, Calls: na.calls}
		if na.jobs > 0 {
			node.UsecPerJob = float64(na.us) / float64(na.jobs)
		}
		if na.wallUS > 0 {
			node.ScriptShare = float64(na.us) / float64(na.wallUS)
		}
		r.Nodes = append(r.Nodes, node)
	}
}

// scaleRatios: the router's own cost (one primary against the standalone server) and the
// speed-up of n primaries over one.
func scaleRatios(rs []*ScaleResult) []Ratio {
	med := map[string]float64{}
	var ns []int
	for _, r := range rs {
		if r.Err == "" && r.JobsPerS.Median > 0 {
			med[r.Label()] = r.JobsPerS.Median
			if r.Deployment == DeployCluster {
				ns = append(ns, r.Primaries)
			}
		}
	}
	slices.Sort(ns)
	var out []Ratio
	one := DeployCluster + "-1"
	if c, s := med[one], med[DeployStandalone]; c > 0 && s > 0 {
		out = append(out, Ratio{Name: one + "/" + DeployStandalone, Value: c / s})
	}
	for _, n := range ns {
		if n == 1 {
			continue
		}
		name := DeployCluster + "-" + strconv.Itoa(n)
		if c, base := med[name], med[one]; c > 0 && base > 0 {
			out = append(out, Ratio{Name: name + "/" + one, Value: c / base})
		}
	}
	return out
}

// writeScale is the axis's section of bench.out.
func writeScale(w io.Writer, rep *Report) {
	ax := rep.Scale
	if ax == nil {
		return
	}
	fmt.Fprintf(w, "%s — the bus's drain across Valkey Cluster primaries ==\n%s; median of %d rounds, interleaved.\n", HeadScale, ax.Title, rep.Params.Repeats)
	fmt.Fprintf(w, "Machine: %s. %s\n", coresText(rep.Machine), scaleShapeNote)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "deployment\tprimaries\tqueues\tworkers\tjobs/s (median)\tspread (min–max)\trounds\tper primary\tredirects\tcpu\n")
	for _, r := range ax.Results {
		if r.Err != "" {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\terror\t\t\t\t\t%s\n", r.Label(), r.Primaries, r.Queues, r.Workers, r.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.0f–%.0f\t%d\t%.0f\t%d\t%s\n", r.Label(), r.Primaries, r.Queues, r.Workers,
			r.JobsPerS.Median, r.JobsPerS.Min, r.JobsPerS.Max, len(r.JobsPerS.Repeats), r.PerPrimary, r.Redirects, cpuText(r.CPU))
	}
	tw.Flush()
	fmt.Fprintf(w, "cpu: cores busy as bench process / valkey (every primary together) / postgres (none here) / whole machine, out = other work's share.\n")
	for _, r := range ax.Results {
		if r.Err != "" || len(r.Nodes) == 0 {
			continue
		}
		var parts []string
		for _, n := range r.Nodes {
			parts = append(parts, fmt.Sprintf("%s %d queues, %.2f µs of script per job, scripts %.0f%% of the window", n.Addr, n.Queues, n.UsecPerJob, 100*n.ScriptShare))
		}
		fmt.Fprintf(w, "%s per primary (INFO commandstats): %s\n", r.Label(), strings.Join(parts, "; "))
	}
	for _, r := range ax.Results {
		if v := scaleVerdict(r, rep.Machine.Cores); v != "" {
			fmt.Fprintf(w, "%s → %s\n", r.Label(), v)
		}
	}
	for _, r := range ax.Results {
		if r.Redelivered > 0 {
			fmt.Fprintf(w, "%s: %d redelivered handler starts (a job started twice in one round)\n", r.Label(), r.Redelivered)
		}
	}
	writeRatios(w, ax.Ratios, "cluster-1/standalone: the router's own cost; cluster-n/cluster-1: the speed-up of n primaries")
	for _, g := range ax.Gaps {
		fmt.Fprintf(w, "gap: %s\n", g)
	}
	fmt.Fprintln(w)
}

// scaleShapeNote says what a scale figure on a small machine is.
const scaleShapeNote = "Every primary, the standalone server and the load generator share these cores: on few cores the figure shows the shape (queues on different primaries drain independently), not the ceiling."

// coresText prints the machine's cores and its cgroup CPU limit.
func coresText(m Machine) string {
	limit := "no cgroup CPU limit"
	if m.CPULimit > 0 {
		limit = fmt.Sprintf("cgroup CPU limit %.2f cores", m.CPULimit)
	}
	return fmt.Sprintf("%d cores (runtime.NumCPU), %s", m.Cores, limit)
}

// writeScaleHTML is the axis's part of bench.html: primaries → jobs/s beside the standalone
// baseline, and the table.
func writeScaleHTML(b *strings.Builder, rep *Report) {
	ax := rep.Scale
	if ax == nil {
		return
	}
	b.WriteString("<h2 data-fit>Scale: the bus's drain across Valkey Cluster primaries</h2>\n")
	fmt.Fprintf(b, "<p class=\"wrap\" data-fit>%s; median of %d rounds. Machine: %s. %s</p>\n", esc(ax.Title), rep.Params.Repeats, esc(coresText(rep.Machine)), esc(scaleShapeNote))
	var rows []barRow
	for _, r := range ax.Results {
		if r.Err != "" || r.JobsPerS.Median <= 0 {
			continue
		}
		col := systemColor(SysBus)
		if r.Deployment == DeployStandalone {
			col = "#555"
		}
		rows = append(rows, barRow{label: r.Label(), color: col, median: r.JobsPerS.Median, lo: r.JobsPerS.Min, hi: r.JobsPerS.Max})
	}
	if len(rows) > 0 {
		b.WriteString(barChart("bus drain: primaries → jobs/s (standalone Valkey as the baseline)", "jobs/s: median bar, min–max whiskers over the rounds", rows, nil))
	}
	b.WriteString("<table><tr><th>deployment</th><th>queues</th><th>workers</th><th>jobs/s</th><th>per primary</th><th>redirects</th><th>cpu</th></tr>\n")
	for _, r := range ax.Results {
		if r.Err != "" {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td colspan=\"4\" class=\"fail\">error: %s</td></tr>\n", esc(r.Label()), r.Queues, r.Workers, esc(r.Err))
			continue
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td></tr>\n", esc(r.Label()), r.Queues, r.Workers,
			human(r.JobsPerS.Median), human(r.PerPrimary), r.Redirects, esc(cpuText(r.CPU)))
	}
	b.WriteString("</table>\n")
	for _, r := range ax.Results {
		if r.Err != "" || len(r.Nodes) == 0 {
			continue
		}
		var parts []string
		for _, n := range r.Nodes {
			parts = append(parts, fmt.Sprintf("%d queues, %.2f µs of script per job, scripts %.0f%% of the window", n.Queues, n.UsecPerJob, 100*n.ScriptShare))
		}
		fmt.Fprintf(b, "<p class=\"wrap\" data-fit>%s, each primary (Valkey INFO commandstats): %s</p>\n", esc(r.Label()), esc(strings.Join(parts, "; ")))
	}
	var rs []string
	for _, r := range ax.Ratios {
		rs = append(rs, fmt.Sprintf("%s = %.2f", r.Name, r.Value))
	}
	if len(rs) > 0 {
		fmt.Fprintf(b, "<p class=\"wrap\" data-fit>ratios (cluster-1/standalone: the router's own cost; cluster-n/cluster-1: the speed-up of n primaries): %s</p>\n", esc(strings.Join(rs, "; ")))
	}
	for _, g := range ax.Gaps {
		fmt.Fprintf(b, "<p class=\"wrap\" data-fit>gap: %s</p>\n", esc(g))
	}
}

// scaleVerdict says what held a deployment back: the machine's cores, one primary's thread, or
// neither (waiting).
func scaleVerdict(r *ScaleResult, cores int) string {
	if r.Err != "" || r.CPU == nil {
		return ""
	}
	busiest := 0.0
	for _, n := range r.Nodes {
		busiest = max(busiest, n.ScriptShare)
	}
	if m := r.CPU.Machine; m != nil && *m >= 0.8*float64(cores) {
		return fmt.Sprintf("the machine's cores were saturated (%.2f of %d busy; other work held %s of the cores): bounded by the cores, not by the primaries", *m, cores, pct(r.CPU.Outside))
	}
	if busiest >= 0.6 {
		return fmt.Sprintf("bound by a primary's one thread (scripts filled %.0f%% of the window on the busiest)", 100*busiest)
	}
	return "neither the cores nor a primary's thread was full: the time went to waiting (round trips, polls)"
}
