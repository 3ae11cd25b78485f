package mutation

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Gremlins (github.com/go-gremlins/gremlins, pinned) makes the Go reference's mutants and runs
// them: for each it writes the mutated file into a copy of the module and runs `go test` in it.
// A `go` shim first on gremlins' PATH answers two invocations and passes every other to the
// real go: the coverage run (`go test -cover -coverprofile F ./...`) gets the profile the plan
// holds, and a mutant's `go test … -failfast PKG` builds the copy's emq-port and certifies it.
// Gremlins has no sampling: the profile the shim hands it holds one single-column block per
// sampled mutant that some clause executes, so gremlins runs exactly those (and any mutant of
// another type on the same token, which the shim answers at once as not sampled).

// GremlinsVersion is the version `make mutation` installs (ci/provision-gremlins.sh).
const GremlinsVersion = "v0.6.0"

// goMutators are gremlins' mutant types, all enabled (its defaults leave six off).
var goMutators = []string{"arithmetic-base", "conditionals-boundary", "conditionals-negation", "increment-decrement",
	"invert-assignments", "invert-bitwise", "invert-bwassign", "invert-logical", "invert-loopctrl", "invert-negatives",
	"remove-self-assignments"}

// goSwap is what each gremlins type makes of each token it mutates (gremlins' documented
// operators), to write a mutant's line before the tool has run it.
var goSwap = map[string]map[string]string{
	"ARITHMETIC_BASE":         {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*"},
	"CONDITIONALS_BOUNDARY":   {">": ">=", ">=": ">", "<": "<=", "<=": "<"},
	"CONDITIONALS_NEGATION":   {"==": "!=", "!=": "==", ">": "<=", ">=": "<", "<": ">=", "<=": ">"},
	"INCREMENT_DECREMENT":     {"++": "--", "--": "++"},
	"INVERT_ASSIGNMENTS":      {"+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "%=": "%="},
	"INVERT_BITWISE":          {"&": "|", "|": "&", "^": "&", "&^": "&", "<<": ">>", ">>": "<<"},
	"INVERT_BWASSIGN":         {"&=": "|=", "|=": "&=", "^=": "&=", "&^=": "&=", "<<=": ">>=", ">>=": "<<="},
	"INVERT_LOGICAL":          {"&&": "||", "||": "&&"},
	"INVERT_LOOPCTRL":         {"break": "continue", "continue": "break"},
	"INVERT_NEGATIVES":        {"-": "+"},
	"REMOVE_SELF_ASSIGNMENTS": {"+=": "=", "-=": "=", "*=": "=", "/=": "=", "%=": "=", "&=": "=", "|=": "=", "^=": "=", "&^=": "=", "<<=": "=", ">>=": "="},
}

// goTargets are the packages of the Go reference whose code a standalone certification of
// emq-port runs: the reference (its cluster router and slot map serve only cluster mode, which
// `make mutation` does not certify), the port server and the port's main.
var goTargets = []string{
	"reference/bus", "reference/connector", "reference/emqerr", "reference/fence", "reference/ids",
	"reference/keys", "reference/resp", "reference/wait", "internal/portserver", "cmd/emq-port",
}

// snapshot copies into dir the module files emq-port is built from (the files of every package
// of the module it depends on, with go.mod and go.sum): gremlins copies what it is given once
// per worker, and mutates nothing of the checkout. It returns the package folders copied.
func snapshot(ctx context.Context, goBin, root, dir string) ([]string, error) {
	cmd := exec.CommandContext(ctx, goBin, "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", "./cmd/emq-port")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []string
	for _, abs := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, filepath.ToSlash(rel))
		if err := copyFiles(abs, filepath.Join(dir, rel), "*"); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := copyFile(filepath.Join(root, f), filepath.Join(dir, f)); err != nil {
			return nil, err
		}
	}
	sort.Strings(pkgs)
	return pkgs, nil
}

// copyFiles copies the regular files of src (not its subfolders) whose names match pattern
// into dst.
func copyFiles(src, dst, pattern string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if ok, _ := filepath.Match(pattern, e.Name()); ok && e.Type().IsRegular() {
			if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// excludes are gremlins' --exclude-files patterns for the snapshot's packages that are not
// targets, and for reference/connector/monitor.go, a MONITOR client that only the kit's wire
// watch runs (contracts/internal/wire): emq-port never calls it, so no clause executes its code.
func excludes(pkgs []string) []string {
	target := map[string]bool{}
	for _, t := range goTargets {
		target[t] = true
	}
	out := []string{`^reference/connector/monitor\.go$`}
	for _, p := range pkgs {
		if !target[p] {
			out = append(out, "^"+regexp.QuoteMeta(p)+"/[^/]+$")
		}
	}
	return out
}

// targetSums are the SHA-256 of every Go source gremlins may mutate, by path.
func targetSums(dir string) (map[string]string, error) { return targetSumsOf(dir, goTargets) }

// targetSumsOf are the SHA-256 of the Go sources (tests aside) of the package folders pkgs.
func targetSumsOf(dir string, pkgs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, pkg := range pkgs {
		files, err := filepath.Glob(filepath.Join(dir, pkg, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256(b)
			out[filepath.ToSlash(filepath.Join(pkg, filepath.Base(f)))] = hex.EncodeToString(sum[:])
		}
	}
	return out, nil
}

// gremlinsArgs are the flags of an unleash over the snapshot's targets.
func gremlinsArgs(pkgs []string, extra ...string) []string {
	args := []string{"unleash"}
	for _, m := range goMutators {
		args = append(args, "--"+m)
	}
	for _, x := range excludes(pkgs) {
		args = append(args, "--exclude-files", x)
	}
	return append(args, extra...)
}

// runGremlins runs gremlins in the snapshot with the shim first on PATH; its console goes to
// log.
func runGremlins(ctx context.Context, bin, snap, shimDir, planDir string, args []string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = snap
	cmd.Env = append(os.Environ(), "PATH="+shimDir+string(os.PathListSeparator)+os.Getenv("PATH"), PlanEnv+"="+planDir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("gremlins %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// gremlinsOutput is the part of gremlins' -o file a listing reads.
type gremlinsOutput struct {
	Files []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

// goMutants reads a gremlins listing (a --dry-run's -o file) into mutants, their lines read
// from the snapshot.
func goMutants(listing, snap string) ([]Mutant, error) {
	b, err := os.ReadFile(listing)
	if err != nil {
		return nil, err
	}
	var out gremlinsOutput
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", listing, err)
	}
	var ms []Mutant
	for _, f := range out.Files {
		src, err := os.ReadFile(filepath.Join(snap, f.Name))
		if err != nil {
			return nil, err
		}
		gf, err := parseGo(f.Name, src)
		if err != nil {
			return nil, err
		}
		for _, mu := range f.Mutations {
			m, err := gf.mutant(mu.Type, mu.Line, mu.Column)
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
	}
	Number(ms)
	return ms, nil
}

// goFile is a Go source parsed once for its mutants' lines.
type goFile struct {
	name  string
	lines []string
	fset  *token.FileSet
	ast   *ast.File
}

func parseGo(name string, src []byte) (*goFile, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	return &goFile{name: name, lines: strings.Split(string(src), "\n"), fset: fset, ast: f}, nil
}

// mutant is gremlins' mutant of type typ at line:col. Its Now is the line as gremlins writes it:
// the token swapped in the syntax tree and the file printed again, which adds the parentheses
// the tree needs (a || b || c, its second || turned &&, reads (a || b) && c).
func (g *goFile) mutant(typ string, line, col int) (Mutant, error) {
	if line < 1 || line > len(g.lines) || col < 1 || col > len(g.lines[line-1]) {
		return Mutant{}, fmt.Errorf("gremlins places a mutant at %s:%d:%d, outside the file", g.name, line, col)
	}
	was := g.lines[line-1]
	tok, now := "", ""
	for old, repl := range goSwap[typ] {
		if strings.HasPrefix(was[col-1:], old) && len(old) > len(tok) {
			tok, now = old, repl
		}
	}
	if tok == "" {
		return Mutant{}, fmt.Errorf("gremlins' %s at %s:%d:%d: no token it mutates there (%q)", typ, g.name, line, col, was)
	}
	m := Mutant{Port: PortReference, ID: fmt.Sprintf("%s:%d:%d:%s", g.name, line, col, typ), File: g.name, Line: line, Col: col,
		EndLine: line, EndCol: col + len(tok), Mutator: typ, Was: was, Now: was[:col-1] + now + was[col-1+len(tok):]}
	if printed, ok := g.printed(line, col, now); ok {
		m.Now = printed
	}
	return m, nil
}

// printed is line of the file printed with the token at line:col turned into repl, or false
// when no operator of the tree sits there.
func (g *goFile) printed(line, col int, repl string) (string, bool) {
	var at *token.Token
	ast.Inspect(g.ast, func(n ast.Node) bool {
		var pos token.Pos
		var tp *token.Token
		switch x := n.(type) {
		case *ast.BinaryExpr:
			pos, tp = x.OpPos, &x.Op
		case *ast.UnaryExpr:
			pos, tp = x.OpPos, &x.Op
		case *ast.AssignStmt:
			pos, tp = x.TokPos, &x.Tok
		case *ast.IncDecStmt:
			pos, tp = x.TokPos, &x.Tok
		case *ast.BranchStmt:
			pos, tp = x.TokPos, &x.Tok
		default:
			return true
		}
		if p := g.fset.Position(pos); p.Line == line && p.Column == col {
			at = tp
		}
		return at == nil
	})
	swap, ok := tokenOf[repl]
	if at == nil || !ok {
		return "", false
	}
	orig := *at
	*at = swap
	var b bytes.Buffer
	err := (&printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}).Fprint(&b, g.fset, g.ast)
	*at = orig
	lines := strings.Split(b.String(), "\n")
	if err != nil || line > len(lines) {
		return "", false
	}
	return lines[line-1], true
}

// tokenOf maps an operator's or keyword's text to its token.
var tokenOf = func() map[string]token.Token {
	m := map[string]token.Token{}
	for t := token.ILLEGAL; t <= token.TILDE; t++ {
		m[t.String()] = t
	}
	return m
}()

func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}

// selectionProfile is the coverage profile the shim hands gremlins for a run: one block of a
// single column at each sampled mutant that some clause executes (every one, with a cluster
// stage: see Plan.certify).
func selectionProfile(module string, ms []Mutant, all bool) string {
	var b strings.Builder
	b.WriteString("mode: set\n")
	for _, m := range ms {
		if m.Covered || all {
			fmt.Fprintf(&b, "%s/%s:%d.%d,%d.%d 1 1\n", module, m.File, m.Line, m.Col, m.Line, m.Col)
		}
	}
	return b.String()
}

// markUnbuildable records as NotViable each sampled mutant no clause executes that does not
// build (gremlins' string + turned -, say): the shim finds that out for the mutants it runs,
// and one that is not run is still only a mutant if it builds. Each is built in the snapshot,
// its line put back after.
func (p *Plan) markUnbuildable(ctx context.Context, snap string, sample []Mutant) error {
	for _, m := range sample {
		if m.Covered || p.Cluster { // the shim builds it (a cluster stage runs it too)
			continue
		}
		path := filepath.Join(snap, m.File)
		orig, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.SplitAfter(string(orig), "\n")
		mutated := strings.Join(lines[:m.Line-1], "") + m.Now + "\n" + strings.Join(lines[m.Line:], "")
		if err := os.WriteFile(path, []byte(mutated), 0o644); err != nil {
			return err
		}
		build := exec.CommandContext(ctx, p.Go, "build", "-trimpath", "./"+filepath.Dir(m.File))
		build.Dir = snap
		out, berr := build.CombinedOutput()
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			return err
		}
		if berr != nil && ctx.Err() == nil {
			if err := p.record(m.Port, Verdict{ID: m.ID, Status: NotViable, Detail: oneLine(string(out))}); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}
