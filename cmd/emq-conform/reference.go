package main

import (
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/drivers/inproc"
)

// referenceFactory is the in-process reference bus, or one of its mutants (reference/mutant).
func referenceFactory(mutant string) (drivers.Factory, error) {
	return inproc.New(inproc.Options{Mutant: mutant})
}
