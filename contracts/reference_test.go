package contracts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/echomq/kit/contracts/suite"
	"github.com/echomq/kit/reference/mutant"
)

const frozen = "../transcripts/conformance-reference.out"

// TestReferenceInProcess: the clean reference is certified in-process, and its transcript is
// the frozen one byte for byte (-update rewrites it).
func TestReferenceInProcess(t *testing.T) {
	r := conform(t, nil)
	if r.exit != 0 || !r.report.Result.Certified {
		t.Fatalf("the reference is not certified (exit %d):\n%s\n%s", r.exit, r.stdout, failures(r))
	}
	if !strings.Contains(r.stdout, "CONFORMANCE 14/14") {
		t.Errorf("no CONFORMANCE 14/14 line:\n%s", r.stdout)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(frozen), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(frozen, []byte(r.transcript), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", frozen)
		return
	}
	want, err := os.ReadFile(frozen)
	if err != nil {
		t.Fatalf("%v (run go test ./contracts -run TestReferenceInProcess -update)", err)
	}
	if string(want) != r.transcript {
		t.Errorf("a fresh transcript differs from %s (rerun with -update if the change is intended):\n--- frozen\n%s\n--- fresh\n%s", frozen, want, r.transcript)
	}
}

// TestReferenceSubprocess: the reference's port binary, driven through the subprocess driver,
// is certified too, with the same verdicts as in-process.
func TestReferenceSubprocess(t *testing.T) {
	bin := bins["emq-port"]
	if bin == "" {
		t.Fatal("cmd/emq-port is missing: the reference port binary is needed")
	}
	r := conform(t, nil, "-port", bin)
	if r.exit != 0 || !r.report.Result.Certified {
		t.Fatalf("the reference port binary is not certified (exit %d):\n%s\n%s", r.exit, r.stdout, failures(r))
	}
}

func failures(r *run) string {
	var b strings.Builder
	for _, c := range r.report.Result.Contracts {
		for _, cl := range c.Clauses {
			if cl.Message != "" {
				fmt.Fprintf(&b, "--- %s %s\n%s\n", cl.ID, cl.Verdict, cl.Message)
			}
		}
	}
	return b.String()
}

// TestMutantsAreKilled runs the whole suite against every mutant of the reference and demands
// that each one fails, and fails the contract its spec names.
func TestMutantsAreKilled(t *testing.T) {
	specs := mutant.Catalogue()
	type row struct {
		name, target string
		failed       []string
		killed       bool
		note         string
	}
	rows := make([]row, len(specs))
	sem := make(chan struct{}, 2) // 2 cores: two suites (each with its own Valkey) at a time
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rows[i] = row{name: s.Name, target: s.Contract}
			r := conform(t, nil, "-mutant", s.Name)
			for _, c := range r.report.Result.Contracts {
				switch c.Status {
				case suite.StatusFail:
					rows[i].failed = append(rows[i].failed, c.ID)
				case suite.StatusHarnessError:
					rows[i].note = "harness error in " + c.ID
				}
			}
			rows[i].killed = r.exit == 1 && contains(rows[i].failed, s.Contract)
		}()
	}
	wg.Wait()
	sort.Slice(rows, func(i, j int) bool { return rows[i].target+rows[i].name < rows[j].target+rows[j].name })
	var b strings.Builder
	killed := 0
	fmt.Fprintf(&b, "%-28s %-7s %-8s %s\n", "mutant", "target", "killed", "contracts that failed")
	for _, r := range rows {
		k := "no"
		if r.killed {
			k = "yes"
			killed++
		}
		fmt.Fprintf(&b, "%-28s %-7s %-8s %s %s\n", r.name, r.target, k, strings.Join(r.failed, " "), r.note)
	}
	fmt.Fprintf(&b, "kill rate: %d/%d\n", killed, len(rows))
	t.Logf("mutant table:\n%s", b.String())
	for _, r := range rows {
		if !r.killed {
			t.Errorf("mutant %s survived its target %s (failed: %v %s)", r.name, r.target, r.failed, r.note)
		}
	}
}
