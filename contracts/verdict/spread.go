package verdict

import (
	"fmt"
	"slices"
	"strings"
)

// QueueHome is a queue a cluster run used and the primary (index in slot order) it lives on.
type QueueHome struct {
	Queue   string `json:"queue"`
	Primary int    `json:"primary"`
}

// Spread is how a cluster run's queues fell on the primaries.
type Spread struct {
	Primaries int `json:"primaries"`
	// Queues lists, per primary (index in slot order), the queues of the run living there.
	Queues [][]string `json:"queues"`
	// Across counts the clauses whose port calls touched queues on two primaries or more.
	Across int `json:"clauses_across_primaries"`
}

// Covered says the run's queues landed on every primary.
func (s *Spread) Covered() bool {
	if s == nil || s.Primaries == 0 {
		return false
	}
	for i := 0; i < s.Primaries; i++ {
		if i >= len(s.Queues) || len(s.Queues[i]) == 0 {
			return false
		}
	}
	return true
}

// String is the report's line: "queues on 3 of 3 primaries (p0: a b; p1: c; p2: d); 5 clauses used two primaries or more".
func (s *Spread) String() string {
	on := 0
	var parts []string
	for i, qs := range s.Queues {
		if len(qs) > 0 {
			on++
		}
		parts = append(parts, fmt.Sprintf("p%d: %s", i, strings.Join(qs, " ")))
	}
	return fmt.Sprintf("queues on %d of %d primaries (%s); %d clause(s) used queues on two primaries or more", on, s.Primaries, strings.Join(parts, "; "), s.Across)
}

// spreadOf folds the clauses' queue entries.
func spreadOf(homes [][]QueueHome, primaries int) *Spread {
	if primaries == 0 {
		return nil
	}
	s := &Spread{Primaries: primaries, Queues: make([][]string, primaries)}
	for _, hs := range homes {
		on := map[int]bool{}
		for _, h := range hs {
			on[h.Primary] = true
			if h.Primary >= 0 && h.Primary < primaries && !slices.Contains(s.Queues[h.Primary], h.Queue) {
				s.Queues[h.Primary] = append(s.Queues[h.Primary], h.Queue)
			}
		}
		if len(on) > 1 {
			s.Across++
		}
	}
	for _, qs := range s.Queues {
		slices.Sort(qs)
	}
	return s
}
