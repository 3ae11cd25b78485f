package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/echomq/kit/bench"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/systems/busq"
)

// guarantee is one system's row of the asymmetry: what a returned enqueue means, whether the job
// can commit with a business row, what the client ran on.
type guarantee struct {
	system, engine, durable, withRow, runtime string
}

// guarantees are the asymmetry's rows for one axis, every system of the report in order.
func guarantees(rep *bench.Report, run *bench.Run) []guarantee {
	pg, vk := engineOf(run, queue.Postgres), engineOf(run, queue.Valkey)
	var out []guarantee
	for _, s := range rep.Systems {
		g := guarantee{system: s.Name, engine: string(s.Engine), withRow: s.WithRow, runtime: s.Runtime}
		switch s.Engine {
		case queue.Postgres:
			g.durable = pgDurability(pg)
		case queue.Valkey:
			g.durable = valkeyDurability(vk)
		default: // the bus with an absorbing handler: its jobs are the bus's, its effects Postgres's
			g.durable = "jobs as the bus's; each effect committed in PostgreSQL"
		}
		if s.Model {
			g.system += " (a model, not the queue)"
		}
		out = append(out, g)
	}
	return out
}

func engineOf(run *bench.Run, e queue.Engine) bench.EngineInfo {
	for _, x := range run.Engines {
		if x.Engine == e {
			return x
		}
	}
	return bench.EngineInfo{Engine: e}
}

func pgDurability(pg bench.EngineInfo) string {
	if pg.Setting("synchronous_commit") == "off" {
		return "committed, WAL not yet flushed (synchronous_commit=off): a crash can lose the last few hundred ms"
	}
	return fmt.Sprintf("durable: WAL fsynced before COMMIT returns (synchronous_commit=%s, fsync=%s)", pg.Setting("synchronous_commit"), pg.Setting("fsync"))
}

func valkeyDurability(vk bench.EngineInfo) string {
	switch aof, fs := vk.Setting("appendonly"), vk.Setting("appendfsync"); {
	case aof == "yes" && fs == "always":
		return "durable: fsynced to the AOF before the reply (appendfsync always)"
	case aof == "yes":
		return "AOF fsynced " + fs + ": a crash can lose the last ~second (appendfsync " + fs + ")"
	}
	return "volatile: in memory only, lost on a crash (appendonly no, save " + vk.Setting("save") + ")"
}

func writeAsymmetry(w io.Writer, rep *bench.Report, run *bench.Run) {
	fmt.Fprintf(w, "%s — axis %s (read this before any figure) ==\n\n", HeadAsymmetry, run.Axis)
	fmt.Fprintf(w, "What a returned enqueue means for each system, and whether the job commits with a business row:\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "system\tengine\ta returned enqueue means\twith a business row in PostgreSQL\truns on\n")
	for _, g := range guarantees(rep, run) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.system, g.engine, g.durable, g.withRow, g.runtime)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nA plain enqueue on Valkey is not atomic with any store: a business row in PostgreSQL and its job are two\n")
	fmt.Fprintf(w, "systems. The bus gets a Postgres queue's atomicity through an outbox (reference/outbox: the job is an outbox row\n")
	fmt.Fprintf(w, "in the business transaction, relayed to the bus under an id minted at commit, so a relay crash re-sends and the\n")
	fmt.Fprintf(w, "idempotent enqueue keeps one job): enqueue-transactional. Delivery is at least once on every side; an exactly-once\n")
	fmt.Fprintf(w, "effect needs the handler's effect and the job id in one PostgreSQL transaction (reference/absorb): drain-exactly-once.\n\n")
	writeConditions(w, rep, run)
}

// writeConditions: the engines, the common sizes, every system's version and settings, the
// machine and the method, still before any figure.
func writeConditions(w io.Writer, rep *bench.Report, run *bench.Run) {
	fmt.Fprintf(w, "Engines:\n")
	for _, e := range run.Engines {
		var kv []string
		for _, s := range e.Settings {
			kv = append(kv, s[0]+"="+s[1])
		}
		fmt.Fprintf(w, "  %-8s %s (%s): %s\n", e.Engine, e.Version, e.Mode, strings.Join(kv, " "))
	}
	p := rep.Params
	fmt.Fprintf(w, "Same conditions for every system: %d producers (enqueue-concurrent, transactional, latency senders),\n", p.Producers)
	fmt.Fprintf(w, "  %d worker slots (drain, latency), one pgx pool of %d connections shared by every Go Postgres system,\n", p.Workers, p.PGPool)
	fmt.Fprintf(w, "  the pg-commit-n ceiling and the bus's business rows (each Node.js system: a pool of at most %d of its own);\n", p.PGPool)
	fmt.Fprintf(w, "  empty handlers; one process drives the Go systems, one Node.js process each Node.js system.\n")
	fmt.Fprintf(w, "Systems (version; client runtime; settings; the documentation they follow):\n")
	for _, s := range rep.Systems {
		fmt.Fprintf(w, "  %s: %s; %s;\n    %s\n", s.Name, s.Version, s.Runtime, settingsText(s.Settings))
		if s.Docs != "" {
			fmt.Fprintf(w, "    as documented: %s\n", s.Docs)
		}
	}
	fmt.Fprintf(w, "  Node.js systems run each scenario inside Node (bench/systems/nodeq/js: no hop per job), the latency scenario's generator\n")
	fmt.Fprintf(w, "  in a producer process of its own (as their documentation deploys producers); their CPU is counted on the bench side.\n")
	fmt.Fprintf(w, "Machine: %s (GOMAXPROCS %d), %s/%s, %s. The engines and the load generator share these cores;\n",
		coresText(rep.Machine), rep.Machine.GOMAXPROCS, rep.Machine.OS, rep.Machine.Arch, rep.Machine.Go)
	fmt.Fprintf(w, "  \"cpu\" columns are cores kept busy (CPU s ÷ wall s): bench process (load + every client side) / valkey / postgres / whole machine,\n")
	fmt.Fprintf(w, "  then \"out\": the share of all cores busy with work that is not this run's (other users of the machine).\n")
	fmt.Fprintf(w, "  Load while measuring: median outside share %.0f%%%s.\n", 100*rep.Outside(), busyNote(rep.Outside()))
	fmt.Fprintf(w, "Durations: %v per timed repeat, %d repeats (median, min–max shown); drain backlog %d, timed from the first handler\n",
		p.Duration, p.Repeats, p.Backlog)
	fmt.Fprintf(w, "  start to the last recorded ack (backlog insertion and client start-up outside the window); the backlog axis at %s;\n", sizesText(p.BacklogSizes))
	fmt.Fprintf(w, "  latency: %d rounds of %v at %.0f jobs/s offered, interleaved across the systems.\n", p.LatencyRounds, p.LatencyDuration, p.Rate)
	fmt.Fprintf(w, "Latency method: open loop; each job carries its intended send instant and latency is counted from it,\n")
	fmt.Fprintf(w, "so a stalled sender cannot hide queueing delay (coordinated omission); HdrHistogram, 3 significant digits.\n")
	fmt.Fprintf(w, "  Each round starts once the run's Valkey and PostgreSQL are back within 2%% of the cores of their quietest moment\n")
	fmt.Fprintf(w, "  (at most 5 s of waiting), so that a system is not measured under the work the one before it left; bench.json has\n")
	fmt.Fprintf(w, "  how busy they were at each round's start (round_start_busy) and each round's CPU by party (round_cpu).\n\n")
}

func settingsText(kv [][2]string) string {
	var parts []string
	for _, s := range kv {
		parts = append(parts, s[0]+"="+s[1])
	}
	return strings.Join(parts, ", ")
}

func sizesText(ns []int) string {
	var parts []string
	for _, n := range ns {
		parts = append(parts, human(float64(n)))
	}
	return strings.Join(parts, ", ") + " jobs"
}

// busName is the bus as printed (the ratios are the bus's).
const busName = busq.Name
