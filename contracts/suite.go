package contracts

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/echomq/kit/contracts/verdict"
)

// The suite is a table: each contract lists its clauses, each clause a row naming what it checks
// (a top-level function, or a method value for a family of clauses built from one check). Listing
// and selecting read the table; nothing is registered or run to learn a clause id.

// clause is one row of a contract's table.
type clause struct {
	// name is the last part of the clause id: "C07/stale/<name>".
	name string
	// body is what the clause checks, in a fresh world (T); the harness then checks the keyspace
	// and the wire law.
	body func(t *T)
	// noHello: the clause says hello itself (C01's refusals).
	noHello bool
	// only restricts the clause to runs against one kind of server (C01's mode refusals).
	only topology
	// wallClock: the clause's session is one whose port's wall clock the kit sets (t.wall),
	// starting wallStep behind; NOT RUN (not offered) where the kit cannot.
	wallClock bool
}

// topology is the kind of server a run is against.
type topology uint8

const (
	anyServer      topology = iota
	standaloneOnly          // a standalone Valkey
	clusterOnly             // a Valkey Cluster
)

// planned is a clause of a run: its row, its contract and its id.
type planned struct {
	clause
	contract *Contract
	id       string
}

// plan lists the clauses of a run against a Valkey Cluster, or not (C01 differs), in declaration
// order: the order of every report.
func plan(cluster bool) []planned {
	var out []planned
	for i := range all {
		c := &all[i]
		for _, cl := range c.clauses {
			if cl.only == standaloneOnly && cluster || cl.only == clusterOnly && !cluster {
				continue
			}
			out = append(out, planned{clause: cl, contract: c, id: c.ID + "/" + c.slug() + "/" + cl.name})
		}
	}
	return out
}

// Clauses lists every clause id of a run (against a Valkey Cluster, or not: C01 differs) in the
// order the contracts declare them: the order of every report.
func Clauses(cluster bool) []string { return idsOf(plan(cluster)) }

// idsOf are the planned clauses' ids.
func idsOf(ps []planned) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.id
	}
	return out
}

// ErrNoClause: the selection (-label, -focus) matches no clause.
var ErrNoClause = errors.New("contracts: no clause matches the selection")

// Select lists the clauses labels and focus pick, in declaration order: a clause of one of the
// labelled contracts (all when labels is empty) whose id, or whose text as Ginkgo has it
// ("EchoMQ conformance <contract title> <clause id>"), matches one of the focus regular
// expressions (any when focus is empty). None picked is ErrNoClause.
func Select(cluster bool, labels, focus []string) ([]string, error) {
	ps, err := selected(cluster, labels, focus)
	return idsOf(ps), err
}

// IDPattern is a regular expression, as -focus and -first take, matching exactly these clause
// ids.
func IDPattern(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = regexp.QuoteMeta(id)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// selected is Select's clauses, planned.
func selected(cluster bool, labels, focus []string) ([]planned, error) {
	for _, l := range labels {
		if _, err := ParseID(l); err != nil {
			return nil, err
		}
	}
	var res []*regexp.Regexp
	for _, f := range focus {
		re, err := regexp.Compile(f)
		if err != nil {
			return nil, fmt.Errorf("contracts: focus %q: %w", f, err)
		}
		res = append(res, re)
	}
	var out []planned
	for _, p := range plan(cluster) {
		c := p.contract
		if len(labels) > 0 && !slices.ContainsFunc(labels, func(l string) bool { return strings.EqualFold(l, c.ID) }) {
			continue
		}
		text := "EchoMQ conformance " + c.Title() + " " + p.id
		if len(res) > 0 && !slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(p.id) || re.MatchString(text) }) {
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w (label %v, focus %v; emq-conform -list shows the clauses)", ErrNoClause, labels, focus)
	}
	return out, nil
}

// Headings are the fourteen contracts as results with no clause yet, in canon order: what
// verdict.Summarize folds a run's clauses into.
func Headings() []verdict.ContractResult {
	var out []verdict.ContractResult
	for _, c := range all {
		out = append(out, verdict.ContractResult{ID: c.ID, Name: c.Name, Rule: c.Rule})
	}
	return out
}
