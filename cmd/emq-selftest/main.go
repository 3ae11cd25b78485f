// Command emq-selftest is emq-conform with the kit's self-test flags, for the kit's own tests
// and `make mutants`: it runs a mutant of the reference (internal/mutant) in-process, or passes
// its name to a port that knows the catalogue (EMQ_MUTANT, as cmd/emq-port does), and can admit
// a mutant's edited scripts as bundle scripts so the contracts judge its behaviour alone; with
// -scripts DIR it runs the in-process reference on an edited copy of lua/ (make mutation's bundle
// mutants), those scripts admitted. Its runs never certify. Port authors use cmd/emq-conform,
// which links none of this.
//
//	emq-selftest -mutant NAME [-admit-mutant-scripts] [every emq-conform flag]
//	emq-selftest -scripts DIR [every emq-conform flag]
package main

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/drivers/inproc"
	"github.com/echomq/kit/drivers/subprocess"
	"github.com/echomq/kit/internal/conformcli"
	"github.com/echomq/kit/internal/mutant"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/runner"
)

func main() {
	os.Exit(conformcli.Main("emq-selftest", os.Args[1:], os.Stdout, os.Stderr, &selftest{}))
}

// selftest is the shell's extension: the mutant flags.
type selftest struct {
	mutant  string
	admit   bool
	scripts string
	port    string
}

func (s *selftest) Flags(fs *flag.FlagSet) {
	fs.StringVar(&s.mutant, "mutant", os.Getenv("EMQ_MUTANT"), "run this mutant of the reference (in-process), or pass EMQ_MUTANT to the port [EMQ_MUTANT]")
	fs.BoolVar(&s.admit, "admit-mutant-scripts", false, "admit the -mutant's edited scripts as bundle scripts (never certifies)")
	fs.StringVar(&s.scripts, "scripts", "", "run the in-process reference on `DIR`/<name>.lua in place of each bundle script it holds (an edited copy of lua/), and admit them (never certifies)")
}

func (s *selftest) Factory(port string, sub subprocess.Options) (drivers.Factory, error) {
	s.port = port
	switch {
	case s.scripts != "":
		return scriptsFactory(port, s.mutant, s.scripts)
	case s.mutant == "":
		return nil, nil
	case port == "":
		if spec, ok := mutant.Lookup(s.mutant); ok && spec.Wire != nil {
			// In-process the port binary's stdio is not there to break: the run would be the reference's.
			return nil, fmt.Errorf("mutant %s breaks the port binary's stdio: run it with -port emq-port", s.mutant)
		}
		return mutant.Factory(s.mutant)
	}
	sub.Env = append(sub.Env, "EMQ_MUTANT="+s.mutant)
	return subprocess.New(port, sub)
}

func (s *selftest) Adjust(o *runner.Options, b *lua.Bundle) error {
	if s.scripts != "" {
		admit, digest, err := conformcli.AdmitScripts(b, s.scripts)
		if err != nil {
			return fmt.Errorf("-scripts: %w", err)
		}
		o.SelfTest.Admit, o.SelfTest.Digest = admit, digest
		o.SelfTest.Note = "the reference on the scripts of " + s.scripts + " (admitted: not a certification)"
		o.Replay += " -scripts " + s.scripts
		return nil
	}
	if s.mutant == "" {
		if s.admit {
			return errors.New("-admit-mutant-scripts needs -mutant")
		}
		return nil
	}
	o.SelfTest.Note = join(s.mutant, o.SelfTest.Note)
	o.Replay += " -mutant " + s.mutant
	if !s.admit {
		return nil
	}
	if s.port != "" {
		return errors.New("-admit-mutant-scripts needs the in-process reference (no -port)")
	}
	admit, err := scripts(b, s.mutant)
	if err != nil {
		return err
	}
	o.SelfTest.Admit = admit
	o.SelfTest.Note += " (edited scripts admitted: not a certification)"
	o.Replay += " -admit-mutant-scripts"
	return nil
}

func join(a, b string) string {
	if b == "" {
		return a
	}
	return a + " (" + b + ")"
}

// scripts are the SHA1s of a mutant's edited scripts, by script name.
func scripts(b *lua.Bundle, name string) (map[string]string, error) {
	spec, ok := mutant.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown mutant %q", name)
	}
	var opt bus.Options
	if _, err := spec.Apply(&opt); err != nil {
		return nil, err
	}
	out := map[string]string{}
	if opt.Rewrite == nil {
		return out, nil
	}
	for _, s := range b.Scripts() {
		if src := opt.Rewrite(s.Name, s.Source); src != s.Source {
			sum := sha1.Sum([]byte(src))
			out[hex.EncodeToString(sum[:])] = s.Name
		}
	}
	return out, nil
}

// scriptsFactory is the in-process reference running DIR's copy of each bundle script it holds:
// the bus's script rewrite seam, the seam the catalogue's Lua mutants use.
func scriptsFactory(port, mutantName, dir string) (drivers.Factory, error) {
	if port != "" || mutantName != "" {
		return nil, errors.New("-scripts runs the in-process reference: it excludes -port and -mutant")
	}
	edited := map[string]string{}
	b, err := lua.Load()
	if err != nil {
		return nil, err
	}
	for _, sc := range b.Scripts() {
		src, err := os.ReadFile(filepath.Join(dir, sc.Name+".lua"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("-scripts: %w", err)
		}
		edited[sc.Name] = string(src)
	}
	if len(edited) == 0 {
		return nil, fmt.Errorf("-scripts: %s holds no script of the bundle", dir)
	}
	rewrite := func(name, src string) string {
		if e, ok := edited[name]; ok {
			return e
		}
		return src
	}
	return inproc.New(inproc.Options{Bus: bus.Options{Rewrite: rewrite}, Variant: "scripts"})
}
