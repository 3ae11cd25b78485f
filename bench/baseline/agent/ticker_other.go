//go:build !linux

package main

import "time"

// sleeper waits on Go's timers where nanosleep is not at hand.
type sleeper struct{}

func newSleeper() sleeper { return sleeper{} }

func (sleeper) until(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}

func (sleeper) stop() {}
