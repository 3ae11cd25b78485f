// Package mutant is the catalogue of deliberate defects in the reference port: each mutant
// breaks one rule of the canon, so a conformance run that passes it proves the harness blind
// to that rule. Lua mutants are the canonical bundle with one exact source edit; Go mutants are
// built from the bus's seams (bus.Seams: a command hook, the handshake, the minter, the park)
// and, for the port's own front (its key builder, its payload codec), a wrapper of the driver.
// The bus itself holds no defect; everything is applied through bus.Options and the driver:
// there is no global state.
package mutant

import (
	"context"
	"encoding/json"
	"fmt"

	"slices"
	"sort"
	"strings"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/drivers/inproc"
	"github.com/echomq/kit/internal/portserver"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
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
	Rule     string // the id of the one rule it breaks (rules.All in contracts/rules, TRACEABILITY.md)
	Defect   string
	Edits    []Edit // Lua mutants: edits of the canonical bundle
	// Go builds a Go mutant: it installs its seams into opt (opt.Test) and may return a wrapper
	// of the port's driver (nil: none). Called once per Apply, so any state it creates is shared
	// by the sessions of one factory only.
	Go func(opt *bus.Options) Wrap
	// AllowEngine admits a wrong-kind server (the fence's opt-in, turned into a defect).
	AllowEngine bool
	// Cluster: the mutant breaks a rule only a cluster run evaluates (rules.Cluster in
	// contracts/rules); it is run, and killed, against a Valkey Cluster (emq-conform -cluster).
	Cluster bool
	// Wire breaks the port binary's line protocol through cmd/emq-port's seam (stdio.go): the
	// mutant runs, and is killed, only as a subprocess port (-port emq-port, EMQ_MUTANT).
	Wire func(*portserver.Options)
}

// Wrap wraps a session of the port (the reference driver) in a mutant's own front.
type Wrap func(drivers.Driver) drivers.Driver

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

// Factory is the in-process reference bus running the mutant name (drivers/inproc with the
// mutant's seams installed and its front over every session); "" is the clean reference. An
// unknown name is an error that lists the catalogue.
func Factory(name string) (*inproc.Factory, error) {
	if name == "" {
		return inproc.New(inproc.Options{})
	}
	spec, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("mutant: unknown mutant %q (have %v)", name, Names())
	}
	var opt bus.Options
	wrap, err := spec.Apply(&opt)
	if err != nil {
		return nil, err
	}
	return inproc.New(inproc.Options{Bus: opt, Variant: "mutant:" + spec.Name, Front: withAids(wrap)})
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

// Apply makes opt run this mutant: the script edits as opt.Rewrite, the Go side through
// opt.Test. It returns the wrapper every session of the port goes through (the identity for
// most mutants), and fails if an edit no longer matches the bundle.
func (s Spec) Apply(opt *bus.Options) (Wrap, error) {
	if err := s.Check(); err != nil {
		return nil, err
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
	if s.AllowEngine {
		opt.Fence.AllowEngine = true
	}
	var w Wrap
	if s.Go != nil {
		w = s.Go(opt)
	}
	if w == nil {
		w = func(d drivers.Driver) drivers.Driver { return d }
	}
	return w, nil
}

// catalogue is every mutant: the Go-side ones, then the Lua ones contract by contract (one file
// each, catalogue_cNN.go).
var catalogue = slices.Concat(goMutants, jsonMutants, sessionMutants, inFlightMutants, c01, c02, c03, c04, c05, c06, c07, c08, c09, c10, c11, c12, c13, c14, walk, clusterMutants, fieldRowMutants, opRowMutants, statementMutants, callMutants, stdioMutants, minterKeyMutants, digestMutants, handshakeMutants)

// withAids gives a front the optional ops its port offers. A front written against the Driver
// interface alone would hide the clock and the batch ops, and the contracts would meet a port
// that declares capabilities it cannot serve: a defect the mutant does not mean.
func withAids(w Wrap) Wrap {
	if w == nil {
		return nil
	}
	return func(d drivers.Driver) drivers.Driver {
		f := w(d)
		return aided{aidedOps{Driver: f, inner: d}}
	}
}

// aidedOps is a front with its port's clock and batch ops; aided adds the raw requests, which
// go to the front's own JSON layer when it has one, else through drivers.Dispatch over the
// front's typed ops.
type aidedOps struct {
	drivers.Driver
	inner drivers.Driver
}

type aided struct{ aidedOps }

func (a aided) Raw(ctx context.Context, op string, fields map[string]json.RawMessage) (json.RawMessage, error) {
	if r, ok := a.Driver.(drivers.RawCaller); ok {
		return r.Raw(ctx, op, fields)
	}
	return drivers.Raw(ctx, a.aidedOps, op, fields)
}

// Pipeline hands a run of requests in flight to the front when it serves them itself, else
// serves them one by one through the front's raw requests.
func (a aided) Pipeline(ctx context.Context, reqs []drivers.RawRequest) ([]drivers.RawReply, error) {
	if p, ok := a.Driver.(drivers.Pipeliner); ok {
		return p.Pipeline(ctx, reqs)
	}
	return drivers.OneByOne(ctx, a, reqs)
}

var _ drivers.LineSender = aided{}

// Line hands a line written as it is (not a request, or a request written by hand) to the front
// when it answers one itself, else to the kit's JSON layer over the front's typed ops.
func (a aided) Line(ctx context.Context, text []byte, seq uint64) (json.RawMessage, error) {
	return drivers.Line(ctx, a.Driver, text, seq)
}

func (a aidedOps) clocker() drivers.Clocker {
	if c, ok := a.Driver.(drivers.Clocker); ok {
		return c
	}
	return a.inner.(drivers.Clocker)
}

func (a aidedOps) batcher() drivers.Batcher {
	if b, ok := a.Driver.(drivers.Batcher); ok {
		return b
	}
	return a.inner.(drivers.Batcher)
}

// EndInput is the front's own when it has one, else its port's: a front that does not touch the
// end of input ends the park it passed on as the reference does.
func (a aidedOps) EndInput(ctx context.Context, until time.Time) error {
	if e, ok := a.Driver.(drivers.InputEnder); ok {
		return e.EndInput(ctx, until)
	}
	return a.inner.(drivers.InputEnder).EndInput(ctx, until)
}

func (a aidedOps) Clock(ctx context.Context, c protocol.ClockArgs) error {
	return a.clocker().Clock(ctx, c)
}

func (a aidedOps) EnqueueBatch(ctx context.Context, b protocol.EnqueueBatchArgs) (protocol.EnqueueBatchResult, error) {
	return a.batcher().EnqueueBatch(ctx, b)
}

func (a aidedOps) ClaimBatch(ctx context.Context, b protocol.ClaimBatchArgs) (protocol.ClaimBatchResult, error) {
	return a.batcher().ClaimBatch(ctx, b)
}

func (a aidedOps) CompleteBatch(ctx context.Context, b protocol.CompleteBatchArgs) (protocol.CompleteBatchResult, error) {
	return a.batcher().CompleteBatch(ctx, b)
}
