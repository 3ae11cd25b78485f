package mutation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// Shim is the `go` command gremlins finds first on its PATH (emq-mutation run under the name
// go). It answers gremlins' coverage run and each mutant's test run, and hands any other
// invocation to the real go. It returns the exit status: for a mutant, 1 killed, 0 survived,
// 2 the mutant does not build (gremlins' NOT VIABLE), 3 no verdict.
func Shim(ctx context.Context, args []string, stderr io.Writer) int {
	p, err := LoadPlan()
	if err != nil {
		fmt.Fprintln(stderr, "go shim:", err)
		return 3
	}
	if len(args) == 0 || args[0] != "test" {
		err := syscall.Exec(p.Go, append([]string{"go"}, args...), os.Environ())
		fmt.Fprintln(stderr, "go shim: exec the real go:", err)
		return 3
	}
	if profile := flagValue(args, "-coverprofile"); profile != "" {
		// Gremlins' coverage run: the plan's profile (an empty one for a listing).
		text := p.Profile
		if text == "" {
			text = "mode: set\n"
		}
		if err := os.WriteFile(profile, []byte(text), 0o644); err != nil {
			fmt.Fprintln(stderr, "go shim:", err)
			return 3
		}
		return 0
	}
	return p.shimMutant(ctx, stderr)
}

// flagValue is the value of -name in a go command line ("-name v" or "-name=v").
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// shimMutant certifies the mutant gremlins has written into the working copy (the current
// folder).
func (p *Plan) shimMutant(ctx context.Context, stderr io.Writer) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, "go shim:", err)
		return 3
	}
	m, ok, err := p.identify(wd)
	switch {
	case err != nil:
		p.note("go shim: %v", err) // gremlins discards what a test run prints
		return 3
	case !ok:
		return 0 // a mutant out of the sample (another type on a sampled token): not judged
	}
	// Twins (two mutators making one program) are identified as one mutant, and gremlins may
	// hand them to two workers at once: the mutant's lock makes the second wait for the first's
	// verdict, so the program is judged once (two runs shared one binary, and one's removal
	// pulled it from under the other mid-certification: a port that "could not start", taken
	// for a kill).
	unlock, err := p.lockMutant(m)
	if err != nil {
		p.note("go shim: %v", err)
		return 3
	}
	defer unlock()
	if done, err := p.Verdicts(m.Port); err == nil {
		if v, ok := done[m.ID]; ok { // its twin's run came first: the program is judged
			return shimExit(v)
		}
	}
	bin := filepath.Join(p.Dir, "bin", "emq-port-"+safeName(m.ID))
	build := exec.CommandContext(ctx, p.Go, "build", "-trimpath", "-o", bin, "./cmd/emq-port")
	build.Dir = wd
	if out, err := build.CombinedOutput(); err != nil {
		v := Verdict{ID: m.ID, Status: NotViable, Detail: oneLine(string(out))}
		if rerr := errors.Join(p.record(m.Port, v), p.judgeTwins(m, v)); rerr != nil {
			fmt.Fprintln(stderr, "go shim:", rerr)
		}
		return 2
	}
	defer os.Remove(bin)
	v := p.Certify(ctx, m, Subject{Args: []string{"-port", bin}})
	fmt.Fprintf(stderr, "go shim: %s %s %s\n", m.ID, v.Status, v.By)
	if err := p.judgeTwins(m, v); err != nil {
		fmt.Fprintln(stderr, "go shim:", err)
		return 3
	}
	return shimExit(v)
}

// shimExit is the exit status gremlins reads for a verdict.
func shimExit(v Verdict) int {
	switch {
	case v.Status == NotViable:
		return 2
	case v.Status.Detected():
		return 1
	case v.Status == Error:
		return 3
	}
	return 0
}

// identify finds which sampled mutant the working copy holds: the one target file that differs
// from the checkout, the one line of it whose words differ (gremlins prints the file with
// go/printer's defaults, which realign what gofmt aligns, and may add parentheses), and on it
// the one token that changed, which names the mutant by its column and what it became.
func (p *Plan) identify(wd string) (Mutant, bool, error) {
	var changed []string
	for file, sum := range p.Targets {
		b, err := os.ReadFile(filepath.Join(wd, file))
		if err != nil {
			return Mutant{}, false, err
		}
		if s := sha256.Sum256(b); hex.EncodeToString(s[:]) != sum {
			changed = append(changed, file)
		}
	}
	if len(changed) != 1 {
		sort.Strings(changed)
		return Mutant{}, false, fmt.Errorf("want one mutated file in %s, found %d: %v", wd, len(changed), changed)
	}
	file := changed[0]
	now, err := readLines(filepath.Join(wd, file))
	if err != nil {
		return Mutant{}, false, err
	}
	pristine, err := readLines(filepath.Join(p.Root, file))
	if err != nil {
		return Mutant{}, false, err
	}
	line := 0
	for i := range min(len(now), len(pristine)) {
		if Fold(now[i]) != Fold(pristine[i]) {
			if line != 0 {
				return Mutant{}, false, fmt.Errorf("%s differs from the checkout on lines %d and %d", file, line, i+1)
			}
			line = i + 1
		}
	}
	if line == 0 {
		return Mutant{}, false, fmt.Errorf("%s differs from the checkout only in layout", file)
	}
	col, was, became, ok := changedToken(pristine[line-1], now[line-1])
	if !ok {
		return Mutant{}, false, fmt.Errorf("%s:%d: no one token changed: %q became %q", file, line, pristine[line-1], now[line-1])
	}
	// Two mutators can make the same program (INVERT_NEGATIVES and ARITHMETIC_BASE both turn
	// -1 into +1): the working copy is then each of them, and the least id stands for all.
	var found []Mutant
	for _, m := range p.Mutants {
		if m.File == file && m.Line == line && m.Col == col && goSwap[m.Mutator][was] == became {
			found = append(found, m)
		}
	}
	if len(found) == 0 {
		return Mutant{}, false, nil
	}
	return slices.MinFunc(found, func(a, b Mutant) int { return strings.Compare(a.ID, b.ID) }), true, nil
}

// twins are the other sampled mutants that make the same program as m (its line, as printed).
func (p *Plan) twins(m Mutant) []Mutant {
	var out []Mutant
	for _, o := range p.Mutants {
		if o.ID != m.ID && o.File == m.File && o.Line == m.Line && Fold(o.Now) == Fold(m.Now) {
			out = append(out, o)
		}
	}
	return out
}

// judgeTwins gives m's twins m's verdict: gremlins runs each of them, and the same program
// needs one certification.
func (p *Plan) judgeTwins(m Mutant, v Verdict) error {
	for _, o := range p.twins(m) {
		w := v
		w.ID = o.ID
		w.Detail = strings.TrimSpace("the same program as " + m.ID + "; " + v.Detail)
		if err := p.record(o.Port, w); err != nil {
			return err
		}
	}
	return nil
}

// lineToken is a token of one line of Go and its byte column (from 1).
type lineToken struct {
	col  int
	text string
}

// goLineTokens scans one line of Go, comments and parentheses left out.
func goLineTokens(line string) []lineToken {
	var s scanner.Scanner
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(line))
	s.Init(f, []byte(line), func(token.Position, string) {}, 0)
	var out []lineToken
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.LPAREN || tok == token.RPAREN || (tok == token.SEMICOLON && lit == "\n") {
			continue
		}
		text := lit
		if text == "" {
			text = tok.String()
		}
		out = append(out, lineToken{fset.Position(pos).Column, text})
	}
}

// changedToken is the one token of was that now reads otherwise: its column, and both texts.
func changedToken(was, now string) (int, string, string, bool) {
	a, b := goLineTokens(was), goLineTokens(now)
	if len(a) != len(b) {
		return 0, "", "", false
	}
	at := -1
	for i := range a {
		if a[i].text != b[i].text {
			if at >= 0 {
				return 0, "", "", false
			}
			at = i
		}
	}
	if at < 0 {
		return 0, "", "", false
	}
	return a[at].col, a[at].text, b[at].text, true
}

// lockMutant holds m's lock file in the run's folder until unlock (a blocking flock: a twin
// waits its turn).
func (p *Plan) lockMutant(m Mutant) (unlock func(), err error) {
	dir := filepath.Join(p.Dir, "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "mutant-"+safeName(m.ID)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", m.ID, err)
	}
	return func() { f.Close() }, nil
}
