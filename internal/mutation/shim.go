package mutation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/format"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
		fmt.Fprintln(stderr, "go shim:", err)
		return 3
	case !ok:
		return 0 // a mutant out of the sample (another type on a sampled token): not judged
	}
	bin := filepath.Join(p.Dir, "bin", "emq-port-"+safeName(m.ID))
	build := exec.CommandContext(ctx, p.Go, "build", "-trimpath", "-o", bin, "./cmd/emq-port")
	build.Dir = wd
	if out, err := build.CombinedOutput(); err != nil {
		v := Verdict{ID: m.ID, Status: NotViable, Detail: oneLine(string(out))}
		if rerr := p.record(m.Port, v); rerr != nil {
			fmt.Fprintln(stderr, "go shim:", rerr)
		}
		return 2
	}
	defer os.Remove(bin)
	v := p.Certify(ctx, m, Subject{Args: []string{"-port", bin}})
	fmt.Fprintf(stderr, "go shim: %s %s %s\n", m.ID, v.Status, v.By)
	switch {
	case v.Status.Detected():
		return 1
	case v.Status == Error:
		return 3
	}
	return 0
}

// identify finds which sampled mutant the working copy holds: the one target file that differs
// from the checkout, the one line of it that differs once both are gofmt-ed (gremlins prints the
// file with go/printer's defaults), and the sampled mutant of that file and line that reads so.
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
	mutated, err := os.ReadFile(filepath.Join(wd, file))
	if err != nil {
		return Mutant{}, false, err
	}
	if mutated, err = format.Source(mutated); err != nil {
		return Mutant{}, false, fmt.Errorf("%s: %w", file, err)
	}
	pristine, err := readLines(filepath.Join(p.Root, file))
	if err != nil {
		return Mutant{}, false, err
	}
	now := strings.Split(string(mutated), "\n")
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
	for _, m := range p.Mutants {
		if m.File == file && m.Line == line && Fold(m.Now) == Fold(now[line-1]) {
			return m, true, nil
		}
	}
	return Mutant{}, false, nil
}
