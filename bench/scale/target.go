package scale

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/kit/bench/internal/vkadmin"
	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/cluster"
	"github.com/echomq/kit/reference/connector"
)

// lease is every consumer's lease: long enough that nothing is redelivered.
const lease = 30 * time.Second

// target is one deployment the axis drains: how to open the bus on it and where a queue lives
// on it.
type target struct {
	res   *Result
	addrs []string
	pids  []int
	open  func(ctx context.Context) (*bus.Bus, error)
	owner func(b *bus.Bus, queue string) string
	redir func(b *bus.Bus) int64
	// primaries lists the primaries as the bus's own map names them (nil: addrs as given).
	primaries func(b *bus.Bus) []string

	b      *bus.Bus
	ledger ledger                     // nil: none
	admins map[string]*connector.Conn // per primary, the harness's own connection
	seq    int
	rates  []float64
	starts []float64
	cpu    measure.Acc
	nodes  map[string]*nodeAcc
}

type nodeAcc struct {
	queues          int
	jobs, calls, us int64
	wallUS          int64
}

func standaloneTarget(addr string, pid int) *target {
	return &target{addrs: []string{addr}, pids: []int{pid},
		open: func(ctx context.Context) (*bus.Bus, error) {
			return bus.Open(ctx, addr, bus.Options{BatchEnqueue: true})
		},
		owner: func(*bus.Bus, string) string { return addr },
		redir: func(*bus.Bus) int64 { return 0 }}
}

// clusterTarget is a Valkey Cluster drained through the bus in cluster mode: one pipeline per
// primary, each queue's scripts sent to the primary owning its slot.
func clusterTarget(addrs []string, pids []int) *target {
	return &target{addrs: addrs, pids: pids,
		open: func(ctx context.Context) (*bus.Bus, error) {
			return bus.OpenCluster(ctx, addrs, bus.Options{BatchEnqueue: true})
		},
		owner:     func(b *bus.Bus, q string) string { return b.Router().Owner(cluster.SlotOfQueue(q)) },
		primaries: func(b *bus.Bus) []string { return b.Router().Primaries() },
		redir: func(b *bus.Bus) int64 {
			s := b.Router().Stats()
			return s.Moved + s.Ask + s.TryAgain
		}}
}

func (t *target) connect(ctx context.Context) error {
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

func (t *target) close() {
	if t.b != nil {
		t.b.Close()
	}
	for _, c := range t.admins {
		c.Close()
	}
}

// queues picks k fresh queue names per primary: the names are tried in order and each kept only
// while its owner has fewer than k, so every primary owns exactly k.
func (t *target) queues(k int) (map[string][]string, error) {
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
func (t *target) round(ctx context.Context, sz sizes) (float64, time.Duration, error) {
	by, err := t.queues(sz.k)
	if err != nil {
		return 0, 0, err
	}
	var all []string
	for _, a := range t.addrs {
		all = append(all, by[a]...)
	}
	defer t.clean(context.WithoutCancel(ctx), by)
	redir0 := t.redir(t.b) // the fill's calls count too: every one should go straight to its owner
	if err := queue.Parallel(len(all), len(all), func(i int) error { return t.fill(ctx, all[i], sz.perQueue) }); err != nil {
		return 0, 0, err
	}
	n := int64(len(all) * sz.perQueue)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for _, c := range t.admins {
		if err := measure.ResetStats(dctx, c); err != nil {
			return 0, 0, err
		}
	}
	clk := measure.Clock{ValkeyPIDs: t.pids}
	c0 := clk.Read()
	dr := &drainRound{t: t, begun: time.Now(), seen: make([]sync.Map, len(all)), errc: make(chan error, 1), done: make(chan struct{})}
	defer dr.stopAll()
	if err := dr.startConsumers(dctx, all, sz); err != nil {
		return 0, 0, err
	}
	// The end is read from the servers, as in the drain scenario: every job started, and every
	// queue's pending and active empty on its owner.
	last, err := t.pollEmpty(dctx, by, func() bool { return dr.started.Load() >= n }, dr.errc)
	close(dr.done)
	c1 := clk.Read()
	stats, err := t.scriptStats(ctx, by, err) // before the consumers stop: their last empty claims are not the drain's
	if serr := dr.stopAll(); err == nil {
		err = serr
	}
	if err != nil {
		return 0, 0, err
	}
	return t.account(dr, by, stats, n, last, sz, redir0, c0, c1)
}

// fill enqueues perQueue jobs on q, outside the window.
func (t *target) fill(ctx context.Context, q string, perQueue int) error {
	return queue.FillBatches(ctx, perQueue, 500, func(ctx context.Context, ps [][]byte) error {
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

// drainRound is one round's consumers and what their handlers saw.
type drainRound struct {
	t           *target
	begun       time.Time
	first       atomic.Int64
	started     atomic.Int64
	redelivered atomic.Int64
	seen        []sync.Map // per queue: the job ids started
	errc        chan error
	done        chan struct{}
	stops       []func() error
}

func (dr *drainRound) report(err error) {
	select {
	case dr.errc <- err:
	default:
	}
}

// startConsumers runs one consumer per queue (workers and parked slots each).
func (dr *drainRound) startConsumers(ctx context.Context, all []string, sz sizes) error {
	for i, q := range all {
		c, err := dr.t.b.Consumer(q, bus.ConsumerOptions{Concurrency: sz.workers, Parked: sz.parked, Lease: bus.Ms(lease), Grace: 5 * time.Second,
			Logf: func(f string, args ...any) {
				select {
				case <-dr.done:
				default:
					dr.report(fmt.Errorf("bench: scale consumer: "+f, args...))
				}
			}}, func(ctx context.Context, j *bus.Job) error { return dr.handle(i, j) })
		if err != nil {
			return err
		}
		cctx, ccancel := context.WithCancel(ctx)
		ended := make(chan error, 1)
		go func() { ended <- c.Run(cctx) }()
		var once sync.Once
		var rerr error
		dr.stops = append(dr.stops, func() error {
			once.Do(func() { ccancel(); rerr = <-ended })
			return rerr
		})
	}
	return nil
}

// handle is every consumer's handler: the first start, redeliveries, the ledger.
func (dr *drainRound) handle(i int, j *bus.Job) error {
	if dr.first.Load() == 0 {
		dr.first.CompareAndSwap(0, time.Now().UnixNano())
	}
	if _, dup := dr.seen[i].LoadOrStore(j.ID, struct{}{}); dup {
		dr.redelivered.Add(1)
	}
	dr.started.Add(1)
	if dr.t.ledger != nil {
		dr.t.ledger.started(dr.t.res.Label(), j.Queue, j.ID)
	}
	if _, err := queue.SentAt(j.Payload); err != nil {
		dr.report(err)
		return bus.Permanent(err)
	}
	return nil
}

func (dr *drainRound) stopAll() error {
	var errs []error
	for _, s := range dr.stops {
		errs = append(errs, s())
	}
	dr.stops = nil
	return errors.Join(errs...)
}

type stat struct{ calls, us int64 }

// scriptStats reads every primary's script time, unless the round already failed.
func (t *target) scriptStats(ctx context.Context, by map[string][]string, err error) (map[string]stat, error) {
	if err != nil {
		return nil, err
	}
	stats := map[string]stat{}
	for a := range by {
		calls, us, err := measure.EvalshaStats(ctx, t.admins[a])
		if err != nil {
			return nil, err
		}
		stats[a] = stat{calls, us}
	}
	return stats, nil
}

// account checks the round and folds it into the target's figures.
func (t *target) account(dr *drainRound, by map[string][]string, stats map[string]stat, n int64, last time.Time, sz sizes, redir0 int64, c0, c1 measure.Times) (float64, time.Duration, error) {
	if got := dr.started.Load() - dr.redelivered.Load(); got != n {
		return 0, 0, fmt.Errorf("%w: %d distinct jobs started of %d", queue.ErrIncomplete, got, n)
	}
	f := dr.first.Load()
	if f == 0 || last.UnixNano() <= f {
		return 0, 0, fmt.Errorf("%w: no drain window", queue.ErrIncomplete)
	}
	wall := last.Sub(time.Unix(0, f))
	for a, qs := range by {
		na := t.nodes[a]
		na.queues = len(qs)
		na.jobs += int64(len(qs) * sz.perQueue)
		na.calls += stats[a].calls
		na.us += stats[a].us
		na.wallUS += wall.Microseconds()
	}
	t.res.Redirects += t.redir(t.b) - redir0
	t.res.Redelivered += dr.redelivered.Load()
	t.cpu.Add(c0, c1)
	return float64(n) / wall.Seconds(), time.Unix(0, f).Sub(dr.begun), nil
}

// pollEmpty returns the instant every queue was seen with no pending and no active job, polled
// each millisecond once ready holds (one pipeline per primary).
func (t *target) pollEmpty(ctx context.Context, by map[string][]string, ready func() bool, errc <-chan error) (time.Time, error) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%w: %w", queue.ErrIncomplete, ctx.Err())
		case err := <-errc:
			return time.Time{}, err
		case <-tick.C:
		}
		if !ready() {
			continue
		}
		empty, err := t.empty(ctx, by)
		if err != nil {
			return time.Time{}, err
		}
		if empty {
			return time.Now(), nil
		}
	}
}

func (t *target) empty(ctx context.Context, by map[string][]string) (bool, error) {
	for a, qs := range by {
		cmds := make([]connector.Cmd, 0, 2*len(qs))
		for _, q := range qs {
			cmds = append(cmds, vkadmin.Cmd("ZCARD", "emq:{"+q+"}:pending"), vkadmin.Cmd("ZCARD", "emq:{"+q+"}:active"))
		}
		zero, err := vkadmin.AllZero(ctx, t.admins[a], cmds...)
		if err != nil {
			return false, fmt.Errorf("bench: scale poll %s: %w", a, err)
		}
		if !zero {
			return false, nil
		}
	}
	return true, nil
}

// clean deletes the round's queues' keys on their owners.
func (t *target) clean(ctx context.Context, by map[string][]string) {
	for a, qs := range by {
		for _, q := range qs {
			_ = vkadmin.UnlinkMatch(ctx, t.admins[a], "emq:{"+q+"}:*")
		}
	}
}

// finish turns the rounds into the result.
func (t *target) finish() {
	r := t.res
	if r.Err != "" || len(t.rates) == 0 {
		return
	}
	r.JobsPerS = measure.SpreadOf(t.rates)
	r.PerPrimary = r.JobsPerS.Median / float64(r.Primaries)
	sp := measure.SpreadOf(t.starts)
	r.Startup = &sp
	r.CPU = t.cpu.CPU()
	for _, a := range t.addrs {
		na := t.nodes[a]
		node := Node{Addr: a, Queues: na.queues, Jobs: na.jobs, Calls: na.calls}
		if na.jobs > 0 {
			node.UsecPerJob = float64(na.us) / float64(na.jobs)
		}
		if na.wallUS > 0 {
			node.ScriptShare = float64(na.us) / float64(na.wallUS)
		}
		r.Nodes = append(r.Nodes, node)
	}
}

// ratios: the router's own cost (one primary against the standalone server) and the speed-up
// of n primaries over one.
func ratios(rs []*Result) []measure.Ratio {
	med := map[string]float64{}
	var ns []int
	for _, r := range rs {
		if r.Err == "" && r.JobsPerS.Median > 0 {
			med[r.Label()] = r.JobsPerS.Median
			if r.Deployment == Cluster {
				ns = append(ns, r.Primaries)
			}
		}
	}
	slices.Sort(ns)
	var out []measure.Ratio
	one := Cluster + "-1"
	if c, s := med[one], med[Standalone]; c > 0 && s > 0 {
		out = append(out, measure.Ratio{Name: one + "/" + Standalone, Value: c / s})
	}
	for _, n := range ns {
		if n == 1 {
			continue
		}
		name := Cluster + "-" + strconv.Itoa(n)
		if c, base := med[name], med[one]; c > 0 && base > 0 {
			out = append(out, measure.Ratio{Name: name + "/" + one, Value: c / base})
		}
	}
	return out
}
