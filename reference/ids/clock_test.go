package ids

import (
	"testing"
	"time"
)

// The scripted clock is held to the real clock read around it, never to a fixed tolerance: a
// busy machine stretches the real time, and the scripted one follows it exactly.
func TestScriptedClock(t *testing.T) {
	var c ScriptedClock
	real := func(what string) {
		t.Helper()
		before := time.Now()
		now := c.Now()
		if after := time.Now(); now.Before(before) || now.After(after) {
			t.Fatalf("%s clock read %v, outside the real [%v, %v]", what, now, before, after)
		}
	}
	real("zero")
	at := Epoch.Add(time.Hour)
	start := time.Now()
	c.Set(at, 1000)
	time.Sleep(20 * time.Millisecond)
	got := c.Now().Sub(at)
	if elapsed := time.Since(start); got < 20*time.Millisecond/1000 || got > elapsed/1000 {
		t.Fatalf("scale 1000: %v after %v real, want a thousandth of the real time (at least of the 20 ms slept)", got, elapsed)
	}
	c.Reset()
	real("reset")
}
