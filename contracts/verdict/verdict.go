// Package verdict is a certification's verdict, typed from the clause to the report: a clause's
// Status and the Failures it recorded (rule, expected, got — never read back from message text),
// a contract's result folded from its clauses, and a run's Result with its summary. The harness
// (package contracts) writes clause verdicts; the runner and the report writer (contracts/report)
// read them, without linking the suite.
package verdict

import (
	"fmt"
	"strings"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
)

// Status is the verdict of a clause or of a contract. Statuses are ordered by how much they
// say against the port, so a contract's status is the greatest of its clauses' (with a clause
// that was not offered counting as one that did not run), and a known-failing contract ranks
// below one that fails for real.
type Status uint8

const (
	// StatusNotRun: filtered out (-label, -focus), or the clause needs a server the run was not
	// given. Never a pass: a contract with no clause run is not counted.
	StatusNotRun Status = iota
	// StatusNotOffered: the clause needs an optional test aid the port does not declare (e.g.
	// the clock op); printed with the reason, it neither passes nor fails its contract.
	StatusNotOffered
	StatusPass
	// StatusKnownFlaky is a clause that failed and that a known-flaky pattern names (Known), or
	// a contract whose failures are all such: it does not fail the run, and does not pass.
	StatusKnownFlaky
	// StatusKnownFailing is a clause that failed and that a known-failing pattern names, or a
	// contract whose failures are all known: it does not fail the run, and does not pass.
	StatusKnownFailing
	StatusNotClaimed
	StatusFail
	// StatusHarnessError: the kit itself could not do its part; nothing is said of the port.
	StatusHarnessError
)

var statusNames = [...]string{
	StatusNotRun:       "NOT RUN",
	StatusNotOffered:   "NOT RUN (not offered)",
	StatusPass:         "PASS",
	StatusKnownFlaky:   "KNOWN FLAKY",
	StatusKnownFailing: "KNOWN FAILING",
	StatusNotClaimed:   "NOT CLAIMED",
	StatusFail:         "FAIL",
	StatusHarnessError: "HARNESS ERROR",
}

// String is the status as the console, the transcript and report.json spell it.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// MarshalText writes the status by name (report.json: "verdict": "PASS").
func (s Status) MarshalText() ([]byte, error) {
	if int(s) >= len(statusNames) {
		return nil, fmt.Errorf("verdict: no status %d", uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a status by name.
func (s *Status) UnmarshalText(b []byte) error {
	for i, n := range statusNames {
		if n == string(b) {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("verdict: unknown status %q", b)
}

// Failure is one check a clause failed: the rule it breaks, what was expected, what the port
// did, and the wire lines the check quoted. A failure the harness could not pin on a rule (a
// clause that timed out) has only Got.
type Failure struct {
	Rule     string   `json:"rule,omitempty"`  // the rule's id (Rules, TRACEABILITY.md)
	Quote    string   `json:"quote,omitempty"` // where the rule is written and what it says
	Expected string   `json:"expected,omitempty"`
	Got      string   `json:"got"`
	Wire     []string `json:"wire,omitempty"`
}

// Text is the failure as h2spec prints one: RULE, EXPECTED, GOT, and the WIRE lines quoted.
func (f Failure) Text() string {
	if f.Quote == "" {
		return f.Got
	}
	s := fmt.Sprintf("RULE:     %s\nEXPECTED: %s\nGOT:      %s", f.Quote, f.Expected, f.Got)
	if len(f.Wire) > 0 {
		s += "\nWIRE:\n  " + strings.Join(f.Wire, "\n  ")
	}
	return s
}

// Clause is one clause's verdict as the harness recorded it.
type Clause struct {
	ID     string `json:"id"`
	Status Status `json:"verdict"`
	// Reason says why a clause did not run, is not claimed or not offered, or what the harness
	// could not do.
	Reason string `json:"reason,omitempty"`
	// Failures are the checks a failed clause failed, the first one first.
	Failures []Failure `json:"failures,omitempty"`
	// Rules are the ids of the rules the clause evaluated, pass or fail (TRACEABILITY.md).
	Rules []string `json:"rules,omitempty"`
	// Wire is the port's wire trace of a clause that failed.
	Wire string `json:"wire,omitempty"`
	// Exchange is what a failed clause's sessions exchanged with a subprocess port: the JSON
	// lines both ways and the port's stderr tail.
	Exchange *drivers.Exchange `json:"exchange,omitempty"`
	// Queues (cluster runs) are the queues the port's calls touched and their primaries, and
	// Primaries how many primaries the clause saw.
	Queues    []QueueHome   `json:"queues,omitempty"`
	Primaries int           `json:"primaries,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
	// Hello is the port's hello in this clause (not written: the run's is Result.Hello).
	Hello *protocol.HelloResult `json:"-"`
}

// Ran tells a clause that ran (whatever its verdict) from one that was filtered out or could
// not run for want of a server.
func (c Clause) Ran() bool { return c.Status != StatusNotRun }

// Failed tells a clause whose failures, harness error or absence a reader must see.
func (c Clause) Failed() bool { return c.Status == StatusFail || c.Status == StatusHarnessError }

// Rule is the RULE line of the clause's first failure: what a one-line listing names.
func (c Clause) Rule() string {
	switch {
	case c.Status == StatusHarnessError:
		return "the harness could not run this clause"
	case len(c.Failures) > 0 && c.Failures[0].Quote != "":
		return c.Failures[0].Quote
	}
	return "the clause failed"
}

// Message is the clause's account for a reader: its failures in full, or the reason it did not
// run, is not claimed or hit a harness error ("" for a pass and for a clause filtered out).
func (c Clause) Message() string {
	switch c.Status {
	case StatusFail, StatusKnownFailing, StatusKnownFlaky:
		var ts []string
		for _, f := range c.Failures {
			ts = append(ts, f.Text())
		}
		return strings.Join(ts, "\n")
	case StatusHarnessError:
		return "HARNESS ERROR: " + c.Reason
	}
	return c.Reason
}

// ContractResult is one contract's outcome.
type ContractResult struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Rule    string   `json:"rule"`
	Status  Status   `json:"status"`
	Note    string   `json:"note,omitempty"`
	Clauses []Clause `json:"clauses"`
	// ClausesRun of ClausesTotal clauses ran; the others were filtered out (-label, -focus) or
	// needed a server the run was not given. A partial contract is never counted as passed.
	ClausesRun   int `json:"clauses_run"`
	ClausesTotal int `json:"clauses_total"`
}

// Partial tells a contract some of whose clauses did not run.
func (c ContractResult) Partial() bool { return c.ClausesRun < c.ClausesTotal }

// Result is a whole run.
type Result struct {
	Contracts []ContractResult      `json:"contracts"`
	Hello     *protocol.HelloResult `json:"hello,omitempty"`
	Passed    int                   `json:"passed"`
	Total     int                   `json:"total"`
	Certified bool                  `json:"certified"`
	Filtered  bool                  `json:"filtered"`
	// FailFast: the run stopped at its first failing clause (a mutation test), never a
	// certification; Filtered is set too.
	FailFast bool `json:"fail_fast,omitempty"`
	// Stale lists the stale entries of the known lists — a known-failing clause that passed, a
	// pattern that matches no clause — each a sentence: the lists must be updated, and the run
	// fails.
	Stale    []string      `json:"stale_known_failing,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// ClausesRun of ClausesTotal clauses ran in the whole run.
	ClausesRun   int `json:"clauses_run"`
	ClausesTotal int `json:"clauses_total"`
	// Spread (cluster runs) is how the run's queues fell on the primaries; a cluster run whose
	// queues missed a primary certifies nothing.
	Spread *Spread `json:"spread,omitempty"`
}
