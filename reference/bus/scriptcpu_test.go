package bus_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/resp"
)

// BenchmarkScriptCPU measures what each hot script costs the server: b.N calls pipelined in
// batches of 256 ("floor" is a script that only returns, with enqueue's KEYS and ARGV), with the server's own CPU (INFO cpu, user+sys) read around every batch,
// reported as server-µs/op. The server is the package's private one, so nothing else spends
// its CPU. Run with a fixed count, e.g.
//
//	go test ./reference/bus -run '^$' -bench ScriptCPU -benchtime 20000x
//
// On a shared machine the absolute figures drift with the load, so a change is judged against
// a baseline in the same run: EMQ_SCRIPTCPU_BASE=<dir of .lua files> (e.g. the bundle of an
// earlier commit) runs those scripts on a second queue, batch for batch interleaved with the
// bundle's, and reports them as base-µs/op.
func BenchmarkScriptCPU(b *testing.B) {
	for _, name := range []string{"floor", "enqueue", "claim", "complete", "lane_enqueue", "lane_claim", "lane_complete", "retry"} {
		b.Run(name, func(b *testing.B) { scriptCPU(b, name, os.Getenv("EMQ_SCRIPTCPU_BASE")) })
	}
	// The batch scripts, server-µs per job at a batch of k jobs per call (b.N jobs in all).
	for _, name := range []string{"enqueue_batch", "claim_batch", "complete_batch"} {
		for _, k := range []int{16, 64} {
			b.Run(name+"/k="+strconv.Itoa(k), func(b *testing.B) { batchCPU(b, name, k) })
		}
	}
}

// variant is one set of scripts working its own queue.
type variant struct {
	scripts map[string]*connector.Script
	p       string   // the queue's key prefix
	ids     []string // the jobs it enqueues
	got     []string // the jobs its claims returned, with their tokens
	tok     []int64
	cpu     float64 // server µs spent in its measured batches
}

// cpuRig runs scripts by hand on one connection and reads the server's counters.
type cpuRig struct {
	b     *testing.B
	ctx   context.Context
	c     *connector.Conn
	batch connector.Batch
	vals  []resp.Value
	per   int // jobs per measured call (a batch script's k); 0 or 1 for single-job scripts
}

func loadVariant(b *testing.B, bb *bus.Bus, dir string, n int) *variant {
	bundle, err := lua.Load()
	if err != nil {
		b.Fatal(err)
	}
	v := &variant{scripts: map[string]*connector.Script{}, p: "emq:{" + qname(b) + "}:", ids: make([]string, n)}
	for _, s := range bundle.Scripts() {
		src := s.Source
		if dir != "" {
			raw, err := os.ReadFile(filepath.Join(dir, s.Name+".lua"))
			if err != nil {
				b.Fatal(err)
			}
			src = string(raw)
		}
		v.scripts[s.Name] = connector.NewScript(s.Name, src)
	}
	v.scripts["floor"] = connector.NewScript("floor", "return 1")
	for i := range v.ids {
		if v.ids[i], err = bb.Mint(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	return v
}

// call builds the KEYS and ARGV of the i-th call of a script on v's queue.
type call func(v *variant, i int) ([]string, []any)

// batch sends calls [lo, hi) of script in one pipeline and fails on any error reply.
func (r *cpuRig) batchOf(v *variant, script string, lo, hi int, c call) []resp.Value {
	r.b.Helper()
	r.batch.Reset()
	for i := lo; i < hi; i++ {
		ks, args := c(v, i)
		r.batch.EvalSha(v.scripts[script], ks, args...)
	}
	vals, err := r.c.Exec(r.ctx, &r.batch, r.vals[:0])
	if err != nil {
		r.b.Fatalf("%s: %v", script, err)
	}
	for _, val := range vals {
		if err := val.Err(); err != nil {
			r.b.Fatalf("%s: %v", script, err)
		}
	}
	r.vals = vals
	return vals
}

// run makes all n calls of script on v, untimed (the set-up of a case).
func (r *cpuRig) run(v *variant, script string, n int, c call) []resp.Value {
	var out []resp.Value
	for lo := 0; lo < n; lo += 256 {
		out = append(out, r.batchOf(v, script, lo, min(lo+256, n), c)...)
	}
	return out
}

// serverCPU is the server process's user+sys CPU in µs.
func (r *cpuRig) serverCPU() float64 {
	v, err := r.c.Do(r.ctx, "INFO", "cpu")
	if err != nil {
		r.b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(v.Text(), "\r\n") {
		k, val, ok := strings.Cut(line, ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				r.b.Fatalf("INFO cpu %q: %v", line, err)
			}
			total += f
		}
	}
	return total * 1e6
}

// measure makes n calls of script on each variant, batch by batch in turn, charging each
// variant the server CPU of its own batches.
func (r *cpuRig) measure(vs []*variant, script string, n int, c call) {
	r.b.Helper()
	r.b.ResetTimer()
	r.b.StartTimer()
	for lo := 0; lo < n; lo += 256 {
		for _, v := range vs {
			before := r.serverCPU()
			vals := r.batchOf(v, script, lo, min(lo+256, n), c)
			v.cpu += r.serverCPU() - before
			if script == "claim_batch" {
				for _, val := range vals {
					for _, e := range val.Elems {
						v.got = append(v.got, string(e.Elems[0].Str))
						v.tok = append(v.tok, e.Elems[2].Int)
					}
				}
			} else if strings.HasSuffix(script, "claim") {
				for _, val := range vals {
					if len(val.Elems) < 3 {
						r.b.Fatalf("%s replied %v", script, val)
					}
					v.got = append(v.got, string(val.Elems[0].Str))
					v.tok = append(v.tok, val.Elems[2].Int)
				}
			}
		}
	}
	r.b.StopTimer()
	r.b.ReportMetric(vs[0].cpu/float64(n*r.per), "server-µs/op")
	if len(vs) > 1 {
		r.b.ReportMetric(vs[1].cpu/float64(n*r.per), "base-µs/op")
	}
}

// batchCPU measures a batch script at k jobs per call: b.N jobs (rounded up to whole calls),
// reported as server-µs per job.
func batchCPU(b *testing.B, name string, k int) {
	b.StopTimer()
	calls := (b.N + k - 1) / k
	n := calls * k
	bb := openBus(b, addr, bus.Options{})
	r := &cpuRig{b: b, ctx: context.Background(), c: inspect(b, addr).c, per: k}
	v := loadVariant(b, bb, "", n)
	vs := []*variant{v}
	payload := []byte("0123456789abcdef")
	enqueue := func(v *variant, i int) ([]string, []any) {
		p := v.p
		ks := []string{p + "pending", p + "scheduled", p + "wake"}
		var args []any
		for _, id := range v.ids[i*k : (i+1)*k] {
			ks = append(ks, p+"job:"+id)
			args = append(args, id, payload, 0)
		}
		return ks, args
	}
	claim := func(v *variant, _ int) ([]string, []any) {
		p := v.p
		return []string{p + "pending", p + "active", p + "meta", p + "wake", p + "ckpt", p + "ring"}, []any{30000, k}
	}
	complete := func(v *variant, i int) ([]string, []any) {
		p := v.p
		ks := []string{p + "active", p + "ckpt", p + "errors", p + "laneof", p + "lanes", p + "ring", p + "wake"}
		var args []any
		for j := i * k; j < (i+1)*k; j++ {
			ks = append(ks, p+"job:"+v.got[j])
			args = append(args, v.got[j], v.tok[j])
		}
		return ks, args
	}
	switch name {
	case "enqueue_batch":
		r.measure(vs, name, calls, enqueue)
	case "claim_batch":
		r.per = 1
		r.run(v, "enqueue_batch", calls, enqueue)
		r.per = k
		r.measure(vs, name, calls, claim)
	case "complete_batch":
		r.run(v, "enqueue_batch", calls, enqueue)
		for _, val := range r.run(v, "claim_batch", calls, claim) {
			for _, e := range val.Elems {
				v.got = append(v.got, string(e.Elems[0].Str))
				v.tok = append(v.tok, e.Elems[2].Int)
			}
		}
		r.measure(vs, name, calls, complete)
	}
	// The calls did their work: every job is where the last script put it.
	want := map[string]int64{"claim_batch": int64(n)}[name]
	if got := r.card("ZCARD", v.p+"active"); got != want {
		b.Fatalf("%s: %d active after the run, want %d", name, got, want)
	}
	if name == "enqueue_batch" {
		if got := r.card("ZCARD", v.p+"pending"); got != int64(n) {
			b.Fatalf("%s: %d pending after the run, want %d", name, got, n)
		}
	}
	left := r.cleanup(v.p)
	if name == "complete_batch" && (len(left) != 1 || left[0] != v.p+"wake") {
		b.Fatalf("%s: keys left after completing every job: %v", name, left)
	}
}

func scriptCPU(b *testing.B, name, base string) {
	b.StopTimer()
	n := b.N
	bb := openBus(b, addr, bus.Options{}) // installs the fence; mints the ids
	r := &cpuRig{b: b, ctx: context.Background(), c: inspect(b, addr).c, per: 1}
	vs := []*variant{loadVariant(b, bb, "", n)}
	if base != "" {
		vs = append(vs, loadVariant(b, bb, base, n))
	}
	payload := []byte("0123456789abcdef")
	lane := func(i int) string { return "g" + strconv.Itoa(i%16) }
	enqueue := func(v *variant, i int) ([]string, []any) {
		p := v.p
		return []string{p + "job:" + v.ids[i], p + "pending", p + "scheduled", p + "wake"}, []any{v.ids[i], payload, 0}
	}
	laneEnqueue := func(v *variant, i int) ([]string, []any) {
		p := v.p
		return []string{p + "job:" + v.ids[i], p + "lane:" + lane(i), p + "scheduled", p + "wake", p + "laneof", p + "lanes", p + "ring"},
			[]any{v.ids[i], lane(i), payload, 0}
	}
	claim := func(v *variant, _ int) ([]string, []any) {
		p := v.p
		return []string{p + "pending", p + "active", p + "meta", p + "wake", p + "ckpt", p + "ring"}, []any{30000}
	}
	laneClaim := func(v *variant, _ int) ([]string, []any) {
		p := v.p
		return []string{p + "ring", p + "active", p + "meta", p + "wake", p + "ckpt", p + "lanes", p + "pending"}, []any{30000}
	}
	complete := func(v *variant, i int) ([]string, []any) {
		p := v.p
		return []string{p + "job:" + v.got[i], p + "active", p + "ckpt", p + "errors", p + "laneof", p + "lanes", p + "ring", p + "wake"},
			[]any{v.got[i], v.tok[i]}
	}
	retry := func(v *variant, i int) ([]string, []any) {
		p := v.p
		return []string{p + "job:" + v.got[i], p + "active", p + "pending", p + "scheduled", p + "dead", p + "errors",
			p + "wake", p + "laneof", p + "lanes", p + "ring"}, []any{v.got[i], v.tok[i], 10, 0, "boom"}
	}
	// claimAll fills v.got/v.tok untimed.
	claimAll := func(script string, c call) {
		for _, v := range vs {
			for _, val := range r.run(v, script, n, c) {
				v.got = append(v.got, string(val.Elems[0].Str))
				v.tok = append(v.tok, val.Elems[2].Int)
			}
		}
	}
	each := func(script string, c call) {
		for _, v := range vs {
			r.run(v, script, n, c)
		}
	}
	switch name {
	case "floor": // an EVALSHA that does nothing, with enqueue's KEYS and ARGV
		r.measure(vs, "floor", n, enqueue)
	case "enqueue":
		r.measure(vs, "enqueue", n, enqueue)
	case "lane_enqueue":
		r.measure(vs, "lane_enqueue", n, laneEnqueue)
	case "claim":
		each("enqueue", enqueue)
		r.measure(vs, "claim", n, claim)
	case "lane_claim":
		each("lane_enqueue", laneEnqueue)
		r.measure(vs, "lane_claim", n, laneClaim)
	case "complete":
		each("enqueue", enqueue)
		claimAll("claim", claim)
		r.measure(vs, "complete", n, complete)
	case "lane_complete":
		each("lane_enqueue", laneEnqueue)
		claimAll("lane_claim", laneClaim)
		r.measure(vs, "complete", n, complete)
	case "retry":
		each("enqueue", enqueue)
		claimAll("claim", claim)
		r.measure(vs, "retry", n, retry)
	default:
		b.Fatalf("no such case %q", name)
	}
	// The calls must have done their work: every job is where its last script put it.
	for _, v := range vs {
		want := map[string]int64{"claim": int64(n), "lane_claim": int64(n)}[name]
		if got := r.card("ZCARD", v.p+"active"); got != want {
			b.Fatalf("%s: %d active after the run, want %d", name, got, want)
		}
		left := r.cleanup(v.p)
		if (name == "complete" || name == "lane_complete") && (len(left) != 1 || left[0] != v.p+"wake") {
			b.Fatalf("%s: keys left after completing every job: %v", name, left)
		}
	}
}

func (r *cpuRig) card(args ...any) int64 {
	v, err := r.c.Do(r.ctx, args...)
	if err != nil {
		r.b.Fatal(err)
	}
	return v.Int
}

// cleanup unlinks the keys under prefix p so the next case starts on a small keyspace, and
// returns which they were.
func (r *cpuRig) cleanup(p string) []string {
	var all []string
	cursor := "0"
	for {
		v, err := r.c.Do(r.ctx, "SCAN", cursor, "MATCH", p+"*", "COUNT", 5000)
		if err != nil {
			r.b.Fatal(err)
		}
		cursor = string(v.Elems[0].Str)
		if ks := v.Elems[1].Elems; len(ks) > 0 {
			cmd := []any{"UNLINK"}
			for _, k := range ks {
				cmd = append(cmd, string(k.Str))
				all = append(all, string(k.Str))
			}
			if _, err := r.c.Do(r.ctx, cmd...); err != nil {
				r.b.Fatal(err)
			}
		}
		if cursor == "0" {
			return all
		}
	}
}
