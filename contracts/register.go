package contracts

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
)

// Register defines the fourteen contracts' specs for cfg. Call it once, before RunSpecs. One
// top-level container keeps the canon's order (Ginkgo shuffles only top-level containers).
func Register(cfg *Config) bool {
	_, ok := register(cfg, nil)
	return ok
}

// register is Register, returning the ledger the clauses write their verdicts to; first (nil:
// none) picks the clauses that run before the others.
func register(cfg *Config, first func(id string) bool) (*ledger, bool) {
	led := newLedger()
	led.first = first
	ok := Describe("EchoMQ conformance", func() {
		for _, c := range all {
			Describe(c.Title(), Label(c.ID), func() { define(spec{cfg: cfg, c: c, led: led}) })
		}
	})
	return led, ok
}

// define declares one contract's clauses: its own, then its model-checked walks (so clause ids
// stay stable).
func define(sp spec) {
	sp.c.specs(sp)
	for _, w := range walks() {
		if w.contract == sp.c.ID {
			sp.clause(w.name, clauseOpts{}, w.body)
		}
	}
}

// spec registers one contract's clauses, or (collect set) only lists their ids.
type spec struct {
	cfg     *Config
	c       Contract
	led     *ledger
	collect *[]string
}

// Clauses lists every clause id of a run (against a Valkey Cluster, or not: C01 differs) in the
// order the contracts declare them: the order of every report. It runs and registers nothing.
func Clauses(cluster bool) []string {
	cfg := &Config{}
	if cluster {
		cfg.Cluster = []string{""}
	}
	var ids []string
	for _, c := range all {
		define(spec{cfg: cfg, c: c, collect: &ids})
	}
	return ids
}

// ErrNoClause: the selection (-label, -focus) matches no clause.
var ErrNoClause = errors.New("contracts: no clause matches the selection")

// Select lists the clauses labels and focus pick, in declaration order: a clause of one of the
// labelled contracts (all when labels is empty) whose id, or whose text as Ginkgo has it
// ("EchoMQ conformance <contract title> <clause id>"), matches one of the focus regular
// expressions (any when focus is empty). None picked is ErrNoClause.
func Select(cluster bool, labels, focus []string) ([]string, error) {
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
	var out []string
	for _, id := range Clauses(cluster) {
		c, _ := Lookup(contractOf(id))
		if len(labels) > 0 && !slices.ContainsFunc(labels, func(l string) bool { return strings.EqualFold(l, c.ID) }) {
			continue
		}
		text := "EchoMQ conformance " + c.Title() + " " + id
		if len(res) > 0 && !slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(id) || re.MatchString(text) }) {
			continue
		}
		out = append(out, id)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w (label %v, focus %v; emq-conform -list shows the clauses)", ErrNoClause, labels, focus)
	}
	return out, nil
}
