package ids

import (
	"sync"
	"time"
)

// ScriptedClock is a minter clock a test can set (the port protocol's clock op, A11): after Set
// it reads the time given and advances one millisecond per scale real milliseconds; before Set,
// or after Reset, it is the real clock. Safe for concurrent use; pass its Now as Options.Now.
type ScriptedClock struct {
	mu    sync.Mutex
	set   bool
	base  time.Time // what the clock read at Set
	at    time.Time // the real (monotonic) time of Set
	scale int64
}

// Set makes the clock read t from now on, advancing 1 ms per scale real ms (scale < 1 is 1).
func (c *ScriptedClock) Set(t time.Time, scale int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set, c.base, c.at, c.scale = true, t, time.Now(), max(scale, 1)
}

// Reset returns the clock to real time.
func (c *ScriptedClock) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set = false
}

// Now reads the clock.
func (c *ScriptedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.set {
		return time.Now()
	}
	return c.base.Add(time.Since(c.at) / time.Duration(c.scale))
}
