package mutation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/echomq/kit/contracts"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestKeySurvivesDrift(t *testing.T) {
	a := Mutant{Port: PortNode, File: "ports/node/lib/bus.js", Mutator: "EqualityOperator", Line: 10, Was: "  if (a <  b) {", Now: "if (a <= b) {"}
	b := a
	b.Line, b.Was, b.Now = 42, "\tif (a < b) {", "  if (a <=  b) {"
	if a.Key() != b.Key() {
		t.Fatalf("a moved and re-indented line changes the key: %v vs %v", a.Key(), b.Key())
	}
	if got := a.Key().String(); got != "node ports/node/lib/bus.js EqualityOperator #0" {
		t.Errorf("key line %q", got)
	}
}

func TestNumberCountsEqualMutantsInSourceOrder(t *testing.T) {
	ms := []Mutant{
		{File: "f", Line: 9, Mutator: "m", Was: "x < y", Now: "x <= y"},
		{File: "f", Line: 3, Mutator: "m", Was: "x < y", Now: "x <= y"},
		{File: "f", Line: 5, Mutator: "m", Was: "x < y", Now: "x >= y"},
		{File: "g", Line: 1, Mutator: "m", Was: "x < y", Now: "x <= y"},
	}
	Number(ms)
	want := map[int]int{3: 1, 9: 2, 5: 1}
	for _, m := range ms {
		if m.File == "f" && m.Occurrence != want[m.Line] {
			t.Errorf("line %d: occurrence %d, want %d", m.Line, m.Occurrence, want[m.Line])
		}
		if m.File == "g" && m.Occurrence != 1 {
			t.Errorf("another file's mutant is #%d, want #1", m.Occurrence)
		}
	}
}

func mutants(n int) []Mutant {
	var ms []Mutant
	for i := range n {
		ms = append(ms, Mutant{Port: PortBundle, File: "lua/x.lua", Mutator: "num", Was: "n", Now: strings.Repeat("m", i+1), Occurrence: 1, ID: strings.Repeat("i", i+1)})
	}
	return ms
}

func TestSampleIsReproducibleAndOrderFree(t *testing.T) {
	all := mutants(50)
	rev := append([]Mutant(nil), all...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	a, b := Sample(all, 7, 3), Sample(rev, 7, 3)
	if len(a) != 7 {
		t.Fatalf("sample of %d, want 7", len(a))
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			t.Fatalf("the same seed over the same mutants listed in another order gives another sample: %v vs %v", ids(a), ids(b))
		}
	}
	if c := Sample(all, 7, 4); strings.Join(ids(c), ",") == strings.Join(ids(a), ",") {
		t.Errorf("seeds 3 and 4 draw the same sample %v", ids(a))
	}
	if len(Sample(all, 0, 3)) != 50 || len(Sample(all, 80, 3)) != 50 {
		t.Error("no sample, or one past the count, is not every mutant")
	}
}

func ids(ms []Mutant) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func TestTriageFile(t *testing.T) {
	src := `# comment
mutant node ports/node/lib/bus.js ConditionalExpression #2
  was: if (x)   { y(); }
  now: if (true) { y(); }
  equivalent: y is idempotent

mutant reference reference/bus/bus.go CONDITIONALS_BOUNDARY #1
  was: if n > 0 {
  now: if n >= 0 {
  harness: C05/order/x checks n = 0

mutant bundle lua/reap.lua num #1
  was: local n = 1
  now: local n = 2
  gap: no clause reaps twice yet
`
	tr, err := ParseTriage(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	k := Mutant{Port: PortNode, File: "ports/node/lib/bus.js", Mutator: "ConditionalExpression", Occurrence: 2, Was: "if (x) { y(); }", Now: "if (true) { y(); }"}.Key()
	if e, ok := tr[k]; !ok || !e.Equivalent || e.Reason != "y is idempotent" {
		t.Fatalf("entry %v not read: %v", k, tr)
	}
	if len(tr) != 3 {
		t.Errorf("%d entries, want 3", len(tr))
	}
	gap := Mutant{Port: PortBundle, File: "lua/reap.lua", Mutator: "num", Occurrence: 1, Was: "local n = 1", Now: "local n = 2"}.Key()
	if e := tr[gap]; !e.Gap || e.Equivalent || e.Reason != "no clause reaps twice yet" {
		t.Errorf("gap entry read as %+v", e)
	}
	for name, bad := range map[string]string{
		"no verdict":   "mutant node f m #1\n  was: a\n  now: b\n",
		"two verdicts": "mutant node f m #1\n  was: a\n  now: b\n  equivalent: x\n  harness: y\n",
		"gap and more": "mutant node f m #1\n  was: a\n  now: b\n  gap: x\n  harness: y\n",
		"no now":       "mutant node f m #1\n  was: a\n  equivalent: x\n",
		"bad key":      "mutant node f m 1\n",
		"duplicate":    "mutant node f m #1\n was: a\n now: b\n equivalent: x\nmutant node f m #1\n was: a\n now: b\n equivalent: x\n",
		"stray field":  "was: a\n",
	} {
		if _, err := ParseTriage(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLuaTokensSkipCommentsAndStrings(t *testing.T) {
	src := "-- a < b\nlocal s = 'x < y' .. \"a == b\" --[[ c > d ]]\nif a < b then end\n"
	var ops []string
	for _, tk := range luaTokens(src) {
		if tk.Kind == 'o' {
			ops = append(ops, tk.Text)
		}
	}
	if strings.Join(ops, " ") != "<" {
		t.Errorf("operators outside comments and strings: %v, want [<]", ops)
	}
}

func TestLuaChanges(t *testing.T) {
	src := "local n = -1 + x\nredis.call('DEL', KEYS[2])\nlocal y = redis.call('GET', k)\nif not a and n >= 16 then end\n"
	var got []string
	for _, c := range luaChanges(src) {
		got = append(got, c.Op+":"+src[c.Off:c.Off+c.Len]+">"+c.New)
	}
	want := []string{
		"num:1>2", "num:1>0", // unary minus is no arith mutant
		"arith:+>-",
		"call-drop:redis.call('DEL', KEYS[2])>", // the subscript 2 is not a num mutant; an assigned call is not dropped
		"not-drop:not >", "logic:and>or", "rel-boundary:>=>>", "rel-negation:>=><", "num:16>17", "num:16>15",
	}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("changes:\n got %v\nwant %v", got, want)
	}
}

func TestBundleMutantApplies(t *testing.T) {
	root := t.TempDir()
	src := "-- header\nlocal a = 1\nif a < 2 then\n  redis.call('DEL', KEYS[1])\nend\n"
	if err := os.MkdirAll(filepath.Join(root, "lua"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "lua/x.lua"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := BundleMutants(filepath.Join(root, "lua"))
	if err != nil {
		t.Fatal(err)
	}
	var drop Mutant
	for _, m := range ms {
		if m.Mutator == "call-drop" {
			drop = m
		}
	}
	if drop.Line != 4 || drop.File != "lua/x.lua" {
		t.Fatalf("call-drop mutant %+v", drop)
	}
	out := t.TempDir()
	if err := applyBundle(root, drop, out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(out, "x.lua"))
	if want := "-- header\nlocal a = 1\nif a < 2 then\n  \nend\n"; string(b) != want {
		t.Errorf("edited script %q, want %q", b, want)
	}
	d, err := diff(root, drop)
	if err != nil || !strings.Contains(d, "-  redis.call('DEL', KEYS[1])") {
		t.Errorf("diff %q (%v)", d, err)
	}
}

func TestGoProfileAndBlocks(t *testing.T) {
	prof := "mode: set\ngithub.com/echomq/kit/reference/bus/bus.go:10.5,12.3 2 1\ngithub.com/echomq/kit/reference/bus/bus.go:20.1,20.9 1 0\n"
	var files []string
	var blocks []goBlock
	err := parseGoProfile(strings.NewReader(prof), "github.com/echomq/kit", func(f string, b goBlock, count int) {
		files, blocks = append(files, f), append(blocks, b)
	})
	if err != nil || len(blocks) != 2 || files[0] != "reference/bus/bus.go" {
		t.Fatalf("parsed %v %v (%v)", files, blocks, err)
	}
	b := blocks[0]
	for _, c := range []struct {
		line, col int
		in        bool
	}{{10, 5, true}, {10, 4, false}, {11, 1, true}, {12, 3, true}, {12, 4, false}, {9, 7, false}} {
		if b.contains(c.line, c.col) != c.in {
			t.Errorf("block %v holds %d:%d: %v, want %v", b, c.line, c.col, !c.in, c.in)
		}
	}
}

func TestGoMutantLine(t *testing.T) {
	g, err := parseGo("p/x.go", []byte("package p\n\nfunc f(a, b, c bool, x, y int) bool {\n\treturn a || b || x <= y\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		typ  string
		col  int
		want string
	}{
		{"CONDITIONALS_BOUNDARY", 21, "\treturn a || b || x < y"},
		{"INVERT_LOGICAL", 16, "\treturn (a || b) && x <= y"}, // as gremlins prints it
		{"INVERT_LOGICAL", 11, "\treturn a && b || x <= y"},
	} {
		m, err := g.mutant(c.typ, 4, c.col)
		if err != nil || m.Now != c.want {
			t.Errorf("%s at 4:%d: %q (%v), want %q", c.typ, c.col, m.Now, err, c.want)
		}
	}
	if _, err := g.mutant("INVERT_LOGICAL", 4, 2); err == nil {
		t.Error("a mutant placed on no token of its type is accepted")
	}
}

// TestShimIdentifiesGremlinsWrite writes a mutant as gremlins does (go/printer's defaults, which
// realign what gofmt aligns) and has the shim find it.
func TestShimIdentifiesGremlinsWrite(t *testing.T) {
	root, wd := t.TempDir(), t.TempDir()
	src := "package p\n\ntype T struct {\n\tA    int\n\tLong int\n}\n\nfunc f(a, b int) bool {\n\treturn a < b // c\n}\n"
	for _, d := range []string{root, wd} {
		if err := os.MkdirAll(filepath.Join(d, "p"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "p/x.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sums, err := targetSumsOf(root, []string{"p"})
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "x.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(file, func(n ast.Node) bool {
		if be, ok := n.(*ast.BinaryExpr); ok && be.Op == token.LSS {
			be.Op = token.LEQ
		}
		return true
	})
	var buf bytes.Buffer
	if err := printer.Fprint(&buf, fset, file); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "p/x.go"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := parseGo("p/x.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.mutant("CONDITIONALS_BOUNDARY", 9, 11)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := g.mutant("CONDITIONALS_NEGATION", 9, 11)
	p := &Plan{Root: root, Targets: sums, Mutants: map[string]Mutant{m.ID: m, other.ID: other}}
	got, ok, err := p.identify(wd)
	if err != nil || !ok || got.ID != m.ID {
		t.Fatalf("identified %v %v %v, want %s", got.ID, ok, err, m.ID)
	}
	delete(p.Mutants, m.ID)
	if _, ok, err := p.identify(wd); ok || err != nil {
		t.Errorf("a mutant out of the sample is identified (%v, %v)", ok, err)
	}
}

func TestV8InnermostRange(t *testing.T) {
	ranges := []v8Range{{0, 100, 1}, {10, 50, 0}, {20, 30, 2}}
	for off, want := range map[int]bool{5: true, 15: false, 25: true, 40: false, 60: true, 100: false} {
		if ran(ranges, off) != want {
			t.Errorf("offset %d ran: %v, want %v", off, !want, want)
		}
	}
	if s := utf16LineStarts("a→b\n😀c\nd"); s[1] != 4 || s[2] != 8 {
		t.Errorf("UTF-16 line starts %v, want [0 4 8]", s)
	}
}

func TestNodeMutantUTF16Columns(t *testing.T) {
	lines := []string{"const s = '→' + x;", "if (a) {", "  b();", "}"}
	m, err := nodeMutant("ports/node/x.js", lines, strykerMutant{ID: "7", MutatorName: "ArithmeticOperator", Replacement: "'→' - x",
		Location: strykerLocation{Start: strykerPos{1, 11}, End: strykerPos{1, 18}}})
	if err != nil || m.Now != "const s = '→' - x;" {
		t.Fatalf("%q %v", m.Now, err)
	}
	m, err = nodeMutant("ports/node/x.js", []string{"return !c && w >= 0 && n < v;"}, strykerMutant{ID: "9", MutatorName: "LogicalOperator", Replacement: "!c || w >= 0",
		Location: strykerLocation{Start: strykerPos{1, 8}, End: strykerPos{1, 20}}})
	if err != nil || m.Now != "return (!c || w >= 0) && n < v;" {
		t.Fatalf("a replaced operand keeps its place in the tree: %q %v", m.Now, err)
	}
	m, err = nodeMutant("ports/node/x.js", lines, strykerMutant{ID: "8", MutatorName: "BlockStatement", Replacement: "{}",
		Location: strykerLocation{Start: strykerPos{2, 8}, End: strykerPos{4, 2}}})
	if err != nil || m.Now != "if (a) {}" || m.EndLine != 4 {
		t.Fatalf("%q %v", m.Now, err)
	}
}

func TestIncrementalMarksAllButTheCoveredSample(t *testing.T) {
	raw := `{"schemaVersion":"2","files":{"ports/node/x.js":{"language":"javascript","source":"a\n","mutants":[
	 {"id":"1","mutatorName":"M","replacement":"b","location":{"start":{"line":1,"column":1},"end":{"line":1,"column":2}},"status":"Survived","extra":7},
	 {"id":"2","mutatorName":"M","replacement":"c","location":{"start":{"line":1,"column":1},"end":{"line":1,"column":2}},"status":"Survived"},
	 {"id":"3","mutatorName":"M","replacement":"d","location":{"start":{"line":1,"column":1},"end":{"line":1,"column":2}},"status":"Survived"}]}}}`
	path := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, files, err := readStryker(path)
	if err != nil {
		t.Fatal(err)
	}
	sample := map[string]Mutant{"1": {Covered: false}, "2": {Covered: true}}
	out := filepath.Join(t.TempDir(), "inc.json")
	if err := incremental(rep, files, sample, 5, 2, out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	var back struct {
		SchemaVersion string `json:"schemaVersion"`
		Files         map[string]struct {
			Mutants []map[string]any `json:"mutants"`
		} `json:"files"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, m := range back.Files["ports/node/x.js"].Mutants {
		got[m["id"].(string)] = m["status"]
		if m["id"] == "1" && m["extra"] != float64(7) {
			t.Errorf("a field Stryker wrote is lost: %v", m)
		}
	}
	if back.SchemaVersion != "2" || len(got) != 2 || got["1"] != "NoCoverage" || got["3"] != "Ignored" {
		t.Errorf("incremental file: %v (schema %q)", got, back.SchemaVersion)
	}
}

func TestScoreLine(t *testing.T) {
	r := Result{Port: PortNode, Sample: []Mutant{{ID: "a", Was: "a"}, {ID: "b", Was: "b"}, {ID: "c", Was: "c"}, {ID: "d", Was: "d"}, {ID: "e", Was: "e"}},
		Verdicts: map[string]Verdict{"a": {Status: Killed}, "b": {Status: Timeout}, "c": {Status: Survived}, "d": {Status: NoCoverage}, "e": {Status: Survived}}}
	tr := Triages{r.Sample[2].Key(): {Equivalent: true}}
	s := Tally(r, tr)
	re := regexp.MustCompile(`^MUTATION (\S+) killed (\d+)/(\d+) \((\d+\.\d) %\) equivalent (\d+) untriaged (\d+)$`)
	if got := s.Line(); !re.MatchString(got) || got != "MUTATION node killed 2/4 (50.0 %) equivalent 1 untriaged 2" {
		t.Errorf("line %q", got)
	}
}

// A killed harness entry is the harness at work; a killed equivalent entry is a wrong reason; a
// surviving harness entry is a claim that no longer holds, and counts untriaged.
func TestTallyJudgesTheTriage(t *testing.T) {
	r := Result{Port: PortNode, Sample: []Mutant{{ID: "a", Was: "a"}, {ID: "b", Was: "b"}, {ID: "c", Was: "c"}, {ID: "d", Was: "d"}},
		Verdicts: map[string]Verdict{"a": {Status: Killed}, "b": {Status: Killed}, "c": {Status: Survived}, "d": {Status: Survived}}}
	tr := Triages{r.Sample[0].Key(): {}, r.Sample[1].Key(): {Equivalent: true}, r.Sample[2].Key(): {}, r.Sample[3].Key(): {Gap: true}}
	s := Tally(r, tr)
	if len(s.Stale) != 1 || s.Stale[0] != r.Sample[1].Key() || len(s.Unkept) != 1 || s.Unkept[0] != r.Sample[2].Key() {
		t.Errorf("stale %v, unkept %v", s.Stale, s.Unkept)
	}
	if len(s.Gaps) != 1 || s.Gaps[0] != r.Sample[3].Key() {
		t.Errorf("gaps %v", s.Gaps)
	}
	if got := s.Line(); got != "MUTATION node killed 2/4 (50.0 %) equivalent 0 untriaged 2" {
		t.Errorf("line %q", got)
	}
}

func TestAnyOfMatchesExactlyTheClauses(t *testing.T) {
	re := regexp.MustCompile(contracts.IDPattern([]string{"C05/order/a.b", "C09/retry/x"}))
	for id, want := range map[string]bool{"C05/order/a.b": true, "C05/order/aXb": false, "C09/retry/x": true, "C09/retry/xy": false} {
		if re.MatchString(id) != want {
			t.Errorf("%s: %v", id, !want)
		}
	}
}

func TestShimFlagValue(t *testing.T) {
	if v := flagValue([]string{"test", "-cover", "-coverprofile", "/tmp/c", "./..."}, "-coverprofile"); v != "/tmp/c" {
		t.Errorf("%q", v)
	}
	if v := flagValue([]string{"test", "-coverprofile=/tmp/d"}, "-coverprofile"); v != "/tmp/d" {
		t.Errorf("%q", v)
	}
	if v := flagValue([]string{"test", "-timeout", "3s", "-failfast", "x"}, "-coverprofile"); v != "" {
		t.Errorf("%q", v)
	}
}

func TestProfileUnits(t *testing.T) {
	p := &Plan{Clauses: []string{"C01/fence/a", "C01/fence/b", "C02/mint/c"}}
	names, groups := p.units(true)
	if strings.Join(names, ",") != "C01,C02" || len(groups[0]) != 2 || groups[1][0] != "C02/mint/c" {
		t.Errorf("by contract: %v %v", names, groups)
	}
	if names, _ := p.units(false); len(names) != 3 {
		t.Errorf("by clause: %v", names)
	}
	runs := []ClauseRun{{Clauses: []string{"a1", "a2"}, Took: 3}, {Clauses: []string{"b"}, Took: 1}, {Clauses: []string{"c"}, Took: 2}}
	if got := strings.Join(cheapestFirst(runs, []int{0, 2, 1}), ","); got != "b,c,a1,a2" {
		t.Errorf("cheapest first: %s", got)
	}
}

func TestChangedTokenIgnoresLayoutAndParentheses(t *testing.T) {
	for _, c := range []struct {
		was, now   string
		col        int
		from, into string
	}{
		{"\tif a < 1 || b < 0 || c > m {", "\tif (a < 1 || b < 0) && c > m {", 20, "||", "&&"},
		{"\t\t{lua.Enqueue, &s.enqueue}, // x", "\t\t{lua.Enqueue,\t|s.enqueue}, // y", 17, "&", "|"},
		{"\t\tbreak", "\t\tcontinue", 3, "break", "continue"},
	} {
		col, from, into, ok := changedToken(c.was, c.now)
		if !ok || col != c.col || from != c.from || into != c.into {
			t.Errorf("%q → %q: column %d %q→%q (%v), want %d %q→%q", c.was, c.now, col, from, into, ok, c.col, c.from, c.into)
		}
	}
	if _, _, _, ok := changedToken("a + b - c", "a - b + c"); ok {
		t.Error("two changed tokens are taken for one")
	}
}

// A case expression lies in no coverage block (a block starts after its clause's colon): it
// takes the clauses of the block that holds its switch's opening brace, never none.
func TestCaseExpressionsTakeTheirSwitchsBlock(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nfunc f(a, b bool) int {\n\tswitch {\n\tcase a:\n\t\treturn 1\n\tcase a != b:\n\t\treturn 2\n\t}\n\treturn 0\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// As go test -cover writes it: the function's block ends at the switch's brace (4.9);
	// the clause bodies start after their colons.
	cov := goCases{root: dir, files: map[string]*goFile{}, goCoverage: goCoverage{"p.go": {
		{SL: 3, SC: 23, EL: 4, EC: 9, Clauses: []int{0, 2}},
		{SL: 5, SC: 9, EL: 6, EC: 11, Clauses: []int{0}},
		{SL: 7, SC: 14, EL: 8, EC: 11},
	}}}
	for _, c := range []struct {
		line, col int
		want      string
	}{
		{7, 9, "[0 2]"}, // the != of case a != b
		{5, 7, "[0 2]"}, // case a
		{6, 3, "[0]"},   // inside a clause body: its own block
		{10, 2, "[]"},   // after the switch, in no block
	} {
		if got := fmt.Sprint(cov.Clauses(Mutant{File: "p.go", Line: c.line, Col: c.col})); got != c.want {
			t.Errorf("%d:%d: clauses %s, want %s", c.line, c.col, got, c.want)
		}
	}
}

// A package-level const or var lies in no coverage block (it is evaluated when its package
// loads): it takes the clauses that ran any block of its package, never none.
func TestPackageDeclarationsTakeTheirPackagesClauses(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "package p\n\nconst Max = 1<<10 - 1\n\nvar limit = Max + 1\n\nfunc f() int {\n\treturn limit\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "p", "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cov := goCases{root: dir, files: map[string]*goFile{}, goCoverage: goCoverage{
		"p/p.go":   {{SL: 7, SC: 14, EL: 9, EC: 2, Clauses: []int{1}}},
		"p/q.go":   {{SL: 3, SC: 1, EL: 4, EC: 2, Clauses: []int{3}}},
		"other.go": {{SL: 1, SC: 1, EL: 2, EC: 2, Clauses: []int{5}}},
	}}
	for _, c := range []struct {
		line, col int
		want      string
	}{
		{3, 20, "[1 3]"}, // the - of const Max: every clause that ran package p
		{5, 18, "[1 3]"}, // the + of var limit
		{8, 2, "[1]"},    // inside f: its own block
		{6, 1, "[]"},     // between declarations, in no block
	} {
		if got := fmt.Sprint(cov.Clauses(Mutant{File: "p/p.go", Line: c.line, Col: c.col})); got != c.want {
			t.Errorf("%d:%d: clauses %s, want %s", c.line, c.col, got, c.want)
		}
	}
}

// TestClusterArgs: a cluster stage gives the judge the set's cluster and, in place of -valkey
// (which excludes -cluster), the set's Valkey as the standalone one a cluster run's C01 presents.
func TestClusterArgs(t *testing.T) {
	set := ServerSet{"-valkey": "127.0.0.1:1", clusterKey: "127.0.0.1:2,127.0.0.1:3", "-wrong-kind": "127.0.0.1:4"}
	got := strings.Join(set.clusterArgs(), " ")
	if slices.Contains(set.clusterArgs(), "-valkey") || !strings.Contains(got, "-cluster 127.0.0.1:2,127.0.0.1:3") ||
		!strings.Contains(got, "-standalone-valkey 127.0.0.1:1") || !strings.Contains(got, "-wrong-kind 127.0.0.1:4") {
		t.Fatalf("clusterArgs: %s", got)
	}
	if a := strings.Join(set.Args(), " "); strings.Contains(a, clusterKey) || !strings.Contains(a, "-valkey 127.0.0.1:1") {
		t.Fatalf("Args: %s", a)
	}
}

// TestTwinsAreTheSameProgram: two mutators that print the same line at the same place are one
// program, judged once for both (gremlins runs each, and either run may come first).
func TestTwinsAreTheSameProgram(t *testing.T) {
	a := Mutant{ID: "r.go:136:11:ARITHMETIC_BASE", File: "r.go", Line: 136, Col: 11, Now: "if n == +1 {"}
	b := Mutant{ID: "r.go:136:11:INVERT_NEGATIVES", File: "r.go", Line: 136, Col: 11, Now: "if  n == +1 {"}
	c := Mutant{ID: "r.go:136:8:CONDITIONALS_NEGATION", File: "r.go", Line: 136, Col: 8, Now: "if n != -1 {"}
	p := &Plan{Mutants: map[string]Mutant{a.ID: a, b.ID: b, c.ID: c}}
	if tw := p.twins(a); len(tw) != 1 || tw[0].ID != b.ID {
		t.Fatalf("twins of %s: %v", a.ID, tw)
	}
	if tw := p.twins(c); len(tw) != 0 {
		t.Fatalf("twins of %s: %v", c.ID, tw)
	}
}
