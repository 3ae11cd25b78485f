//go:build !emqlegacy

package main

import (
	"time"

	"github.com/echomq/kit/reference/bus"
)

// A deliberately slowed bus, for the baseline check's own test only: every command the bus
// sends costs its caller 20 µs of CPU per argument before it leaves, through the bus's command
// hook (a seam for the kit's tests), so each job costs the bus about 60 µs more wherever it
// goes. Nothing in the bus changes; the file is added to the agent's build by the test.
func init() {
	optionHooks = append(optionHooks, func(o *bus.Options) {
		o.Test.Hook = func(args []any) []any {
			spin(time.Duration(len(args)) * 20 * time.Microsecond)
			return args
		}
	})
}

func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
