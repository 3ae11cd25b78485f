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

// recorder keeps what every session of a Factory exchanged since the last Mark: the first
// recordHead lines, the last recordTail, and a count of those in between. It stays bounded when
// nobody marks (a long-lived session outside the contracts).
type recorder struct {
	mu       sync.Mutex
	head     []string
	tail     []string // the last lines, oldest first
	omitted  int
	sessions []*tail // stderr of the last recordSessions sessions since the mark
	started  int     // sessions started since the mark
}

// recordSessions bounds how many sessions' stderr a record keeps (a clause opens a few).
const recordSessions = 8

func (r *recorder) mark() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.head, r.tail, r.omitted, r.sessions, r.started = nil, nil, 0, nil, 0
}

func (r *recorder) session(stderr *tail) {
	r.mu.Lock()
	r.started++
	r.sessions = append(r.sessions, stderr)
	if len(r.sessions) > recordSessions {
		r.sessions = r.sessions[1:]
	}
	n := r.started
	r.mu.Unlock()
	r.append(fmt.Sprintf("# session %d started", n))
}

func (r *recorder) add(prefix string, b []byte) {
	r.append(prefix + clipRunes(string(b), recordLineMax))
}

func (r *recorder) append(l string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.head) < recordHead {
		r.head = append(r.head, l)
		return
	}
	r.tail = append(r.tail, l)
	if len(r.tail) > recordTail {
		r.tail = r.tail[1:]
		r.omitted++
	}
}

func (r *recorder) exchange() drivers.Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ex drivers.Exchange
	ex.Lines = append(ex.Lines, r.head...)
	if r.omitted > 0 {
		ex.Lines = append(ex.Lines, fmt.Sprintf("# … %d lines omitted …", r.omitted))
	}
	ex.Lines = append(ex.Lines, r.tail...)
	var errs []string
	first := r.started - len(r.sessions) + 1
	for i, s := range r.sessions {
		if t := s.String(); t != "" {
			if r.started > 1 {
				t = fmt.Sprintf("# session %d\n%s", first+i, t)
			}
			errs = append(errs, t)
		}
	}
	ex.Stderr = strings.Join(errs, "\n")
	return ex
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
