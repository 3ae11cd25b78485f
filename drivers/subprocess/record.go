package subprocess

import (
	"fmt"
	"strings"
	"sync"

	"github.com/echomq/kit/drivers"
)

// Limits of a recorded exchange: enough to see what went wrong, small enough to read. The head
// shows how the session began (hello), the tail what led up to the failure.
const (
	recordHead    = 12
	recordTail    = 48
	recordLineMax = 600
)

// recorder keeps the lines every session of a Factory exchanged since the last Mark.
type recorder struct {
	mu       sync.Mutex
	lines    []string
	sessions []*tail // stderr of each session since the mark
}

func (r *recorder) mark() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines, r.sessions = nil, nil
}

func (r *recorder) session(stderr *tail) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions = append(r.sessions, stderr)
	r.lines = append(r.lines, fmt.Sprintf("# session %d started", len(r.sessions)))
}

func (r *recorder) add(prefix string, b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, prefix+clipRunes(string(b), recordLineMax))
}

func (r *recorder) exchange() drivers.Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ex drivers.Exchange
	ex.Lines = trimMiddle(r.lines, recordHead, recordTail)
	var errs []string
	for i, s := range r.sessions {
		if t := s.String(); t != "" {
			if len(r.sessions) > 1 {
				t = fmt.Sprintf("# session %d\n%s", i+1, t)
			}
			errs = append(errs, t)
		}
	}
	ex.Stderr = strings.Join(errs, "\n")
	return ex
}

// trimMiddle keeps the first head and the last tail lines, and says how many it left out.
func trimMiddle(lines []string, head, tail int) []string {
	if len(lines) <= head+tail+1 {
		return append([]string(nil), lines...)
	}
	out := append([]string(nil), lines[:head]...)
	out = append(out, fmt.Sprintf("# … %d lines omitted …", len(lines)-head-tail))
	return append(out, lines[len(lines)-tail:]...)
}

// clipRunes shortens s to at most max runes, saying how much it cut.
func clipRunes(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max]) + fmt.Sprintf("… (%d more bytes)", len(s)-len(string(r[:max])))
}

// Mark forgets the lines recorded so far (drivers.Recorder).
func (f *Factory) Mark() { f.rec.mark() }

// Exchange is what the sessions started since the last Mark exchanged (drivers.Recorder).
func (f *Factory) Exchange() drivers.Exchange { return f.rec.exchange() }

var _ drivers.Recorder = (*Factory)(nil)
