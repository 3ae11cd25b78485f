package verdict

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/protocol"
)

func TestStatusNamesRoundTrip(t *testing.T) {
	for st := StatusNotRun; st <= StatusHarnessError; st++ {
		b, err := st.MarshalText()
		if err != nil {
			t.Fatalf("%d: %v", st, err)
		}
		var back Status
		if err := back.UnmarshalText(b); err != nil || back != st {
			t.Errorf("%s read back as %s (%v)", b, back, err)
		}
	}
	if _, err := Status(99).MarshalText(); err == nil {
		t.Error("status 99 marshals")
	}
	var s Status
	if err := s.UnmarshalText([]byte("PASSED")); err == nil {
		t.Error(`"PASSED" reads as a status`)
	}
}

// TestContractStatusIsTheGravest: a contract's status is its gravest clause's; not offered
// counts as not run, and a contract that ran nothing did not run.
func TestContractStatusIsTheGravest(t *testing.T) {
	for _, c := range []struct {
		clauses []Status
		want    Status
	}{
		{nil, StatusNotRun},
		{[]Status{StatusNotRun, StatusNotOffered}, StatusNotRun},
		{[]Status{StatusPass, StatusNotOffered}, StatusPass},
		{[]Status{StatusPass, StatusNotClaimed}, StatusNotClaimed},
		{[]Status{StatusNotClaimed, StatusFail, StatusPass}, StatusFail},
		{[]Status{StatusFail, StatusHarnessError}, StatusHarnessError},
	} {
		var cls []Clause
		for _, st := range c.clauses {
			cls = append(cls, Clause{Status: st})
		}
		if got := contractStatus(cls); got != c.want {
			t.Errorf("%v folds to %s, want %s", c.clauses, got, c.want)
		}
	}
}

// lists is a Known naming clause ids outright.
type lists struct{ failing, flaky []string }

func (l lists) IsFailing(id string) bool { return slices.Contains(l.failing, id) }
func (l lists) IsFlaky(id string) bool   { return slices.Contains(l.flaky, id) }

// TestExpectKnown: a listed clause that fails is known failing (or flaky), one that passes is a
// stale entry of the known-failing list (not of the flaky one), and an unlisted failure stays a
// failure; the contract folds from the marked clauses.
func TestExpectKnown(t *testing.T) {
	l := lists{failing: []string{"C04/kind/a", "C04/kind/p"}, flaky: []string{"C04/kind/b"}}
	cls := []Clause{{ID: "C04/kind/a", Status: StatusFail}, {ID: "C04/kind/b", Status: StatusFail},
		{ID: "C04/kind/c", Status: StatusFail}, {ID: "C04/kind/p", Status: StatusPass}}
	marked, stale := expect(cls, l)
	want := []Status{StatusKnownFailing, StatusKnownFlaky, StatusFail, StatusPass}
	for i, cl := range marked {
		if cl.Status != want[i] {
			t.Errorf("%s is %s, want %s", cl.ID, cl.Status, want[i])
		}
	}
	if cls[0].Status != StatusFail {
		t.Errorf("expect changed the clauses it was given")
	}
	if len(stale) != 1 || !strings.HasPrefix(stale[0], "C04/kind/p is listed as known failing but passed") {
		t.Errorf("stale %v", stale)
	}
	known := ContractResult{ID: "C04", Clauses: marked[:2]}
	if known.Fold(); known.Status != StatusKnownFailing || known.ClausesRun != 2 {
		t.Errorf("a contract failing only as listed: %s, %d run", known.Status, known.ClausesRun)
	}
	partial := ContractResult{ID: "C04", Clauses: []Clause{{Status: StatusPass}, {Status: StatusFail}, {Status: StatusNotRun}}}
	if partial.Fold(); partial.Status != StatusFail || partial.ClausesRun != 2 || partial.ClausesTotal != 3 || !partial.Partial() {
		t.Errorf("counts %d of %d, %s", partial.ClausesRun, partial.ClausesTotal, partial.Status)
	}
}

var headings = []ContractResult{{ID: "C01", Name: "fence"}, {ID: "C02", Name: "mint"}}

// TestSummarizeCertifiesOnlyAWholePass: a run certifies when every contract passed with every
// clause run; a clause not run, a failure or a stale known-failing entry each take it away.
func TestSummarizeCertifiesOnlyAWholePass(t *testing.T) {
	hello := &protocol.HelloResult{Name: "port"}
	all := []Clause{{ID: "C01/fence/a", Status: StatusPass, Hello: hello}, {ID: "C01/fence/b", Status: StatusPass},
		{ID: "C02/mint/a", Status: StatusPass}, {ID: "C99/x/y", Status: StatusFail}}
	r := Summarize(headings, all, nil)
	if !r.Certified || r.Passed != 2 || r.Total != 2 || r.ClausesRun != 3 || r.ClausesTotal != 3 || r.Hello != hello {
		t.Fatalf("a whole pass: %+v", r)
	}
	if len(r.Contracts[0].Clauses) != 2 || r.Contracts[0].Clauses[1].ID != "C01/fence/b" {
		t.Errorf("clauses out of the order given: %+v", r.Contracts[0].Clauses)
	}
	notRun := append([]Clause{}, all...)
	notRun[1].Status = StatusNotRun
	if r := Summarize(headings, notRun, nil); r.Certified || r.Passed != 1 || r.Contracts[0].Status != StatusPass {
		t.Errorf("a clause not run: certified %v, passed %d, C01 %s", r.Certified, r.Passed, r.Contracts[0].Status)
	}
	failed := append([]Clause{}, all...)
	failed[2].Status = StatusFail
	if r := Summarize(headings, failed, lists{failing: []string{"C02/mint/a"}}); r.Certified || r.Contracts[1].Status != StatusKnownFailing {
		t.Errorf("a known failure: certified %v, C02 %s", r.Certified, r.Contracts[1].Status)
	}
	if r := Summarize(headings, all, lists{failing: []string{"C02/mint/a"}}); r.Certified || len(r.Stale) != 1 || !strings.HasPrefix(r.Stale[0], "C02/mint/a ") {
		t.Errorf("a stale known-failing entry: certified %v, stale %v", r.Certified, r.Stale)
	}
}

// TestSpreadMustCoverEveryPrimary: a cluster run whose queues missed a primary certifies nothing.
func TestSpreadMustCoverEveryPrimary(t *testing.T) {
	on := func(ps ...int) []QueueHome {
		var hs []QueueHome
		for _, p := range ps {
			hs = append(hs, QueueHome{Queue: "q" + string(rune('a'+p)), Primary: p})
		}
		return hs
	}
	cls := []Clause{{ID: "C01/fence/a", Status: StatusPass, Queues: on(0, 1), Primaries: 3}, {ID: "C02/mint/a", Status: StatusPass, Queues: on(1), Primaries: 3}}
	r := Summarize(headings, cls, nil)
	if r.Certified || r.Spread == nil || r.Spread.Covered() || r.Spread.Across != 1 {
		t.Fatalf("two of three primaries: certified %v, spread %+v", r.Certified, r.Spread)
	}
	cls[1].Queues = on(2)
	if r := Summarize(headings, cls, nil); !r.Certified || !r.Spread.Covered() {
		t.Errorf("every primary: certified %v, spread %v", r.Certified, r.Spread)
	}
	if !strings.HasPrefix(r.Spread.String(), "queues on 2 of 3 primaries (p0: qa; p1: qb; p2: )") {
		t.Errorf("spread line %q", r.Spread.String())
	}
	if r := Summarize(headings, []Clause{{ID: "C01/fence/a", Status: StatusPass}}, nil); r.Spread != nil {
		t.Errorf("a standalone run has a spread: %v", r.Spread)
	}
}

// TestClauseAccount: what a reader is shown of a clause, from its typed failures.
func TestClauseAccount(t *testing.T) {
	f := Failure{Rule: "retry", Quote: `canon §4.2 retry: "…"`, Expected: "retried", Got: "dead", Wire: []string{"EVALSHA x"}}
	failed := Clause{Status: StatusFail, Failures: []Failure{f, {Got: "the clause timed out after 1m0s"}}}
	if got, want := failed.Message(), "RULE:     canon §4.2 retry: \"…\"\nEXPECTED: retried\nGOT:      dead\nWIRE:\n  EVALSHA x\nthe clause timed out after 1m0s"; got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
	if failed.Rule() != f.Quote || !failed.Failed() || !failed.Ran() {
		t.Errorf("rule %q, failed %v, ran %v", failed.Rule(), failed.Failed(), failed.Ran())
	}
	harness := Clause{Status: StatusHarnessError, Reason: "no Valkey"}
	if harness.Message() != "HARNESS ERROR: no Valkey" || harness.Rule() != "the harness could not run this clause" {
		t.Errorf("harness error: %q, %q", harness.Message(), harness.Rule())
	}
	notRun := Clause{Status: StatusNotRun, Reason: "needs a server"}
	if notRun.Ran() || notRun.Failed() || notRun.Message() != "needs a server" {
		t.Errorf("not run: ran %v, failed %v, %q", notRun.Ran(), notRun.Failed(), notRun.Message())
	}
	b, err := json.Marshal(Clause{ID: "C01/fence/a", Status: StatusPass, Hello: &protocol.HelloResult{Name: "x"}})
	if err != nil || !strings.Contains(string(b), `"verdict":"PASS"`) || strings.Contains(string(b), `"x"`) {
		t.Errorf("json %s (%v): the verdict by name, the clause's hello left out", b, err)
	}
}

func TestContractID(t *testing.T) {
	if ContractID("C09/retry/backoff-parks-in-scheduled") != "C09" || ContractID("C09") != "C09" {
		t.Error("ContractID")
	}
}

// TestRecordSettles: a clause's verdict is what its harness decided, the gravest first, or how
// it ended when the harness decided nothing.
func TestRecordSettles(t *testing.T) {
	fail := &Failure{Rule: "retry", Quote: "q", Expected: "e", Got: "g"}
	decided := func(st Status, reason string, f *Failure) *Record {
		r := NewRecord("C09/retry/x")
		r.Decide(st, reason, f)
		return r
	}
	for _, c := range []struct {
		name   string
		r      *Record
		e      Ending
		want   Status
		reason string
		got0   string
	}{
		{"returned, nothing decided", NewRecord("C09/retry/x"), Ending{}, StatusPass, "", ""},
		{"a failed check", decided(StatusFail, "", fail), Ending{}, StatusFail, "", "g"},
		{"not claimed", decided(StatusNotClaimed, "the port does not claim C09", nil), Ending{}, StatusNotClaimed, "the port does not claim C09", ""},
		{"timed out after a failure", decided(StatusFail, "", fail), Ending{TimedOut: time.Minute}, StatusFail, "", "the clause timed out after 1m0s"},
		{"a panic outranks all", decided(StatusFail, "", fail), Ending{Panicked: "boom"}, StatusHarnessError, "the harness panicked: boom", "g"},
		{"interrupted, nothing decided", NewRecord("C09/retry/x"), Ending{Interrupted: true}, StatusFail, "", "the run was interrupted under the clause"},
	} {
		cl := c.r.Settle(c.e)
		got0 := ""
		if len(cl.Failures) > 0 {
			got0 = cl.Failures[0].Got
		}
		if cl.ID != "C09/retry/x" || cl.Status != c.want || cl.Reason != c.reason || got0 != c.got0 {
			t.Errorf("%s: %s %q, first failure %q; want %s %q, %q", c.name, cl.Status, cl.Reason, got0, c.want, c.reason, c.got0)
		}
	}
	r := decided(StatusFail, "", fail)
	r.Decide(StatusNotClaimed, "later, milder", nil)
	r.Update(func(c *Clause) { c.Rules = []string{"retry"} })
	if cl := r.Settle(Ending{}); cl.Status != StatusFail || cl.Reason != "" || len(cl.Rules) != 1 || !r.Failed() {
		t.Errorf("a milder decision after a failure: %s %q, rules %v", cl.Status, cl.Reason, cl.Rules)
	}
}

// TestTally: verdicts come in any order; a contract is told once all its selected clauses are in,
// and a fail-fast run's unreached clauses say why they did not run.
func TestTally(t *testing.T) {
	var told []string
	ta := NewTally(headings, []string{"C01/fence/a", "C01/fence/b", "C02/mint/a"}, nil, func(c ContractResult) {
		told = append(told, c.ID+" "+c.Status.String())
	})
	ta.Add(Clause{ID: "C01/fence/b", Status: StatusPass})
	if len(told) != 0 || ta.Failed() {
		t.Fatalf("told %v, failed %v, after one of C01's two", told, ta.Failed())
	}
	ta.Add(Clause{ID: "C02/mint/a", Status: StatusFail})
	ta.Add(Clause{ID: "C01/fence/a", Status: StatusPass})
	if strings.Join(told, ", ") != "C02 FAIL, C01 PASS" || !ta.Failed() {
		t.Errorf("told %v, failed %v", told, ta.Failed())
	}
	cls := ta.Clauses([]string{"C01/fence/a", "C01/fence/b", "C01/fence/c", "C02/mint/a"}, true)
	if len(cls) != 4 || cls[0].ID != "C01/fence/a" || cls[2].Status != StatusNotRun || cls[2].Reason != "" {
		t.Errorf("clauses %+v", cls)
	}
	told = nil
	listed := NewTally(headings, []string{"C02/mint/a"}, lists{flaky: []string{"C02/mint/a"}}, func(c ContractResult) {
		told = append(told, c.ID+" "+c.Status.String())
	})
	listed.Add(Clause{ID: "C02/mint/a", Status: StatusFail})
	if strings.Join(told, ", ") != "C02 KNOWN FLAKY" || !listed.Failed() {
		t.Errorf("a listed failure: told %v, failed %v (a fail-fast run stops at it too)", told, listed.Failed())
	}
	stopped := NewTally(headings, []string{"C01/fence/a", "C01/fence/b"}, nil, nil)
	stopped.Add(Clause{ID: "C01/fence/a", Status: StatusFail})
	if cl := stopped.Clauses([]string{"C01/fence/b"}, true)[0]; cl.Status != StatusNotRun || !strings.Contains(cl.Reason, "fail-fast") {
		t.Errorf("an unreached clause of a fail-fast run: %s %q", cl.Status, cl.Reason)
	}
}
