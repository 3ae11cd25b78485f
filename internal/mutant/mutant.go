// Package mutant is the catalogue of deliberate defects in the reference port: each mutant
// breaks one rule of the canon, so a conformance run that passes it proves the harness blind
// to that rule. Lua mutants are the canonical bundle with one exact source edit; Go mutants are
// bus.Defects switches. Both are applied through bus.Options: there is no global state.
package mutant

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/bus"
)

// Edit replaces Old by New in one bundle script. Old must occur exactly once in the canonical
// source, so a bundle change that moves the text breaks the catalogue loudly.
type Edit struct {
	Script, Old, New string
}

// Spec is one mutant: its name, the contract it must fail, the rule it breaks, and what it does
// wrong.
type Spec struct {
	Name     string
	Contract string // the contract that must fail, e.g. "C07" (others may fail too)
	Rule     string // the id of the one rule it breaks (contracts.Rules, TRACEABILITY.md)
	Defect   string
	Edits    []Edit      // Lua mutants: edits of the canonical bundle
	Defects  bus.Defects // Go mutants: switches in the bus
	// AllowEngine admits a wrong-kind server (the fence's opt-in, turned into a defect).
	AllowEngine bool
}

// Catalogue lists every mutant, sorted by name.
func Catalogue() []Spec {
	out := append([]Spec(nil), catalogue...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds a mutant by name.
func Lookup(name string) (Spec, bool) {
	for _, s := range catalogue {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names lists the mutants' names, sorted.
func Names() []string {
	var out []string
	for _, s := range Catalogue() {
		out = append(out, s.Name)
	}
	return out
}

// Check verifies that every edit applies to the canonical bundle exactly once.
func (s Spec) Check() error {
	b, err := lua.Load()
	if err != nil {
		return err
	}
	for _, e := range s.Edits {
		ls, ok := b.Script(e.Script)
		if !ok {
			return fmt.Errorf("mutant %s: no script %q", s.Name, e.Script)
		}
		if n := strings.Count(ls.Source, e.Old); n != 1 {
			return fmt.Errorf("mutant %s: %s.lua holds the edited text %d times, want once: %q", s.Name, e.Script, n, e.Old)
		}
	}
	return nil
}

// Apply makes opt run this mutant: the script edits as opt.Rewrite, the Go defects ORed into
// opt.Defects. It fails if an edit no longer matches the bundle.
func (s Spec) Apply(opt *bus.Options) error {
	if err := s.Check(); err != nil {
		return err
	}
	if len(s.Edits) > 0 {
		prev, edits := opt.Rewrite, s.Edits
		opt.Rewrite = func(name, src string) string {
			if prev != nil {
				src = prev(name, src)
			}
			for _, e := range edits {
				if e.Script == name {
					src = strings.Replace(src, e.Old, e.New, 1)
				}
			}
			return src
		}
	}
	d := &opt.Defects
	x := s.Defects
	d.EvalEnqueue = d.EvalEnqueue || x.EvalEnqueue
	d.ClientClockLease = d.ClientClockLease || x.ClientClockLease
	d.ArgvRowPrefix = d.ArgvRowPrefix || x.ArgvRowPrefix
	d.PollPark = d.PollPark || x.PollPark
	d.RepeatIDs = d.RepeatIDs || x.RepeatIDs
	d.FenceLate = d.FenceLate || x.FenceLate
	d.NoRefence = d.NoRefence || x.NoRefence
	d.LaxQueueNames = d.LaxQueueNames || x.LaxQueueNames
	d.LaxIDBrand = d.LaxIDBrand || x.LaxIDBrand
	if s.AllowEngine {
		opt.Fence.AllowEngine = true
	}
	return nil
}

// catalogue is every mutant: the Go-side ones, then the Lua ones contract by contract (one file
// each, catalogue_cNN.go).
var catalogue = slices.Concat(goMutants, c01, c02, c03, c04, c05, c06, c07, c08, c09, c10, c11, c12, c13, c14, walk)
