package archtest

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// ARCHITECTURE.md is held to the code both ways: its arrows block draws every package of the
// module with the kit packages it imports (non-test imports), an arrow drawn that the code does
// not have fails and so does an import that is not drawn; its package table puts every package
// in a layer, and no arrow points from a layer to one below it; every test it names exists.

const doc = "../../ARCHITECTURE.md"

// pkgImports is every package of the module and the module's packages it imports directly.
func pkgImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, mod)
		got[name] = []string{}
		for _, i := range p.Imports {
			if strings.HasPrefix(i, mod) {
				got[name] = append(got[name], strings.TrimPrefix(i, mod))
			}
		}
		slices.Sort(got[name])
	}
	return got
}

// drawn reads the ```arrows block: "pkg ──► a, b" or a lone "pkg" (it imports nothing of the kit).
func drawn(t *testing.T, text string) map[string][]string {
	t.Helper()
	_, block, ok := strings.Cut(text, "```arrows\n")
	if !ok {
		t.Fatalf("%s has no ```arrows block", doc)
	}
	block, _, _ = strings.Cut(block, "```")
	out := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		from, to, _ := strings.Cut(line, "──►")
		from = strings.TrimSpace(from)
		if _, dup := out[from]; dup {
			t.Errorf("the arrows block draws %s twice", from)
		}
		out[from] = []string{}
		for _, d := range strings.Split(to, ",") {
			if d = strings.TrimSpace(d); d != "" {
				out[from] = append(out[from], d)
			}
		}
		slices.Sort(out[from])
	}
	return out
}

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// line is the arrows block's line for pkg as the code has it.
func line(pkg string, deps []string) string {
	if len(deps) == 0 {
		return pkg
	}
	return pkg + " ──► " + strings.Join(deps, ", ")
}

func TestDiagramIsTheCode(t *testing.T) {
	code, arrows := pkgImports(t), drawn(t, readDoc(t))
	for _, pkg := range slices.Sorted(maps.Keys(code)) {
		d, ok := arrows[pkg]
		if !ok {
			t.Errorf("ARCHITECTURE.md does not draw package %s; add to the arrows block:\n  %s", pkg, line(pkg, code[pkg]))
			continue
		}
		for _, dep := range code[pkg] {
			if !slices.Contains(d, dep) {
				t.Errorf("%s imports %s, an arrow ARCHITECTURE.md does not draw; its line is:\n  %s", pkg, dep, line(pkg, code[pkg]))
			}
		}
		for _, dep := range d {
			if !slices.Contains(code[pkg], dep) {
				t.Errorf("ARCHITECTURE.md draws %s ──► %s, which the code does not import; its line is:\n  %s", pkg, dep, line(pkg, code[pkg]))
			}
		}
	}
	for pkg := range arrows {
		if _, ok := code[pkg]; !ok {
			t.Errorf("ARCHITECTURE.md draws %s, which is no package of the module", pkg)
		}
	}
}

// layers reads the package table: the layer of every package it names, in the table's order.
func layers(t *testing.T, text string) (map[string]string, []string) {
	t.Helper()
	tick := regexp.MustCompile("`([^`]+)`")
	of, order := map[string]string{}, []string{}
	for _, l := range strings.Split(text, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 4 || !strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "| layer") {
			continue
		}
		layer := strings.TrimSpace(cells[1])
		if !slices.Contains(order, layer) {
			order = append(order, layer)
		}
		for _, m := range tick.FindAllStringSubmatch(cells[2], -1) {
			name := strings.TrimSuffix(m[1], "/")
			if prev, ok := of[name]; ok && prev != layer {
				t.Errorf("the package table puts %s in two layers (%s, %s)", name, prev, layer)
			}
			of[name] = layer
		}
	}
	return of, order
}

func TestLayersPointDown(t *testing.T) {
	code := pkgImports(t)
	of, order := layers(t, readDoc(t))
	rank := map[string]int{}
	for i, l := range order {
		rank[l] = i
	}
	for name := range of {
		if _, isPkg := code[name]; !isPkg {
			if _, err := os.Stat(filepath.Join("../..", name)); err != nil {
				t.Errorf("the package table names %s, which does not exist", name)
			}
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(code)) {
		l, ok := of[pkg]
		if !ok {
			t.Errorf("the package table of ARCHITECTURE.md has no row for %s", pkg)
			continue
		}
		for _, dep := range code[pkg] {
			if dl, ok := of[dep]; ok && rank[dl] > rank[l] {
				t.Errorf("%s (%s) imports %s (%s): the arrow points back up, to a layer listed after its own in the package table", pkg, l, dep, dl)
			}
		}
	}
}

// TestNamedTestsExist: every TestXxx ARCHITECTURE.md names is a test function of the module.
func TestNamedTestsExist(t *testing.T) {
	named := regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`).FindAllString(readDoc(t), -1)
	if len(named) == 0 {
		t.Fatal("ARCHITECTURE.md names no test: the checks it states are held by none")
	}
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != "../.." {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
				defined[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(named)
	for _, n := range slices.Compact(named) {
		if !defined[n] {
			t.Errorf("ARCHITECTURE.md names %s, which no test file defines", n)
		}
	}
}
