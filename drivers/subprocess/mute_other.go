//go:build !linux

package subprocess

import (
	"os"
	"time"
)

// idleProbe is Linux-only: elsewhere a mute port waits out the start deadline.
type idleProbe struct{}

func newIdleProbe(*os.File, int) (idleProbe, bool) { return idleProbe{}, false }
func (idleProbe) drained() bool                    { return false }
func (idleProbe) activity() groupActivity          { return groupActivity{} }

type groupActivity struct {
	ticks, calls int64
	running      bool
}

const clockTick = 10 * time.Millisecond
