package main

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/drivers/inproc"
	"github.com/echomq/kit/internal/mutant"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/bus"
)

// referenceFactory is the in-process reference bus, or one of its mutants (reference/mutant).
func referenceFactory(mutant string) (drivers.Factory, error) {
	return inproc.New(inproc.Options{Mutant: mutant})
}

// mutantScripts are the SHA1s of a mutant's edited scripts, by script name.
func mutantScripts(b *lua.Bundle, name string) (map[string]string, error) {
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
