package main

import (
	"errors"

	"github.com/echomq/kit/drivers"
)

// referenceFactory is the in-process reference bus, or one of its mutants.
func referenceFactory(mutant string) (drivers.Factory, error) {
	return nil, errors.New("the in-process reference driver (drivers/inproc) is not available yet")
}
