package baseline

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
)

func kitRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// quickSpec is the check at a test's size: the two throughput metrics, eight rounds a build
// (six are the fewest at which a U test can reach p < 0.01: 2/924 at complete separation).
var quickSpec = Spec{Repeats: 8, Alpha: 0.01, Metrics: []MetricSpec{
	{Name: "drain jobs/s", Scenario: "drain", Field: "per_s", Higher: true, Margin: 0.15},
	{Name: "enqueue jobs/s", Scenario: "enqueue", Field: "per_s", Higher: true, Margin: 0.15},
}}

var quickSizes = Sizes{Backlog: 5000, Workers: 64, Parked: 8, Producers: 16, EnqueueSeconds: 0.3, LatencySeconds: 1, Rate: 500}

// TestTheCheckFailsASlowedBus: the working tree against itself passes, and against itself with
// every command of the bus made slower from outside (testdata/slowbus.go, added to the agent's
// build through the bus's command hook) fails beyond a margin. Each metric's figures are logged;
// one found worse fails the check, and on a machine busy enough to scatter a metric's rounds
// over two orders of magnitude (a make test beside other work) the rank test of one metric may
// not reach p < 0.01 though the medians moved 80 %, so the test does not demand both.
func TestTheCheckFailsASlowedBus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vk, err := engines.StartValkey(ctx, engines.ValkeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vk.Stop()
	root := kitRoot(t)
	slow, err := os.ReadFile("testdata/slowbus.go")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Root: root, Valkey: vk.Addr, Spec: quickSpec, Sizes: quickSizes}
	same := Compare(ctx, cfg, Source{Label: "tree", Dir: root}, Source{Label: "tree again", Dir: root})
	if same.Status != Pass {
		t.Errorf("the tree against itself: %s (%s), want PASS", same.Status, same.Why)
	}
	// The slowed bus must fail the check. On a machine busy enough to scatter one build's rounds
	// over several times their spread (a make test beside a mutation run and busy loops), eight
	// rounds may not reach p < 0.01 though the medians moved by half: the comparison is made
	// again, and only a check that misses the slowdown on rounds steady enough to show it fails
	// the test; rounds too scattered every time leave it unjudged (a skip that says why).
	var slowed *Result
	for attempt := 1; attempt <= slowedAttempts; attempt++ {
		slowed = Compare(ctx, cfg, Source{Label: "tree", Dir: root},
			Source{Label: "tree, slowed", Dir: root, Extra: map[string][]byte{"slowbus.go": slow}})
		for _, m := range slowed.Metrics {
			t.Logf("slowed, attempt %d, %s: baseline %v, tree %v: change %+.0f%%, p beyond the margin %.3g, worse: %v",
				attempt, m.Name, m.Base, m.Tree, 100*m.Change, m.PBeyond, m.Worse)
		}
		if slowed.Status == Fail && slices.ContainsFunc(slowed.Metrics, func(m Metric) bool { return m.Worse }) {
			break
		}
	}
	for _, m := range same.Metrics {
		t.Logf("same %s: change %+.0f%%, p %.3g", m.Name, 100*m.Change, m.P)
	}
	for _, a := range slowed.Agents {
		if a.Adapter != "current" {
			t.Errorf("%s built with adapter %q, want current", a.Label, a.Adapter)
		}
	}
	if slowed.Status != Fail || !slices.ContainsFunc(slowed.Metrics, func(m Metric) bool { return m.Worse }) {
		if sc := scatter(slowed); sc > maxScatter && !t.Failed() {
			t.Skipf("a slowed bus passed the check %d times on rounds scattered up to %.1f× within one build (more than %d×): the machine was too busy for %d rounds to show the slowdown; not judged",
				slowedAttempts, sc, maxScatter, quickSpec.Repeats)
		}
		t.Errorf("a slowed bus: %s (%s), no metric found worse beyond its margin in %d comparisons, want FAIL", slowed.Status, slowed.Why, slowedAttempts)
	}
}

// slowedAttempts bounds the comparisons of the slowed bus; maxScatter is the widest max ÷ min of
// one build's rounds on which a miss of the slowdown (about a halving) fails the test.
const (
	slowedAttempts = 3
	maxScatter     = 4
)

// scatter is the widest max ÷ min of one build's rounds over r's metrics.
func scatter(r *Result) float64 {
	w := 1.0
	for _, m := range r.Metrics {
		for _, xs := range [][]float64{m.Base, m.Tree} {
			if len(xs) > 0 && slices.Min(xs) > 0 {
				w = max(w, slices.Max(xs)/slices.Min(xs))
			}
		}
	}
	return w
}

// gitRepo makes a repository with commits c1..cn, tagging commit i with tags[i] when set.
func gitRepo(t *testing.T, tags map[int]string, n int) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	run("init", "-q")
	for i := 1; i <= n; i++ {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		run("add", "f")
		run("commit", "-q", "-m", "c")
		if tag, ok := tags[i]; ok {
			run("tag", tag)
		}
	}
	return dir
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	resolve := func(dir, explicit string) (Ref, error) {
		tr, err := WorkingTree(ctx, dir)
		if err != nil {
			return Ref{}, err
		}
		return Resolve(ctx, dir, explicit, tr)
	}
	t.Run("no tag: no baseline", func(t *testing.T) {
		_, err := resolve(gitRepo(t, nil, 2), "")
		if !errors.Is(err, ErrNoBaseline) || !strings.Contains(err.Error(), "BENCH_BASELINE") {
			t.Fatalf("err = %v, want ErrNoBaseline naming BENCH_BASELINE", err)
		}
	})
	t.Run("not a checkout: no baseline", func(t *testing.T) {
		_, err := resolve(t.TempDir(), "")
		if !errors.Is(err, ErrNoBaseline) {
			t.Fatalf("err = %v, want ErrNoBaseline", err)
		}
	})
	t.Run("the last release tag", func(t *testing.T) {
		r, err := resolve(gitRepo(t, map[int]string{1: "v0.1.0", 2: "v0.2.0", 3: "not-a-release"}, 4), "")
		if err != nil || r.Name != "v0.2.0" {
			t.Fatalf("got %+v, %v; want v0.2.0", r, err)
		}
	})
	t.Run("HEAD is the release: the one before", func(t *testing.T) {
		r, err := resolve(gitRepo(t, map[int]string{1: "v0.1.0", 3: "v0.2.0"}, 3), "")
		if err != nil || r.Name != "v0.1.0" {
			t.Fatalf("got %+v, %v; want v0.1.0", r, err)
		}
	})
	t.Run("HEAD is the only release: none", func(t *testing.T) {
		_, err := resolve(gitRepo(t, map[int]string{2: "v0.1.0"}, 2), "")
		if !errors.Is(err, ErrNoBaseline) || !strings.Contains(err.Error(), "HEAD is the release v0.1.0 itself") {
			t.Fatalf("err = %v, want ErrNoBaseline saying HEAD is the only release", err)
		}
	})
	t.Run("explicit ref", func(t *testing.T) {
		dir := gitRepo(t, nil, 3)
		r, err := resolve(dir, "HEAD~2")
		if err != nil || r.How != "BENCH_BASELINE" || len(r.Commit) != 40 {
			t.Fatalf("got %+v, %v", r, err)
		}
		if _, err := resolve(dir, "no-such-ref"); err == nil || errors.Is(err, ErrNoBaseline) {
			t.Fatalf("an explicit ref that names nothing: err = %v, want an error that is not ErrNoBaseline", err)
		}
	})
	t.Run("shallow clone says so", func(t *testing.T) {
		src := gitRepo(t, map[int]string{1: "v0.1.0"}, 3)
		dst := filepath.Join(t.TempDir(), "c")
		if out, err := exec.Command("git", "clone", "-q", "--depth", "1", "--no-tags", "file://"+src, dst).CombinedOutput(); err != nil {
			t.Fatalf("clone: %v: %s", err, out)
		}
		_, err := resolve(dst, "")
		if !errors.Is(err, ErrNoBaseline) || !strings.Contains(err.Error(), "shallow") {
			t.Fatalf("err = %v, want ErrNoBaseline saying the clone is shallow", err)
		}
	})
}

// TestRunWithoutBaselineIsNotRun: with no release to compare with and none asked for, the check
// is NOT RUN (and says why); asked for a ref that does not exist, it fails.
func TestRunWithoutBaselineIsNotRun(t *testing.T) {
	dir := gitRepo(t, nil, 1)
	r := Run(context.Background(), Config{Root: dir, Spec: quickSpec})
	if r.Status != NotRun || !strings.Contains(r.Why, "no release tag") {
		t.Fatalf("got %s (%s), want NOT RUN naming the missing tag", r.Status, r.Why)
	}
	r = Run(context.Background(), Config{Root: dir, Ref: "v9.9.9", Spec: quickSpec})
	if r.Status != Fail {
		t.Fatalf("an explicit missing baseline: %s (%s), want FAIL", r.Status, r.Why)
	}
}

func TestAdaptersCurrentFirst(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"adapter.go":        "//go:build !emqlegacy\n\npackage main\n",
		"adapter_ms.go":     "//go:build emqlegacy && emqapi_ms\n\npackage main\n",
		"adapter_second.go": "//go:build emqlegacy && emqapi_second\n\npackage main\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := adapters(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{nil, {"emqlegacy", "emqapi_ms"}, {"emqlegacy", "emqapi_second"}}
	if len(got) != len(want) || got[0] != nil || got[1][1] != "emqapi_ms" || got[2][1] != "emqapi_second" {
		t.Fatalf("adapters = %q, want %q", got, want)
	}
}

// TestAnOlderAPIGetsItsAdapter: a baseline whose bus has another API than the working tree's
// fails the current adapter and builds with the older API's own (a fake tree here, with a bus of
// a different shape and an adapter file for it), so an API change does not break the check.
func TestAnOlderAPIGetsItsAdapter(t *testing.T) {
	ctx := context.Background()
	agentSrc := t.TempDir()
	real, err := filepath.Glob(filepath.Join(kitRoot(t), AgentDir, "*.go"))
	if err != nil || len(real) == 0 {
		t.Fatalf("agent sources: %v %v", real, err)
	}
	for _, f := range real {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(agentSrc, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	legacy := `//go:build emqlegacy && emqapi_fake

package main

import (
	"context"

	"github.com/echomq/kit/reference/bus"
)

const adapterName = "emqapi_fake"

type adapter struct{ b *bus.Bus }

func openBus(ctx context.Context, addr string) (busAPI, error) { return adapter{bus.Dial(addr)}, nil }
func (a adapter) Enqueue(ctx context.Context, q string, p []byte) error { return a.b.Put(q, p) }
func (a adapter) EnqueueBatch(ctx context.Context, q string, ps [][]byte) error { return nil }
func (a adapter) Consume(ctx context.Context, q string, w, p int, h func([]byte)) (func() error, error) {
	return func() error { return nil }, nil
}
func (a adapter) Close() error { return nil }
`
	if err := os.WriteFile(filepath.Join(agentSrc, "adapter_fake.go"), []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	for name, src := range map[string]string{
		"go.mod":               "module github.com/echomq/kit\n\ngo 1.26\n",
		"reference/bus/bus.go": "package bus\n\n// A bus of another shape: no Options, no Consumer.\ntype Bus struct{}\n\nfunc Dial(addr string) *Bus { return &Bus{} }\n\nfunc (b *Bus) Put(q string, p []byte) error { return nil }\n",
	} {
		if err := writeFile(filepath.Join(tree, name), strings.NewReader(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Place(agentSrc, tree); err != nil {
		t.Fatal(err)
	}
	a, err := Build(ctx, agentSrc, Source{Label: "fake", Dir: tree}, filepath.Join(t.TempDir(), "agent"))
	if err != nil || a.Adapter != "emqapi_fake" {
		t.Fatalf("build against an older API: %+v, %v; want the emqapi_fake adapter", a, err)
	}
	if out, err := exec.Command(a.Bin, "-scenario", "adapter").Output(); err != nil || !strings.Contains(string(out), `"adapter":"emqapi_fake"`) {
		t.Fatalf("the built agent says %s (%v)", out, err)
	}
	// With neither adapter fitting, the build fails and names each adapter's error.
	if err := os.Remove(filepath.Join(tree, AgentDir, "adapter_fake.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(agentSrc, "adapter_fake.go")); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(ctx, agentSrc, Source{Label: "fake", Dir: tree}, filepath.Join(t.TempDir(), "agent")); err == nil || !strings.Contains(err.Error(), "no adapter compiles") {
		t.Fatalf("no adapter fits: err = %v", err)
	}
}
