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

// Fold sets the contract's status and counts from its clauses; a contract listed in known
// that fails is known failing, one that passes is a stale entry of the list (Fold then says
// true).
func (c *ContractResult) Fold(known []string) (stale bool) {
	c.Status = contractStatus(c.Clauses)
	c.ClausesTotal = len(c.Clauses)
	c.ClausesRun = 0
	for _, cl := range c.Clauses {
		if cl.Ran() {
			c.ClausesRun++
		}
	}
	if !slices.Contains(known, c.ID) {
		return false
	}
	switch c.Status {
	case StatusFail:
		c.Status = StatusKnownFailing
	case StatusPass:
		c.Note = "listed as known failing but passed: remove it from the list"
		return true
	}
	return false
}

// Summarize folds a run's clause verdicts into contract results and the run's verdict.
// contracts are the suite's contracts in canon order (ID, Name and Rule; their Clauses are
// ignored), clauses every clause of the run in the order of the reports; known lists the
// contracts that may fail. A clause of no listed contract is left out.
func Summarize(contracts []ContractResult, clauses []Clause, known []string) *Result {
	r := &Result{Total: len(contracts), Contracts: make([]ContractResult, len(contracts))}
	byID := map[string]*ContractResult{}
	for i, c := range contracts {
		r.Contracts[i] = ContractResult{ID: c.ID, Name: c.Name, Rule: c.Rule}
		byID[c.ID] = &r.Contracts[i]
	}
	var homes [][]QueueHome
	primaries := 0
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
		if c.Fold(known) {
			r.Stale = append(r.Stale, c.ID)
		}
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
