package verdict

import (
	"sync"
	"sync/atomic"
)

// Tally gathers a run's clause verdicts as they come, from any lane, in any order: it folds a
// contract as soon as all its selected clauses are in (for a progress line) and tells whether a
// clause failed (for a run that stops at the first failure).
type Tally struct {
	mu       sync.Mutex
	heads    map[string]ContractResult // the contracts, by id, with no clause
	want     map[string]int            // selected clauses per contract
	picked   map[string]bool
	got      map[string]Clause
	in       map[string][]Clause // by contract, as they came
	known    Known
	progress func(ContractResult)
	failed   atomic.Bool
}

// NewTally is the tally of a run of the selected clause ids over contracts (ID, Name and Rule);
// known names the clauses that may fail, and progress, if set, receives each contract folded
// as soon as its last selected clause is in (a contract that ran nothing is not told).
func NewTally(contracts []ContractResult, selected []string, known Known, progress func(ContractResult)) *Tally {
	t := &Tally{heads: map[string]ContractResult{}, want: map[string]int{}, picked: map[string]bool{},
		got: map[string]Clause{}, in: map[string][]Clause{}, known: known, progress: progress}
	for _, c := range contracts {
		t.heads[c.ID] = ContractResult{ID: c.ID, Name: c.Name, Rule: c.Rule}
	}
	for _, id := range selected {
		t.want[ContractID(id)]++
		t.picked[id] = true
	}
	return t
}

// Add takes one clause's verdict.
func (t *Tally) Add(cl Clause) {
	if cl.Failed() {
		t.failed.Store(true)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.got[cl.ID] = cl
	id := ContractID(cl.ID)
	t.in[id] = append(t.in[id], cl)
	if len(t.in[id]) < t.want[id] || t.progress == nil {
		return
	}
	cr := t.heads[id]
	cr.Clauses, _ = expect(t.in[id], t.known)
	cr.Fold()
	if cr.Status != StatusNotRun {
		t.progress(cr)
	}
}

// Failed tells whether a clause failed (or hit a harness error) so far.
func (t *Tally) Failed() bool { return t.failed.Load() }

// Clauses are the verdicts of every clause of the run, in order: one that did not come in is
// NOT RUN (not selected, or never reached; under failFast, a selected one says the run stopped).
func (t *Tally) Clauses(order []string, failFast bool) []Clause {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Clause, 0, len(order))
	for _, id := range order {
		cl, ok := t.got[id]
		switch {
		case ok:
		case failFast && t.picked[id]:
			cl = Clause{ID: id, Status: StatusNotRun, Reason: "fail-fast: the run stopped at a failing clause"}
		default:
			cl = Clause{ID: id, Status: StatusNotRun}
		}
		out = append(out, cl)
	}
	return out
}
