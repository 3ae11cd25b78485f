package contracts_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/internal/mutant"
)

// TestReferenceInProcess: the clean reference is certified in-process, and its transcript is
// the frozen one byte for byte (-update rewrites it).
func TestReferenceInProcess(t *testing.T) {
	r := conform(t, nil)
	certified(t, r, "the reference")
	frozen(t, "../transcripts/conformance-reference.out", r.transcript)
}

// TestNodePort: the second runtime, written from the documents alone, is certified through the
// subprocess driver, and its transcript is frozen like the reference's.
func TestNodePort(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the Node port cannot be certified here (install Node.js 20)")
	}
	r := conform(t, nil, "-port", "node ../ports/node/port.js")
	certified(t, r, "the Node port")
	frozen(t, "../transcripts/conformance-node.out", r.transcript)
}

func certified(t *testing.T, r *run, who string) {
	t.Helper()
	if r.exit != 0 || !r.report.Result.Certified {
		t.Fatalf("%s is not certified (exit %d):\n%s\n%s", who, r.exit, r.stdout, failures(r))
	}
	if !strings.Contains(r.stdout, "CONFORMANCE 14/14") {
		t.Errorf("no CONFORMANCE 14/14 line:\n%s", r.stdout)
	}
}

// frozen compares a fresh transcript with the committed one, or rewrites it under -update.
func frozen(t *testing.T, path, fresh string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(fresh), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run make transcripts)", err)
	}
	if string(want) != fresh {
		t.Errorf("a fresh transcript differs from %s (run make transcripts if the change is intended):\n--- frozen\n%s\n--- fresh\n%s", path, want, fresh)
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
	certified(t, r, "the reference port binary")
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
// that each one fails, and fails the contract its spec names. A Lua mutant's edited script has
// another SHA1, which the wire law alone refuses everywhere; so each Lua mutant runs a second
// time with its edited scripts admitted, and must still fail its contract on behaviour alone.
func TestMutantsAreKilled(t *testing.T) {
	type row struct {
		name, target     string
		lua              bool
		failed, behavior []string
		killed, byBehav  bool
		note             string
	}
	specs := mutant.Catalogue()
	rows := make([]row, len(specs))
	type job struct {
		i     int
		admit bool
	}
	var jobs []job
	for i, s := range specs {
		rows[i] = row{name: s.Name, target: s.Contract, lua: len(s.Edits) > 0}
		jobs = append(jobs, job{i, false})
		if rows[i].lua {
			jobs = append(jobs, job{i, true})
		}
	}
	var mu sync.Mutex
	sem := make(chan struct{}, 2) // 2 cores: two suites (each with its own Valkey) at a time
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			s := specs[j.i]
			args := []string{"-mutant", s.Name}
			if j.admit {
				args = append(args, "-admit-mutant-scripts")
			}
			r := conform(t, nil, args...)
			var failed []string
			note := ""
			for _, c := range r.report.Result.Contracts {
				switch c.Status {
				case contracts.StatusFail:
					failed = append(failed, c.ID)
				case contracts.StatusHarnessError:
					note = "harness error in " + c.ID
				}
			}
			killed := r.exit == 1 && contains(failed, s.Contract)
			mu.Lock()
			defer mu.Unlock()
			if j.admit {
				rows[j.i].behavior, rows[j.i].byBehav = failed, killed
			} else {
				rows[j.i].failed, rows[j.i].killed = failed, killed
			}
			if note != "" {
				rows[j.i].note += " " + note
			}
		}()
	}
	wg.Wait()
	sort.Slice(rows, func(i, j int) bool { return rows[i].target+rows[i].name < rows[j].target+rows[j].name })
	var b strings.Builder
	killed, lua, byBehav := 0, 0, 0
	yn := map[bool]string{true: "yes", false: "NO"}
	fmt.Fprintf(&b, "%-26s %-6s %-6s %-22s %s\n", "mutant", "target", "killed", "on behaviour (Lua)", "contracts that failed [with edited scripts admitted]")
	for _, r := range rows {
		if r.killed {
			killed++
		}
		beh := "- (Go defect)"
		if r.lua {
			lua++
			if r.byBehav {
				byBehav++
			}
			beh = yn[r.byBehav]
		}
		failed := strings.Join(r.failed, " ")
		if r.lua {
			failed += " [" + strings.Join(r.behavior, " ") + "]"
		}
		fmt.Fprintf(&b, "%-26s %-6s %-6s %-22s %s%s\n", r.name, r.target, yn[r.killed], beh, failed, r.note)
	}
	fmt.Fprintf(&b, "kill rate: %d/%d; Lua mutants killed on behaviour alone: %d/%d\n", killed, len(rows), byBehav, lua)
	t.Logf("mutant table:\n%s", b.String())
	for _, r := range rows {
		if !r.killed {
			t.Errorf("mutant %s survived its target %s (failed: %v%s)", r.name, r.target, r.failed, r.note)
		}
		if r.lua && !r.byBehav {
			t.Errorf("Lua mutant %s passes its target %s once its edited scripts are admitted: only the SHA1 check catches it (failed: %v)", r.name, r.target, r.behavior)
		}
	}
}
