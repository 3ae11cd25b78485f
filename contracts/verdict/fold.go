package verdict

import (
	"slices"
	"strings"
)

// ContractID is the contract of a clause id: "C09" for "C09/retry/backoff-parks-in-scheduled".
func ContractID(clauseID string) string {
	id, _, _ := strings.Cut(clauseID, "/")
	return id
}

// contractStatus folds clause verdicts: the greatest wins (a harness error, then a failure,
// then not claimed); a contract passes when at least one clause ran and none failed, and one
// whose clauses were all filtered out or not offered did not run.
func contractStatus(cls []Clause) Status {
	st := StatusNotRun
	for _, c := range cls {
		st = max(st, c.Status)
	}
	if st == StatusNotOffered {
		return StatusNotRun
	}
	return st
}

// Known names the clauses a run expects to fail: a failed clause it names is KNOWN FAILING (or
// KNOWN FLAKY) instead of FAIL, and a known-failing clause that passes is a stale entry, which
// fails the run (package contracts/known reads the lists).
type Known interface {
	IsFailing(clauseID string) bool
	IsFlaky(clauseID string) bool
}

// expect marks the failed clauses known names, and says each known-failing clause that passed
// (known nil: none is marked).
func expect(cls []Clause, known Known) (marked []Clause, stale []string) {
	marked = slices.Clone(cls)
	if known == nil {
		return marked, nil
	}
	for i := range marked {
		cl := &marked[i]
		switch {
		case cl.Status == StatusFail && known.IsFailing(cl.ID):
			cl.Status = StatusKnownFailing
		case cl.Status == StatusFail && known.IsFlaky(cl.ID):
			cl.Status = StatusKnownFlaky
		case cl.Status == StatusPass && known.IsFailing(cl.ID) && !known.IsFlaky(cl.ID):
			stale = append(stale, cl.ID+" is listed as known failing but passed: remove it from the list")
		}
	}
	return marked, stale
}

// Fold sets the contract's status and counts from its clauses (marked by expect).
func (c *ContractResult) Fold() {
	c.Status = contractStatus(c.Clauses)
	c.ClausesTotal = len(c.Clauses)
	c.ClausesRun = 0
	for _, cl := range c.Clauses {
		if cl.Ran() {
			c.ClausesRun++
		}
	}
}

// Summarize folds a run's clause verdicts into contract results and the run's verdict.
// contracts are the suite's contracts in canon order (ID, Name and Rule; their Clauses are
// ignored), clauses every clause of the run in the order of the reports; known names the
// clauses that may fail (nil: none). A clause of no listed contract is left out.
func Summarize(contracts []ContractResult, clauses []Clause, known Known) *Result {
	r := &Result{Total: len(contracts), Contracts: make([]ContractResult, len(contracts))}
	byID := map[string]*ContractResult{}
	for i, c := range contracts {
		r.Contracts[i] = ContractResult{ID: c.ID, Name: c.Name, Rule: c.Rule}
		byID[c.ID] = &r.Contracts[i]
	}
	var homes [][]QueueHome
	primaries := 0
	clauses, r.Stale = expect(clauses, known)
	for _, cl := range clauses {
		c := byID[ContractID(cl.ID)]
		if c == nil {
			continue
		}
		if r.Hello == nil && cl.Hello != nil {
			r.Hello = cl.Hello
		}
		homes = append(homes, cl.Queues)
		primaries = max(primaries, cl.Primaries)
		c.Clauses = append(c.Clauses, cl)
	}
	for i := range r.Contracts {
		c := &r.Contracts[i]
		c.Fold()
		r.ClausesRun += c.ClausesRun
		r.ClausesTotal += c.ClausesTotal
		if c.Status == StatusPass && !c.Partial() {
			r.Passed++
		}
	}
	r.Spread = spreadOf(homes, primaries)
	r.Certified = r.Passed == r.Total && len(r.Stale) == 0 && (r.Spread == nil || r.Spread.Covered())
	return r
}
