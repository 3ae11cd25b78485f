package mutant_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/contracts"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/drivers/inproc"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/internal/mutant"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
)

func TestCatalogue(t *testing.T) {
	cat := mutant.Catalogue()
	if len(cat) < 22 {
		t.Fatalf("%d mutants, want at least 22", len(cat))
	}
	seen := map[string]bool{}
	for _, s := range cat {
		if seen[s.Name] || s.Name == "" || s.Defect == "" {
			t.Errorf("mutant %q: duplicate or unnamed or undescribed", s.Name)
		}
		seen[s.Name] = true
		if _, ok := contracts.Lookup(s.Contract); !ok {
			t.Errorf("mutant %s: contract %q is not one of C01–C14", s.Name, s.Contract)
		}
		if len(s.Edits) == 0 && s.Go == nil && !s.AllowEngine && s.Wire == nil {
			t.Errorf("mutant %s changes nothing", s.Name)
		}
		if o := mutant.Stdio(s.Name); (s.Wire != nil) != (o.Reply != nil || o.Input != nil) {
			t.Errorf("mutant %s: its stdio seam is set %v, want %v", s.Name, o.Reply != nil || o.Input != nil, s.Wire != nil)
		}
		// Every edit must match the canonical bundle exactly once: a bundle change that moves
		// the text must break the catalogue, not silently turn a mutant into the reference.
		if err := s.Check(); err != nil {
			panic(err)
		}
		if got, ok := mutant.Lookup(s.Name); !ok || got.Name != s.Name {
			t.Errorf("Lookup(%s) failed", s.Name)
		}
	}
	if _, ok := mutant.Lookup("no-such-mutant"); ok {
		t.Error("Lookup found a mutant that does not exist")
	}
}

// Apply edits exactly the named scripts and leaves the rest byte for byte canonical.
func TestApplyEditsOnlyItsScripts(t *testing.T) {
	canon, _ := lua.Load()
	for _, s := range mutant.Catalogue() {
		var opt bus.Options
		wrap, err := s.Apply(&opt)
		if err != nil {
			t.Fatal(err)
		}
		if wrap == nil || opt.Fence.AllowEngine != s.AllowEngine {
			t.Errorf("%s: not applied", s.Name)
		}
		rest := opt
		rest.Test = bus.Seams{}
		if s.Go != nil && noSeams(opt.Test) && !wrapsDriver(wrap) && reflect.DeepEqual(rest, bus.Options{}) {
			t.Errorf("%s: a Go mutant installs no seam and no front, and sets no option", s.Name)
		}
		if len(s.Edits) == 0 {
			if opt.Rewrite != nil {
				t.Errorf("%s: a Go mutant rewrites scripts", s.Name)
			}
			continue
		}
		edited := map[string]bool{}
		for _, e := range s.Edits {
			edited[e.Script] = true
		}
		for _, ls := range canon.Scripts() {
			got := opt.Rewrite(ls.Name, ls.Source)
			if changed := got != ls.Source; changed != edited[ls.Name] {
				t.Errorf("%s: script %s changed=%v, want %v", s.Name, ls.Name, changed, edited[ls.Name])
			}
		}
	}
}

func noSeams(s bus.Seams) bool {
	return s.Hook == nil && s.Handshake == nil && s.Minter == nil && s.Park == nil
}

// wrapsDriver reports whether w puts a front before a session.
func wrapsDriver(w mutant.Wrap) bool {
	var d drivers.Driver = (*inproc.Driver)(nil)
	_, same := w(d).(*inproc.Driver)
	return !same
}

// Every edited script still compiles: a mutant must misbehave, not fail to load.
func TestEditedScriptsCompile(t *testing.T) {
	addr := enginestest.Valkey(t).Addr
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := connector.Dial(ctx, addr, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	canon, _ := lua.Load()
	for _, s := range mutant.Catalogue() {
		var opt bus.Options
		_, _ = s.Apply(&opt)
		for _, e := range s.Edits {
			ls, _ := canon.Script(e.Script)
			src := opt.Rewrite(e.Script, ls.Source)
			if err := c.LoadScript(ctx, connector.NewScript(e.Script, src)); err != nil {
				t.Errorf("%s: edited %s does not load: %v", s.Name, e.Script, err)
			}
		}
	}
	// A bus opened with a Lua mutant runs the edited script (here: enqueue overwrites).
	spec, _ := mutant.Lookup("enqueue-overwrites")
	var opt bus.Options
	_, _ = spec.Apply(&opt)
	b, err := bus.Open(ctx, addr, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	id, _ := b.Mint(ctx)
	b.Enqueue(ctx, "m", []byte("one"), bus.WithID(id))
	e, err := b.Enqueue(ctx, "m", []byte("two"), bus.WithID(id))
	if err != nil || !e.Created {
		t.Fatalf("the mutant's duplicate enqueue = %+v, %v; want created (the defect)", e, err)
	}
	v, _ := c.Do(ctx, "HGET", "emq:{m}:job:"+id, "payload")
	if !strings.EqualFold(string(v.Str), "two") {
		t.Fatalf("payload %q", v.Str)
	}
}

// TestFactory: a mutant is the reference driver with the mutant's seams and front, named for
// reports; an unknown name is refused, "" is the clean reference.
func TestFactory(t *testing.T) {
	if _, err := mutant.Factory("nope"); err == nil {
		t.Fatal("an unknown mutant was accepted")
	}
	f, err := mutant.Factory("poll-park")
	if err != nil || f.Name() != inproc.Name+"+mutant:poll-park" {
		t.Fatal(f, err)
	}
	if f, err := mutant.Factory(""); err != nil || f.Name() != inproc.Name {
		t.Fatal(f, err)
	}
}
