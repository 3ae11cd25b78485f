package mutation

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/token"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Coverage answers which clauses of a profile execute a place in the source.
type Coverage interface {
	// Clauses are the indices (into the profile's runs) of the clauses that execute m's
	// change.
	Clauses(m Mutant) []int
}

// cover sets each mutant's Covered and Clauses from a profile.
func cover(ms []Mutant, runs []ClauseRun, c Coverage) {
	for i := range ms {
		idx := c.Clauses(ms[i])
		ms[i].Covered = len(idx) > 0
		ms[i].Clauses = cheapestFirst(runs, idx)
	}
}

// --- Go: the covdata an emq-port built with -cover writes, per clause ---

// goBlock is one block of a Go coverage profile and the clauses that ran it.
type goBlock struct {
	SL, SC, EL, EC, Stmts int
	Clauses               []int
}

// goCoverage is a profile's Go blocks by file (the path in the checkout).
type goCoverage map[string][]*goBlock

// readGoCoverage converts each run's covdata to the text format (go tool covdata textfmt) and
// merges the blocks a run executed. module is the module path the profile's files start with.
func readGoCoverage(ctx context.Context, goBin, module string, runs []ClauseRun) (goCoverage, error) {
	out := goCoverage{}
	index := map[string]*goBlock{}
	for i, r := range runs {
		if ents, _ := os.ReadDir(r.Dir); len(ents) == 0 {
			continue // no port process of this clause ended normally
		}
		text := filepath.Join(r.Dir, "..", "profile.txt")
		cmd := exec.CommandContext(ctx, goBin, "tool", "covdata", "textfmt", "-i="+r.Dir, "-o="+text)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go tool covdata textfmt %s: %v: %s", r.Dir, err, b)
		}
		f, err := os.Open(text)
		if err != nil {
			return nil, err
		}
		err = parseGoProfile(f, module, func(file string, b goBlock, count int) {
			if count == 0 {
				return
			}
			k := file + ":" + strconv.Itoa(b.SL) + "." + strconv.Itoa(b.SC) + "," + strconv.Itoa(b.EL) + "." + strconv.Itoa(b.EC)
			blk := index[k]
			if blk == nil {
				blk = &goBlock{SL: b.SL, SC: b.SC, EL: b.EL, EC: b.EC, Stmts: b.Stmts}
				index[k] = blk
				out[file] = append(out[file], blk)
			}
			if n := len(blk.Clauses); n == 0 || blk.Clauses[n-1] != i {
				blk.Clauses = append(blk.Clauses, i)
			}
		})
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", text, err)
		}
	}
	return out, nil
}

// parseGoProfile reads a coverage profile in the text format: a mode line, then
// "path/file.go:SL.SC,EL.EC stmts count" per block.
func parseGoProfile(r io.Reader, module string, block func(file string, b goBlock, count int)) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "mode:") {
			continue
		}
		var b goBlock
		var count int
		colon := strings.LastIndex(line, ":")
		if colon < 0 {
			return fmt.Errorf("bad profile line %q", line)
		}
		if _, err := fmt.Sscanf(line[colon+1:], "%d.%d,%d.%d %d %d", &b.SL, &b.SC, &b.EL, &b.EC, &b.Stmts, &count); err != nil {
			return fmt.Errorf("bad profile line %q: %w", line, err)
		}
		block(strings.TrimPrefix(line[:colon], module+"/"), b, count)
	}
	return sc.Err()
}

// contains says whether the block holds the position, as gremlins reads a profile: a line
// strictly inside the block, or the first line from the start column on, or the last line up
// to the end column.
func (b *goBlock) contains(line, col int) bool {
	switch {
	case line > b.SL && line < b.EL:
		return true
	case b.SL == b.EL:
		return line == b.SL && col >= b.SC && col <= b.EC
	case line == b.SL:
		return col >= b.SC
	case line == b.EL:
		return col <= b.EC
	}
	return false
}

// Clauses are the clauses that ran a block holding the mutant's token.
func (g goCoverage) Clauses(m Mutant) []int {
	set := map[int]bool{}
	for _, b := range g[m.File] {
		if b.contains(m.Line, m.Col) {
			for _, c := range b.Clauses {
				set[c] = true
			}
		}
	}
	return sorted(set)
}

// goCases is a goCoverage that also places a switch's case expressions and package-level
// declarations (packageClauses). Go's coverage blocks
// of a switch start after each case clause's colon, so the expressions the switch evaluates to
// pick a clause lie in no block, and a mutant of one (case m.lost != nil, turned ==) would be
// taken for code no clause runs and left unjudged. They run whenever the switch runs (up to the
// clause that matches): such a mutant gets the clauses that ran the block holding the switch's
// opening brace — a superset, which only orders its first clauses.
type goCases struct {
	goCoverage
	root  string
	files map[string]*goFile // parsed once each
}

func (g goCases) Clauses(m Mutant) []int {
	if idx := g.goCoverage.Clauses(m); len(idx) > 0 {
		return idx
	}
	f := g.files[m.File]
	if f == nil {
		src, err := os.ReadFile(filepath.Join(g.root, m.File))
		if err != nil {
			return nil
		}
		if f, err = parseGo(m.File, src); err != nil {
			return nil
		}
		g.files[m.File] = f
	}
	if line, col, ok := f.switchOf(m.Line, m.Col); ok {
		return g.goCoverage.Clauses(Mutant{File: m.File, Line: line, Col: col})
	}
	if f.declared(m.Line, m.Col) {
		return g.packageClauses(filepath.Dir(m.File))
	}
	return nil
}

// packageClauses are the clauses that ran any block of the package in dir. A package-level
// const or var is evaluated when its package loads and lies in no block, so a mutant of one
// (MaxWorker = 1<<WorkerBits + 1) would be taken for code no clause runs and left unjudged; it
// is in force wherever the package runs — a superset, which only orders its first clauses.
func (g goCases) packageClauses(dir string) []int {
	set := map[int]bool{}
	for file, blocks := range g.goCoverage {
		if filepath.Dir(file) != dir {
			continue
		}
		for _, b := range blocks {
			for _, c := range b.Clauses {
				set[c] = true
			}
		}
	}
	return sorted(set)
}

// declared says line:col lies in a package-level const or var declaration.
func (f *goFile) declared(line, col int) bool {
	tf := f.fset.File(f.ast.Pos())
	if line < 1 || line > tf.LineCount() {
		return false
	}
	pos := tf.LineStart(line) + token.Pos(col-1)
	for _, d := range f.ast.Decls {
		if g, ok := d.(*ast.GenDecl); ok && (g.Tok == token.CONST || g.Tok == token.VAR) && g.Pos() <= pos && pos < g.End() {
			return true
		}
	}
	return false
}

// switchOf is the place of the opening brace of the switch or select whose case expressions
// hold line:col, or false when no case expression holds it.
func (f *goFile) switchOf(line, col int) (int, int, bool) {
	tf := f.fset.File(f.ast.Pos())
	if line < 1 || line > tf.LineCount() {
		return 0, 0, false
	}
	pos := tf.LineStart(line) + token.Pos(col-1)
	var brace token.Pos
	ast.Inspect(f.ast, func(n ast.Node) bool {
		if n == nil || brace.IsValid() {
			return false
		}
		var body *ast.BlockStmt
		switch s := n.(type) {
		case *ast.SwitchStmt:
			body = s.Body
		case *ast.TypeSwitchStmt:
			body = s.Body
		case *ast.SelectStmt:
			body = s.Body
		default:
			return n.Pos() <= pos && pos < n.End()
		}
		for _, st := range body.List {
			head := st.Pos() // the case keyword, up to the colon
			var colon token.Pos
			switch c := st.(type) {
			case *ast.CaseClause:
				colon = c.Colon
			case *ast.CommClause:
				colon = c.Colon
			}
			if head <= pos && pos < colon {
				brace = body.Lbrace
				return false
			}
		}
		return n.Pos() <= pos && pos < n.End()
	})
	if !brace.IsValid() {
		return 0, 0, false
	}
	p := f.fset.Position(brace)
	return p.Line, p.Column, true
}

func sorted(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

// --- Node: the V8 block coverage NODE_V8_COVERAGE writes, per clause ---

// v8Range is a range of a V8 coverage dump: UTF-16 offsets and how often it ran.
type v8Range struct {
	Start int `json:"startOffset"`
	End   int `json:"endOffset"`
	Count int `json:"count"`
}

// v8Coverage holds, per clause, the ranges each port process of the clause dumped for each file
// (the path in the checkout): a range's count is only meaningful against the ranges of its own
// process.
type v8Coverage struct {
	runs  []map[string][][]v8Range
	lines map[string][]int // a file's line starts, in UTF-16 offsets
	root  string
}

// readV8Coverage reads the dumps of every run: the files under root, by their path from root.
func readV8Coverage(root string, runs []ClauseRun) (*v8Coverage, error) {
	c := &v8Coverage{lines: map[string][]int{}, root: root}
	for _, r := range runs {
		files := map[string][][]v8Range{}
		dumps, _ := filepath.Glob(filepath.Join(r.Dir, "coverage-*.json"))
		for _, d := range dumps {
			if err := readV8Dump(d, root, files); err != nil {
				return nil, err
			}
		}
		c.runs = append(c.runs, files)
	}
	return c, nil
}

func readV8Dump(path, root string, into map[string][][]v8Range) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var dump struct {
		Result []struct {
			URL       string `json:"url"`
			Functions []struct {
				Ranges []v8Range `json:"ranges"`
			} `json:"functions"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &dump); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range dump.Result {
		u, err := url.Parse(s.URL)
		if err != nil || u.Scheme != "file" {
			continue
		}
		rel, err := filepath.Rel(root, u.Path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		var ranges []v8Range
		for _, f := range s.Functions {
			ranges = append(ranges, f.Ranges...)
		}
		into[rel] = append(into[rel], ranges)
	}
	return nil
}

// offset is the UTF-16 offset of a 1-based line and a 0-based UTF-16 column of file.
func (c *v8Coverage) offset(file string, line, col int) (int, bool) {
	starts, ok := c.lines[file]
	if !ok {
		src, err := os.ReadFile(filepath.Join(c.root, file))
		if err != nil {
			return 0, false
		}
		starts = utf16LineStarts(string(src))
		c.lines[file] = starts
	}
	if line < 1 || line > len(starts) {
		return 0, false
	}
	return starts[line-1] + col, true
}

func utf16LineStarts(src string) []int {
	starts := []int{0}
	off := 0
	for _, r := range src {
		off += len(utf16.Encode([]rune{r}))
		if r == '\n' {
			starts = append(starts, off)
		}
	}
	return starts
}

// Clauses are the clauses in which the innermost range around the mutant's start ran.
func (c *v8Coverage) Clauses(m Mutant) []int {
	off, ok := c.offset(m.File, m.Line, m.Col-1)
	if !ok {
		return nil
	}
	set := map[int]bool{}
	for i, files := range c.runs {
		for _, ranges := range files[m.File] {
			if ran(ranges, off) {
				set[i] = true
				break
			}
		}
	}
	return sorted(set)
}

// ran says whether the innermost of a process's ranges around off ran (a later range of the
// same size is the inner one: V8 lists a function's blocks after it).
func ran(ranges []v8Range, off int) bool {
	best := -1
	for j, r := range ranges {
		if r.Start <= off && off < r.End && (best < 0 || r.End-r.Start <= ranges[best].End-ranges[best].Start) {
			best = j
		}
	}
	return best >= 0 && ranges[best].Count > 0
}

// --- The bundle: the scripts each clause ran (EVALSHA on the Valkey's MONITOR stream) ---

// scriptCoverage maps a script's SHA1 in the pristine bundle to the clauses that ran it.
type scriptCoverage struct {
	byFile map[string]string // lua/<name>.lua → SHA1
	runs   []ClauseRun
}

// Clauses are the clauses that ran the mutant's script.
func (s scriptCoverage) Clauses(m Mutant) []int {
	sha := s.byFile[m.File]
	set := map[int]bool{}
	for i, r := range s.runs {
		if r.Scripts[sha] {
			set[i] = true
		}
	}
	return sorted(set)
}

// bundleCoverage maps the scripts of the bundle folder dir to the runs that ran them.
func bundleCoverage(dir string, runs []ClauseRun) (scriptCoverage, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil {
		return scriptCoverage{}, err
	}
	c := scriptCoverage{byFile: map[string]string{}, runs: runs}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return c, err
		}
		sum := sha1.Sum(b)
		c.byFile["lua/"+filepath.Base(f)] = hex.EncodeToString(sum[:])
	}
	return c, nil
}
