package ids

import (
	"testing"
	"time"
)

func TestScriptedClock(t *testing.T) {
	var c ScriptedClock
	if d := time.Since(c.Now()); d.Abs() > time.Second {
		t.Fatalf("zero clock is %v off the real one", d)
	}
	at := Epoch.Add(time.Hour)
	c.Set(at, 1000)
	time.Sleep(20 * time.Millisecond)
	if got := c.Now().Sub(at); got < 0 || got > time.Millisecond {
		t.Fatalf("scale 1000: %v after 20 ms real, want under 1 ms", got)
	}
	c.Reset()
	if d := time.Since(c.Now()); d.Abs() > time.Second {
		t.Fatalf("reset clock is %v off the real one", d)
	}
}
