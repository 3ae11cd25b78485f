package bench

import (
	"fmt"

	"github.com/echomq/kit/bench/measure"
	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/systems/busq"
)

// tally is one system's figures over the repeats of one scenario.
type tally struct {
	rates, startups []float64
	err             error
	cpu             measure.Acc
}

// tallies keeps one tally per system, by name.
type tallies map[string]*tally

func (ts tallies) of(name string) *tally {
	if ts[name] == nil {
		ts[name] = &tally{}
	}
	return ts[name]
}

// results turns the tallies into the scenario's rows, each with its engine's ceiling.
func (e *env) results(qs []queue.Queue, ts tallies, ceilFor func(queue.Info) string) []*Result {
	var out []*Result
	for _, q := range qs {
		info := q.Info()
		t := ts.of(info.Name)
		r := &Result{System: info.Name, Engine: info.Engine, Ceiling: ceilFor(info)}
		if t.err != nil {
			r.Err = t.err.Error()
		}
		if len(t.rates) > 0 && r.Err == "" {
			r.JobsPerS = measure.SpreadOf(t.rates)
			if c := e.ceiling(r.Ceiling); c != nil && c.Rate.Median > 0 {
				r.Fraction = r.JobsPerS.Median / c.Rate.Median
			}
			r.CPU = t.cpu.CPU()
			if len(t.startups) > 0 {
				sp := measure.SpreadOf(t.startups)
				r.Startup = &sp
			}
		}
		out = append(out, r)
	}
	return out
}

func (e *env) ceiling(name string) *Ceiling {
	for i := range e.run.Ceilings {
		if e.run.Ceilings[i].Name == name && e.run.Ceilings[i].Err == "" {
			return &e.run.Ceilings[i]
		}
	}
	return nil
}

// Ratio names of the best rivals, computed each run from the figures (never named in advance).
const (
	BestPostgres = "best-postgres"
	BestValkey   = "best-valkey"
)

// rival is one system's figure for the ratios.
type rival struct {
	name   string
	engine queue.Engine
	model  bool
	v      float64
}

// best is the best real queue on engine (higher wins unless lower is set); models never count.
func best(rs []rival, engine queue.Engine, lower bool) (rival, bool) {
	var b rival
	found := false
	for _, r := range rs {
		if r.name == busq.Name || r.engine != engine || r.model || r.v <= 0 {
			continue
		}
		if !found || (lower && r.v < b.v) || (!lower && r.v > b.v) {
			b, found = r, true
		}
	}
	return b, found
}

// ratios compares the bus with every other system, then with the best Postgres queue and the
// best Valkey-protocol queue of the scenario: "bus/river", "bus/best-postgres" (Rival: river).
func ratios(rs []*Result, models map[string]bool) []Ratio {
	var all []rival
	var bus float64
	for _, r := range rs {
		if r.Err != "" || r.JobsPerS.Median <= 0 {
			continue
		}
		if r.System == busq.Name {
			bus = r.JobsPerS.Median
			continue
		}
		all = append(all, rival{r.System, r.Engine, models[r.System], r.JobsPerS.Median})
	}
	if bus <= 0 {
		return nil
	}
	var out []Ratio
	for _, o := range all {
		out = append(out, Ratio{Name: busq.Name + "/" + o.name, Value: bus / o.v})
	}
	for _, b := range []struct {
		name   string
		engine queue.Engine
	}{{BestPostgres, queue.Postgres}, {BestValkey, queue.Valkey}} {
		if o, ok := best(all, b.engine, false); ok {
			out = append(out, Ratio{Name: busq.Name + "/" + b.name, Value: bus / o.v, Rival: o.name})
		}
	}
	return out
}

// latencyRatios compares the bus's p50 and p99 with every other system's, and its p99 (the
// median of the rounds' p99s) with the lowest of the best Postgres and Valkey-protocol queues.
func latencyRatios(rs []*LatencyResult, engines map[string]queue.Engine, models map[string]bool) []Ratio {
	var bus *LatencyResult
	var p99s []rival
	var out []Ratio
	for _, r := range rs {
		if r.Err == "" && !r.Saturated && r.Latency.Count > 0 && r.System == busq.Name {
			bus = r
		}
	}
	if bus == nil {
		return nil
	}
	for _, o := range rs {
		if o == bus || o.Err != "" || o.Saturated || o.Latency.Count == 0 || o.Latency.P50 <= 0 || o.P99Median <= 0 {
			continue // a saturated rival's rounds measured its backlog: no latency to compare
		}
		out = append(out, Ratio{Name: "p50 " + busq.Name + "/" + o.System, Value: bus.Latency.P50 / o.Latency.P50},
			Ratio{Name: "p99 " + busq.Name + "/" + o.System, Value: bus.P99Median / o.P99Median})
		p99s = append(p99s, rival{o.System, engines[o.System], models[o.System], o.P99Median})
	}
	for _, b := range []struct {
		name   string
		engine queue.Engine
	}{{BestPostgres, queue.Postgres}, {BestValkey, queue.Valkey}} {
		if o, ok := best(p99s, b.engine, true); ok {
			out = append(out, Ratio{Name: "p99 " + busq.Name + "/" + b.name, Value: bus.P99Median / o.v, Rival: o.name})
		}
	}
	return out
}

// models names the run's models (never a best rival).
func (e *env) models() map[string]bool {
	m := map[string]bool{}
	for _, q := range e.systems {
		if i := q.Info(); i.Model {
			m[i.Name] = true
		}
	}
	return m
}

func (e *env) engines() map[string]queue.Engine {
	m := map[string]queue.Engine{}
	for _, q := range e.systems {
		i := q.Info()
		m[i.Name] = i.Engine
	}
	return m
}

func (e *env) progress(format string, args ...any) {
	fmt.Fprintf(e.prog, "emq-bench: "+format+"\n", args...)
}
