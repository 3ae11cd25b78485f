package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/resp"
)

// Schemas the bench owns in PostgreSQL; it drops and recreates exactly these.
const (
	obanPrefix  = "emq_bench"
	riverSchema = "emq_bench_river"
)

// Config is one invocation of the bench.
type Config struct {
	Mode       string
	Overrides  Overrides // replace the mode's producers, workers, pool, backlog, batch or rate
	Durability bool      // add the axis with guarantees matched: Valkey appendfsync always, Postgres synchronous_commit=on
	Only       []string  // run only these scenarios (ceilings always run); empty: all
	Progress   io.Writer // progress lines; nil discards
	Gate       *Gate     // thresholds to judge (and re-measure once on a miss); nil: no gate
}

// Report is everything one invocation measured.
type Report struct {
	Tool     string     `json:"tool"`
	Started  time.Time  `json:"started"`
	Seconds  float64    `json:"seconds"`
	Params   Params     `json:"params"`
	Machine  Machine    `json:"machine"`
	Runs     []*Run     `json:"runs"`
	Scale    *ScaleAxis `json:"scale,omitempty"` // the drain across cluster primaries
	Versions Versions   `json:"versions"`
}

// Machine is where it ran.
type Machine struct {
	Cores      int     `json:"cores"`
	CPULimit   float64 `json:"cgroup_cpu_limit,omitempty"` // cores; 0: none found
	GOMAXPROCS int     `json:"gomaxprocs"`
	OS         string  `json:"os"`
	Arch       string  `json:"arch"`
	Go         string  `json:"go"`
}

// Versions of the systems under test.
type Versions struct {
	Oban  string `json:"oban_shaped"`
	River string `json:"river"`
	Bus   string `json:"bus"`
}

// Run is one durability axis: its engines, ceilings and scenarios.
type Run struct {
	Axis      string              `json:"axis"`
	Engines   []EngineInfo        `json:"engines"`
	Ceilings  []Ceiling           `json:"ceilings"`
	Scenarios []*Scenario         `json:"scenarios"`
	Latency   *LatencyScenario    `json:"latency"`
	Scripts   []ScriptCost        `json:"bus_scripts,omitempty"` // each drain script alone, Valkey's own timing
	Targets   []Target            `json:"targets"`
	BullMQ    *BullMQInfo         `json:"bullmq,omitempty"`
	Gate      []GateResult        `json:"gate,omitempty"` // the BullMQ client measured, when it was
	Gaps      []string            `json:"gaps"`
	ceil      map[string]*Ceiling // by name
}

// BullMQInfo is the BullMQ client as measured: package versions and its settings.
type BullMQInfo struct {
	Versions map[string]string `json:"versions"`
	Settings [][2]string       `json:"settings"`
}

// EngineInfo is an engine as found: version, how obtained, the settings that decide durability.
type EngineInfo struct {
	Engine   Engine      `json:"engine"`
	Version  string      `json:"version"`
	Mode     string      `json:"mode"`
	Settings [][2]string `json:"settings"`
}

// Ceiling is an engine's raw rate in this run.
type Ceiling struct {
	Name        string `json:"name"`
	Engine      Engine `json:"engine"`
	What        string `json:"what"`
	Concurrency int    `json:"concurrency"`
	Unit        string `json:"unit"`
	Rate        Spread `json:"rate"`
	CPU         *CPU   `json:"cpu,omitempty"`
	Err         string `json:"error,omitempty"`
}

// Scenario is one throughput scenario.
type Scenario struct {
	Name        string    `json:"name"`
	Title       string    `json:"title"`
	Concurrency int       `json:"concurrency"`
	Batch       int       `json:"batch,omitempty"`
	Results     []*Result `json:"results"`
	Ratios      []Ratio   `json:"ratios"`
}

// Result is one system in one scenario.
type Result struct {
	System   string      `json:"system"`
	Engine   Engine      `json:"engine"`
	JobsPerS Spread      `json:"jobs_per_s"`
	Ceiling  string      `json:"ceiling"`
	Fraction float64     `json:"fraction_of_ceiling"`
	CPU      *CPU        `json:"cpu,omitempty"`         // over every repeat
	Server   *ServerTime `json:"valkey_time,omitempty"` // the bus only
	Startup  *Spread     `json:"startup_ms,omitempty"`  // drain: call → first handler, outside the window
	Err      string      `json:"error,omitempty"`
}

// Ratio compares two systems' medians (or latencies).
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// LatencyScenario is the open-loop end-to-end latency run.
type LatencyScenario struct {
	Name     string           `json:"name"`
	Title    string           `json:"title"`
	Rate     float64          `json:"rate"`
	Seconds  float64          `json:"seconds"`
	Workers  int              `json:"workers"`
	Senders  int              `json:"senders"`
	Results  []*LatencyResult `json:"results"`
	Ratios   []Ratio          `json:"ratios"`
	PlotFile string           `json:"plot_file"`
}

type axis struct {
	name   string
	only   []string // scenarios this axis runs (nil: every selected one)
	pg     map[string]string
	valkey []string
}

// Execute runs every axis and returns the report. Engines are started (or taken as given from
// EMQ_PG_URL / EMQ_VALKEY_ADDR) per axis and stopped before it returns.
func Execute(ctx context.Context, cfg Config) (*Report, error) {
	p, err := ParamsFor(cfg.Mode)
	if err != nil {
		return nil, err
	}
	if p, err = cfg.Overrides.Apply(p); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	axisWanted := len(cfg.Only) == 0
	for _, name := range cfg.Only {
		if !slices.Contains(Scenarios, name) && name != ScScale {
			return nil, fmt.Errorf("%w: unknown scenario %q (want one of %s, %s)", ErrParams, name, strings.Join(Scenarios, ", "), ScScale)
		}
		want[name] = true
		axisWanted = axisWanted || name != ScScale
	}
	selected := func(name string) bool { return len(want) == 0 || want[name] }
	prog := cfg.Progress
	if prog == nil {
		prog = io.Discard
	}
	rep := &Report{Tool: "emq-bench", Started: time.Now().UTC(), Params: p,
		Machine: Machine{Cores: runtime.NumCPU(), CPULimit: cgroupCPULimit(), GOMAXPROCS: runtime.GOMAXPROCS(0), OS: runtime.GOOS,
			Arch: runtime.GOARCH, Go: runtime.Version()},
		Versions: Versions{Oban: "kit oban package: Oban 2.18.3 Basic engine SQL, schema v12, notifications on",
			River: "github.com/riverqueue/river " + moduleVersion("github.com/riverqueue/river") + " (riverpgxv5)",
			Bus:   busVersion()}}
	axes := []axis{{name: "as-configured"}}
	if cfg.Durability {
		// Guarantees matched: every enqueue fsynced before its reply on both sides.
		axes = append(axes, axis{name: "both-durable",
			pg:     map[string]string{"synchronous_commit": "on"},
			valkey: []string{"--appendonly", "yes", "--appendfsync", "always", "--save", ""}})
	}
	if cfg.Mode == "ci" && len(axes) > 1 {
		// CI's budget: the guarantee-matched axis runs what durability changes most.
		axes[1].only = []string{ScEnqueueConc, ScEnqueueTx, ScDrain, ScDrainOnce}
	}
	if !axisWanted {
		axes = nil // -only scale: the axes' engines and ceilings are not needed
	}
	for _, ax := range axes {
		fmt.Fprintf(prog, "emq-bench: axis %s: starting engines\n", ax.name)
		sel := selected
		if ax.only != nil {
			sel = func(name string) bool { return selected(name) && slices.Contains(ax.only, name) }
		}
		run, err := runAxis(ctx, p, ax, sel, cfg.Gate, prog)
		if err != nil {
			return rep, fmt.Errorf("bench: axis %s: %w", ax.name, err)
		}
		run.Targets = Targets(rep, run)
		rep.Runs = append(rep.Runs, run)
	}
	if selected(ScScale) && len(p.ScalePrimaries) > 0 {
		rep.Scale = runScale(ctx, p, prog)
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	return rep, nil
}

func runAxis(ctx context.Context, p Params, ax axis, selected func(string) bool, gate *Gate, prog io.Writer) (*Run, error) {
	run := &Run{Axis: ax.name, ceil: map[string]*Ceiling{}}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	pg, err := engines.StartPostgres(sctx, engines.PostgresOptions{Settings: ax.pg})
	cancel()
	if err != nil {
		return nil, err
	}
	defer pg.Stop()
	sctx, cancel = context.WithTimeout(ctx, 5*time.Minute)
	vk, err := engines.StartValkey(sctx, engines.ValkeyOptions{Args: ax.valkey})
	cancel()
	if err != nil {
		return nil, err
	}
	defer vk.Stop()
	clock := cpuClock{valkeyPID: vk.PID(), pgPID: pg.PID()}

	pcfg, err := pgxpool.ParseConfig(pg.URL)
	if err != nil {
		return nil, err
	}
	// One pool for every Postgres system, the ceilings and the bus's business rows: the same
	// connections for all, as one service's database pool.
	pcfg.MaxConns = int32(p.PGPool)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()

	pgInfo, err := postgresInfo(ctx, pool, pg)
	if err != nil {
		return nil, err
	}
	admin, err := connector.Dial(ctx, vk.Addr, connector.Options{})
	if err != nil {
		return nil, fmt.Errorf("valkey: %w", err)
	}
	defer admin.Close()
	vkInfo, err := valkeyInfo(ctx, admin, vk)
	if err != nil {
		return nil, err
	}
	run.Engines = []EngineInfo{pgInfo, vkInfo}

	for _, s := range []string{obanPrefix, riverSchema} {
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{s}.Sanitize()+` CASCADE`); err != nil {
			return nil, fmt.Errorf("reset schema %s: %w", s, err)
		}
	}
	defer func() {
		for _, s := range []string{obanPrefix, riverSchema} {
			_, _ = pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA IF EXISTS `+pgx.Identifier{s}.Sanitize()+` CASCADE`)
		}
	}()
	ob, err := NewObanQueue(ctx, pool, pg.URL, obanPrefix)
	if err != nil {
		return nil, fmt.Errorf("oban-shaped: %w", err)
	}
	queues := []Queue{ob}
	if rq, err := NewRiverQueue(ctx, pool, riverSchema, ob.rows); err != nil {
		run.Gaps = append(run.Gaps, fmt.Sprintf("%s: not measured: %v", SysRiver, err))
	} else {
		queues = append(queues, rq)
	}
	var bq *BusQueue
	if bq, err = NewBusQueue(ctx, vk.Addr, pool, ob.rows); err != nil {
		run.Gaps = append(run.Gaps, fmt.Sprintf("%s: not measured: %v", SysBus, err))
		bq = nil
	} else {
		queues = append(queues, bq)
	}
	// BullMQ on the same Valkey as the bus: the rival a Valkey user would pick.
	if mq, err := NewBullMQQueue(ctx, vk.Addr); err != nil {
		run.Gaps = append(run.Gaps, fmt.Sprintf("%s: not measured: %v", SysBullMQ, err))
	} else {
		queues = append(queues, mq)
		run.BullMQ = &BullMQInfo{Versions: mq.Versions, Settings: mq.Settings}
	}
	defer func() {
		for _, q := range queues {
			q.Close()
		}
	}()

	measureCeilings(ctx, run, p, pool, admin, clock, prog)

	// serverTime brackets a bus measurement with Valkey's statistics; other systems pass.
	type serverAcc struct{ calls, usec, jobs, wallUS int64 }
	servers := map[string]*serverAcc{}
	var serverErr error
	bracket := func(q Queue) (func(), func(int64, time.Duration)) {
		if q != Queue(bq) || bq == nil {
			return func() {}, func(int64, time.Duration) {}
		}
		return func() {
				if err := resetStats(ctx, admin); err != nil && serverErr == nil {
					serverErr = err
				}
			}, func(jobs int64, wall time.Duration) {
				calls, usec, err := evalshaStats(ctx, admin)
				if err != nil {
					if serverErr == nil {
						serverErr = err
					}
					return
				}
				a := servers[q.Name()]
				if a == nil {
					a = &serverAcc{}
					servers[q.Name()] = a
				}
				a.calls += calls
				a.usec += usec
				a.jobs += jobs
				a.wallUS += wall.Microseconds()
			}
	}
	serverTime := func() *ServerTime {
		a := servers[SysBus]
		clear(servers)
		if a == nil || a.calls == 0 || a.jobs == 0 || a.wallUS == 0 {
			return nil
		}
		return &ServerTime{Calls: a.calls, UsecPerCall: float64(a.usec) / float64(a.calls),
			UsecPerJob: float64(a.usec) / float64(a.jobs), ScriptShare: float64(a.usec) / float64(a.wallUS)}
	}

	var rowID atomic.Int64
	scenarios := []struct {
		name, title, ceilingPG string
		conc, batch            int
		op                     func(q Queue) func(ctx context.Context, w int) (int, error)
	}{
		{ScEnqueueSingle, "enqueue, one producer, one job per commit", "pg-commit-1", 1, 0,
			func(q Queue) func(context.Context, int) (int, error) {
				return func(ctx context.Context, _ int) (int, error) {
					return 1, q.Enqueue(ctx, payload(time.Now().UnixNano()))
				}
			}},
		{ScEnqueueConc, fmt.Sprintf("enqueue, %d concurrent producers, one job per commit", p.Producers), "pg-commit-n", p.Producers, 0,
			func(q Queue) func(context.Context, int) (int, error) {
				return func(ctx context.Context, _ int) (int, error) {
					return 1, q.Enqueue(ctx, payload(time.Now().UnixNano()))
				}
			}},
		{ScEnqueueBatch, fmt.Sprintf("enqueue, one producer, batches of %d (PG: one multi-row INSERT; bus: one enqueue_batch)", p.Batch), "pg-commit-1", 1, p.Batch,
			func(q Queue) func(context.Context, int) (int, error) {
				// One batch of payloads, built outside the timed loop: no enqueue scenario reads
				// the send instant, so every call may carry the same bytes.
				ps := make([][]byte, p.Batch)
				for i := range ps {
					ps[i] = payload(time.Now().UnixNano())
				}
				return func(ctx context.Context, _ int) (int, error) {
					return p.Batch, q.EnqueueBatch(ctx, ps)
				}
			}},
		{ScEnqueueTx, fmt.Sprintf("business row + its job in one PostgreSQL transaction, %d producers (Oban, River: the job row; bus: an outbox row, relayed to the bus — timed until the last job is on the bus)", p.Producers), "pg-commit-n", p.Producers, 0,
			func(q Queue) func(context.Context, int) (int, error) {
				return func(ctx context.Context, _ int) (int, error) {
					return 1, q.EnqueueWithRow(ctx, rowID.Add(1), payload(time.Now().UnixNano()))
				}
			}},
	}
	// measure runs one scenario (again, when the gate asks for a re-run: it replaces the first).
	measure := func(name string) {
		for _, sc := range scenarios {
			if sc.name != name {
				continue
			}
			s := &Scenario{Name: sc.name, Title: sc.title, Concurrency: sc.conc, Batch: sc.batch}
			rates := map[string][]float64{}
			errs := map[string]error{}
			cpus := map[string]*cpuAcc{}
			for rep := range p.Repeats {
				for _, q := range queues {
					if errs[q.Name()] != nil {
						continue
					}
					if err := q.Reset(ctx); err != nil {
						errs[q.Name()] = err
						continue
					}
					if sc.name == ScEnqueueTx && isDriven(q) {
						continue // no business row in BullMQ's world: not comparable
					}
					begin, end := bracket(q)
					begin()
					clk := clockFor(clock, q)
					c0 := clk.read()
					var r float64
					var err error
					if d, ok := q.(Driven); ok {
						r, err = d.RunEnqueue(ctx, sc.conc, sc.batch, p.Duration)
					} else {
						r, err = timed(ctx, p.Duration, sc.conc, sc.op(q))
					}
					c1 := clk.read()
					if err != nil {
						errs[q.Name()] = err
						fmt.Fprintf(prog, "emq-bench: %s %s: error: %v\n", sc.name, q.Name(), err)
						continue
					}
					wall := c1.at.Sub(c0.at)
					end(int64(r*wall.Seconds()+0.5), wall)
					acc(cpus, q.Name()).add(c0, c1)
					rates[q.Name()] = append(rates[q.Name()], r)
					fmt.Fprintf(prog, "emq-bench: %s %s repeat %d/%d: %.0f jobs/s\n", sc.name, q.Name(), rep+1, p.Repeats, r)
				}
			}
			ceilFor := func(q Queue) string {
				if q.Engine() == Valkey && sc.name != ScEnqueueTx {
					return "valkey-evalsha"
				}
				return sc.ceilingPG
			}
			measured := queues
			if sc.name == ScEnqueueTx {
				measured = slices.DeleteFunc(slices.Clone(queues), isDriven)
			}
			s.Results = results(run, measured, rates, errs, cpus, ceilFor)
			if sc.name == ScEnqueueTx {
				for _, r := range s.Results {
					if r.Engine == Valkey {
						r.Engine = "postgres+valkey" // the bus pair writes to both; PG's commit bounds it
					}
				}
			}
			setServer(s.Results, serverTime())
			s.Ratios = ratios(s.Results)
			run.Scenarios = append(run.Scenarios, s)
		}
		switch name {
		case ScDrain:
			runDrain(ctx, run, p, ScDrain, fmt.Sprintf("drain a backlog of %d with %d workers each, empty handler; timed from the first handler start to the last recorded ack", p.Backlog, p.Workers), queues, clock, bracket, serverTime, prog)
		case ScDrainOnce:
			if bq != nil {
				runDrain(ctx, run, p, ScDrainOnce, fmt.Sprintf("drain a backlog of %d with %d workers, each handler an exactly-once effect: one PostgreSQL transaction records the job id and writes the effect row (reference/absorb); compare with drain", p.Backlog, p.Workers), []Queue{AbsorbQueue{bq}}, clock, bracket, serverTime, prog)
				once, plain := run.scenario(ScDrainOnce), run.scenario(ScDrain)
				if r := once.result(SysBusAbsorb); r != nil {
					for _, other := range []string{SysBus, SysBullMQ, SysOban, SysRiver} {
						if o := plain.result(other); o != nil {
							once.Ratios = append(once.Ratios, Ratio{Name: SysBusAbsorb + "/" + other + " (plain drain)", Value: r.JobsPerS.Median / o.JobsPerS.Median})
						}
					}
				}
			}
		case ScLatency:
			run.Latency = runLatency(ctx, p, ax, queues, clock, prog)
		}
	}
	for _, name := range Scenarios {
		if selected(name) && name != ScLatency {
			measure(name)
		}
	}
	// Where the bus's server time goes: each drain script alone.
	if bq != nil && selected(ScDrain) {
		k := min(p.Backlog, 20000)
		if sc, err := bq.profileScripts(ctx, k, p.Workers, p.Workers); err != nil {
			run.Gaps = append(run.Gaps, fmt.Sprintf("bus script profile: %v", err))
		} else {
			run.Scripts = sc
			for _, c := range sc {
				fmt.Fprintf(prog, "emq-bench: valkey time of %s: %.2f µs per job (%d jobs, %d calls)\n", c.Script, c.UsecPerJob, c.Jobs, c.Calls)
			}
		}
	}
	if serverErr != nil {
		run.Gaps = append(run.Gaps, fmt.Sprintf("valkey commandstats: %v", serverErr))
	}

	if selected(ScLatency) {
		measure(ScLatency)
	}
	if gate != nil && gate.Axis == ax.name {
		run.Gate = judge(gate, run, func(scenario string) {
			fmt.Fprintf(prog, "emq-bench: gate: %s missed a threshold; measuring it once more\n", scenario)
			run.drop(scenario)
			measure(scenario)
		})
	}
	for _, q := range queues {
		_ = q.Reset(ctx)
	}
	return run, nil
}

// judge evaluates the gate; a scenario with a failing check is measured once more (rerun) and
// its checks judged again on the new figures, so one noisy repeat cannot fail the gate alone.
func judge(g *Gate, run *Run, rerun func(scenario string)) []GateResult {
	eval := func() []GateResult {
		var rs []GateResult
		for _, c := range g.Checks {
			rs = append(rs, c.Evaluate(run))
		}
		return rs
	}
	rs := eval()
	again := map[string]bool{}
	for _, r := range rs {
		if !r.Pass && r.Found && !again[r.Scenario] {
			again[r.Scenario] = true
			rerun(r.Scenario)
		}
	}
	if len(again) == 0 {
		return rs
	}
	rs = eval()
	for i := range rs {
		if again[rs[i].Scenario] {
			rs[i].Reruns = 1
		}
	}
	return rs
}

// drop forgets a scenario's figures before it is measured again.
func (run *Run) drop(scenario string) {
	if run.Latency != nil && run.Latency.Name == scenario {
		run.Latency = nil
	}
	run.Scenarios = slices.DeleteFunc(run.Scenarios, func(s *Scenario) bool { return s.Name == scenario })
}

// runLatency is the end-to-end latency at a fixed offered rate.
func runLatency(ctx context.Context, p Params, ax axis, queues []Queue, clock cpuClock, prog io.Writer) *LatencyScenario {
	ls := &LatencyScenario{Name: ScLatency, Rate: p.Rate, Seconds: p.LatencyDuration.Seconds(), Workers: p.Workers, Senders: p.Producers,
		Title:    fmt.Sprintf("enqueue → handler start at %.0f jobs/s offered for %.0fs, %d workers each, %d senders (open loop)", p.Rate, p.LatencyDuration.Seconds(), p.Workers, p.Producers),
		PlotFile: "latency-e2e-" + ax.name + ".svg"}
	for _, q := range queues {
		if err := q.Reset(ctx); err != nil {
			ls.Results = append(ls.Results, &LatencyResult{System: q.Name(), Err: err.Error()})
			continue
		}
		var a cpuAcc
		var r LatencyResult
		var err error
		if d, ok := q.(Driven); ok {
			clk := clockFor(clock, q)
			c0 := clk.read()
			r, err = d.RunLatency(ctx, p.Rate, p.LatencyDuration, p.Workers, p.Producers)
			a.add(c0, clk.read())
		} else {
			r, err = openLoop(ctx, q, p.Rate, p.LatencyDuration, p.Workers, p.Producers, clock, &a)
		}
		r.CPU = a.cpu()
		if err != nil {
			r.Err = err.Error()
			fmt.Fprintf(prog, "emq-bench: %s %s: error: %v\n", ScLatency, q.Name(), err)
		} else {
			fmt.Fprintf(prog, "emq-bench: %s %s: p50 %.2fms p99 %.2fms p99.9 %.2fms max %.2fms (%d jobs)\n", ScLatency, q.Name(),
				r.Latency.P50, r.Latency.P99, r.Latency.P999, r.Latency.Max, r.Received)
		}
		ls.Results = append(ls.Results, &r)
	}
	ls.Ratios = latencyRatios(ls.Results)
	return ls
}

// settler is a system that delivers a committed job later (an outbox relay): Settle returns once
// every committed job has been delivered.
type settler interface {
	Settle(ctx context.Context) error
}

func isDriven(q Queue) bool { _, ok := q.(Driven); return ok }

// clockFor counts a driven system's client process on the client side.
func clockFor(c cpuClock, q Queue) cpuClock {
	if d, ok := q.(Driven); ok {
		return c.withClient(d.PID())
	}
	return c
}

type bracketFunc func(q Queue) (begin func(), end func(jobs int64, wall time.Duration))

// runDrain is the drain scenario: repeats interleaved across systems.
func runDrain(ctx context.Context, run *Run, p Params, name, title string, queues []Queue, clock cpuClock, bracket bracketFunc, serverTime func() *ServerTime, prog io.Writer) {
	s := &Scenario{Name: name, Title: title, Concurrency: p.Workers}
	rates := map[string][]float64{}
	startups := map[string][]float64{}
	errs := map[string]error{}
	cpus := map[string]*cpuAcc{}
	for rep := range p.Repeats {
		for _, q := range queues {
			if errs[q.Name()] != nil {
				continue
			}
			begin, end := bracket(q)
			// CPU from just before the drain's start-up to its last ack; Valkey's script time
			// against the timed window.
			var c0, c1 cpuTimes
			clk := clockFor(clock, q)
			r, err := drainOnce(ctx, q, p.Backlog, p.Workers, func() { begin(); c0 = clk.read() }, func() { c1 = clk.read() })
			if err != nil {
				errs[q.Name()] = err
				fmt.Fprintf(prog, "emq-bench: %s %s: error: %v\n", name, q.Name(), err)
				continue
			}
			end(int64(p.Backlog), time.Duration(float64(p.Backlog)/r.rate*float64(time.Second)))
			acc(cpus, q.Name()).add(c0, c1)
			rates[q.Name()] = append(rates[q.Name()], r.rate)
			startups[q.Name()] = append(startups[q.Name()], float64(r.startup.Microseconds())/1000)
			fmt.Fprintf(prog, "emq-bench: %s %s repeat %d/%d: %.0f jobs/s (start-up %v, outside the window)\n", name, q.Name(), rep+1, p.Repeats, r.rate, r.startup.Round(time.Millisecond))
		}
	}
	s.Results = results(run, queues, rates, errs, cpus, func(q Queue) string {
		if q.Engine() == Valkey {
			return "valkey-evalsha"
		}
		return "pg-commit-n"
	})
	for _, r := range s.Results {
		if xs := startups[r.System]; len(xs) > 0 {
			sp := spreadOf(xs)
			r.Startup = &sp
		}
	}
	setServer(s.Results, serverTime())
	s.Ratios = ratios(s.Results)
	run.Scenarios = append(run.Scenarios, s)
}

func acc(m map[string]*cpuAcc, name string) *cpuAcc {
	if m[name] == nil {
		m[name] = &cpuAcc{}
	}
	return m[name]
}

func setServer(rs []*Result, st *ServerTime) {
	for _, r := range rs {
		if r.System == SysBus && r.Err == "" {
			r.Server = st
		}
	}
}

func results(run *Run, queues []Queue, rates map[string][]float64, errs map[string]error, cpus map[string]*cpuAcc, ceilFor func(Queue) string) []*Result {
	var out []*Result
	for _, q := range queues {
		r := &Result{System: q.Name(), Engine: q.Engine(), Ceiling: ceilFor(q)}
		if err := errs[q.Name()]; err != nil {
			r.Err = err.Error()
		}
		if len(rates[q.Name()]) > 0 && r.Err == "" {
			r.JobsPerS = spreadOf(rates[q.Name()])
			if c := run.ceil[r.Ceiling]; c != nil && c.Rate.Median > 0 {
				r.Fraction = r.JobsPerS.Median / c.Rate.Median
			}
			if a := cpus[q.Name()]; a != nil {
				r.CPU = a.cpu()
			}
		}
		out = append(out, r)
	}
	return out
}

func ratios(rs []*Result) []Ratio {
	med := map[string]float64{}
	for _, r := range rs {
		if r.Err == "" && r.JobsPerS.Median > 0 {
			med[r.System] = r.JobsPerS.Median
		}
	}
	var out []Ratio
	for _, other := range []string{SysBullMQ, SysOban, SysRiver} {
		if b, o := med[SysBus], med[other]; b > 0 && o > 0 {
			out = append(out, Ratio{Name: SysBus + "/" + other, Value: b / o})
		}
	}
	return out
}

func latencyRatios(rs []*LatencyResult) []Ratio {
	by := map[string]*LatencyResult{}
	for _, r := range rs {
		if r.Err == "" && r.Latency.Count > 0 {
			by[r.System] = r
		}
	}
	var out []Ratio
	for _, other := range []string{SysBullMQ, SysOban, SysRiver} {
		b, o := by[SysBus], by[other]
		if b == nil || o == nil || o.Latency.P50 <= 0 || o.Latency.P99 <= 0 {
			continue
		}
		out = append(out, Ratio{Name: "p50 " + SysBus + "/" + other, Value: b.Latency.P50 / o.Latency.P50},
			Ratio{Name: "p99 " + SysBus + "/" + other, Value: b.Latency.P99 / o.Latency.P99})
	}
	return out
}

// measureCeilings: PostgreSQL's single-insert durable commits from 1 client and from N through
// the shared pool, and Valkey's raw EVALSHA of a trivial script pipelined through the kit's
// connector by N callers.
func measureCeilings(ctx context.Context, run *Run, p Params, pool *pgxpool.Pool, admin *connector.Conn, clock cpuClock, prog io.Writer) {
	table := pgx.Identifier{obanPrefix, "ceiling"}.Sanitize()
	_, terr := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (id bigserial PRIMARY KEY, v bigint NOT NULL)`)
	commit := func(ctx context.Context, _ int) (int, error) {
		_, err := pool.Exec(ctx, `INSERT INTO `+table+` (v) VALUES ($1)`, time.Now().UnixNano())
		return 1, err
	}
	var batches []*connector.Batch
	var dsts [][]resp.Value
	for range p.Producers {
		batches = append(batches, new(connector.Batch))
		dsts = append(dsts, make([]resp.Value, 0, p.Pipeline))
	}
	evalsha := func(ctx context.Context, w int) (int, error) {
		return p.Pipeline, valkeyCeilingBatch(ctx, admin, batches[w], p.Pipeline, dsts[w])
	}
	for _, c := range []struct {
		name, what string
		engine     Engine
		conc       int
		op         func(context.Context, int) (int, error)
	}{
		{"pg-commit-1", "INSERT of one row per autocommit transaction, 1 client", Postgres, 1, commit},
		{"pg-commit-n", fmt.Sprintf("INSERT of one row per autocommit transaction, %d clients through the %d-connection pool", p.Producers, p.PGPool), Postgres, p.Producers, commit},
		{"valkey-evalsha", fmt.Sprintf("EVALSHA of `return 1`, %d clients × pipelines of %d, one connector connection (writes nothing, so no AOF fsync)", p.Producers, p.Pipeline), Valkey, p.Producers, evalsha},
	} {
		cl := &Ceiling{Name: c.name, Engine: c.engine, What: c.what, Concurrency: c.conc, Unit: "ops/s"}
		if c.engine == Postgres && terr != nil {
			cl.Err = terr.Error()
		}
		var xs []float64
		var a cpuAcc
		for rep := 0; rep < p.Repeats && cl.Err == ""; rep++ {
			c0 := clock.read()
			r, err := timed(ctx, p.Duration, c.conc, c.op)
			c1 := clock.read()
			if err != nil {
				cl.Err = err.Error()
				break
			}
			a.add(c0, c1)
			xs = append(xs, r)
			fmt.Fprintf(prog, "emq-bench: ceiling %s repeat %d/%d: %.0f ops/s\n", c.name, rep+1, p.Repeats, r)
		}
		if cl.Err == "" {
			cl.Rate = spreadOf(xs)
			cl.CPU = a.cpu()
		}
		run.Ceilings = append(run.Ceilings, *cl)
	}
	for i := range run.Ceilings {
		run.ceil[run.Ceilings[i].Name] = &run.Ceilings[i]
	}
	_, _ = pool.Exec(ctx, `DROP TABLE IF EXISTS `+table)
}

func postgresInfo(ctx context.Context, pool *pgxpool.Pool, pg *engines.Postgres) (EngineInfo, error) {
	info := EngineInfo{Engine: Postgres, Mode: string(pg.Mode)}
	if err := pool.QueryRow(ctx, `SHOW server_version`).Scan(&info.Version); err != nil {
		return info, fmt.Errorf("postgres version: %w", err)
	}
	rows, err := pool.Query(ctx, `SELECT name, setting || coalesce(unit, '') FROM pg_settings
		WHERE name IN ('synchronous_commit', 'fsync', 'wal_sync_method', 'full_page_writes', 'wal_level',
		               'commit_delay', 'shared_buffers', 'max_connections') ORDER BY name`)
	if err != nil {
		return info, fmt.Errorf("postgres settings: %w", err)
	}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return info, err
		}
		info.Settings = append(info.Settings, [2]string{k, v})
	}
	return info, rows.Err()
}

func valkeyInfo(ctx context.Context, c *connector.Conn, vk *engines.Valkey) (EngineInfo, error) {
	info := EngineInfo{Engine: Valkey, Mode: string(vk.Mode), Version: vk.Server + " " + vk.Version}
	for _, k := range []string{"appendonly", "appendfsync", "save", "maxmemory-policy"} {
		v, err := c.Do(ctx, "CONFIG", "GET", k)
		if err != nil {
			return info, fmt.Errorf("valkey CONFIG GET %s: %w", k, err)
		}
		val := "?"
		if len(v.Elems) == 2 {
			val = string(v.Elems[1].Str)
		}
		if val == "" {
			val = `""`
		}
		info.Settings = append(info.Settings, [2]string{k, val})
	}
	return info, nil
}

// setting looks a setting up in an EngineInfo.
func (e EngineInfo) setting(k string) string {
	for _, kv := range e.Settings {
		if kv[0] == k {
			return kv[1]
		}
	}
	return "?"
}

func moduleVersion(path string) string {
	if v := buildVersion(path); v != "" {
		return v
	}
	return "(version unknown)"
}

// busVersion names the bundle by its digest: the scripts change while the bus is tuned, and a
// figure belongs to one set of them.
func busVersion() string {
	b, err := lua.Load()
	if err != nil {
		return "kit reference/bus (bundle unreadable: " + err.Error() + ")"
	}
	return "kit reference/bus, bundle " + b.Version() + " digest " + b.Digest()
}
