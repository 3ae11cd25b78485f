package contracts

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/echomq/kit/contracts/internal/domains"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
)

// The "fields" clauses (contracts/PROTOCOL.md Part B, "Fields and their domains"): every input
// package domains derives for a field is sent raw to the port on the state a fixture makes
// (domains_ops.go), and the answer is judged against the documents' and the keyspace.

// fixture makes the state one request of an op acts on and the request's valid fields.
type fixture struct {
	// base prepares queue q and returns a valid request's fields (seq and op aside).
	base func(t *T, q string) map[string]any
	// consumes: an accepted request uses the state up, so the next one needs a new base.
	consumes bool
	// per replaces base for one field (the key op's id and lane need their key type).
	per map[string]func(t *T, q string) map[string]any
}

// domainSel picks the (op, field) pairs one clause sends.
type domainSel func(op string, f protocol.Field) bool

// fieldDomains sends every input of every selected field of op and returns the mismatches with
// the documents, one line each.
func (t *T) fieldDomains(op string, sel domainSel) []string {
	fx, ok := fixtures[op]
	if !ok {
		t.harness("no fixture for op %s", op)
	}
	var bad []string
	n := 0
	if sel(op, protocol.Field{Name: unknownField}) {
		bad = append(bad, t.unknownFieldIgnored(op, fx)...)
	}
	for _, f := range protocol.Fields[op] {
		if !sel(op, f) {
			continue
		}
		mk := fx.base
		if p, ok := fx.per[f.Name]; ok {
			mk = p
		}
		fresh := func() (map[string]any, map[string]string) {
			n++
			b := mk(t, fmt.Sprintf("fd%d", n))
			return b, t.snapshot()
		}
		base, before := fresh()
		ins := domains.Inputs(f)
		if f.Kind == protocol.KindList {
			ins = domains.ListInputs(f, base[f.Name].([]map[string]any)[0])
		}
		for _, in := range ins {
			t.cover(in.Rule)
			req := domains.Request(base, f.Name, in.Raw)
			m := t.mark()
			_, err := drivers.Raw(t.ctx, t.D, op, req)
			if miss := t.judge(in, err, m, before); miss != "" {
				bad = append(bad, fmt.Sprintf("[%s] %s %s %s: %s", in.Rule.ID, op, f.Name, in.Label, miss))
				base, before = fresh()
				continue
			}
			if in.Want == domains.Accept && fx.consumes {
				base, before = fresh()
			} else if in.Want == domains.Accept {
				before = t.snapshot()
			}
		}
	}
	return bad
}

// unknownField is a field no op lists; an op's owner sends it, then unknownNames, once each
// (PROTOCOL.md: ignored, whatever its name).
const unknownField = "x_not_in_the_table"

// unknownNames are unlisted field names that a port's own language may already give every
// object or map it parses a request into (a JavaScript object's undefined key, its prototype
// and constructor, a method name): a port that reads its field table or the request through
// them answers an unlisted field as if it were listed.
var unknownNames = []string{"undefined", "__proto__", "constructor", "toString"}

// unknownFieldIgnored sends op's valid request with a field the op does not list, under each
// name: the port answers as if it were not there.
func (t *T) unknownFieldIgnored(op string, fx fixture) []string {
	t.cover(rules.FieldUnknown)
	var bad []string
	for i, name := range append([]string{unknownField}, unknownNames...) {
		req := domains.Request(fx.base(t, fmt.Sprintf("fdx%d", i)), name, domains.Raw(1))
		_, err := drivers.Raw(t.ctx, t.D, op, req)
		if got, text := domains.Classify(err); got != domains.Accept {
			bad = append(bad, fmt.Sprintf("[%s] %s with the unknown field %s: the field is ignored, got %s", rules.FieldUnknown.ID, op, name, text))
		}
	}
	return bad
}

// judge compares a port's answer with the documents' and returns the mismatch ("" when none): a
// refusal must be the documented type and change nothing, an EMQKEY or EMQKIND must come before
// any byte reaches the server, an accepted input must not be refused as out of its domain.
func (t *T) judge(in domains.Input, err error, mark int, before map[string]string) string {
	return t.judgeOn(in, err, mark, before, nil)
}

// judgeOn is judge with the snapshots passed through view first (nil: as they are).
func (t *T) judgeOn(in domains.Input, err error, mark int, before map[string]string, view func(map[string]string) map[string]string) string {
	got, gotText := domains.Classify(err)
	want := in.Want
	switch {
	case got == domains.Misbehaved:
		return "expected " + want.String() + ", the port misbehaved: " + gotText
	case want == domains.Accept && got != domains.Accept:
		return "a value inside the field's domain was refused: " + gotText
	case want != domains.Accept && got != want:
		return "expected " + want.String() + ", got " + gotText
	case want == domains.Accept:
		return ""
	}
	after := t.snapshot()
	if view != nil {
		before, after = view(maps.Clone(before)), view(after)
	}
	if d := diff(before, after); d != "" {
		return "refused " + want.String() + " but changed the keyspace: " + d
	}
	if want == domains.RefuseKey || want == domains.RefuseKind {
		if ls := t.portCommands(mark); len(ls) > 0 {
			return fmt.Sprintf("refused %s after %d command(s) reached the server (the key builder refuses before any byte)", want, len(ls))
		}
	}
	return ""
}

// domainsFail fails the clause listing every mismatch, under the rule of the first one.
func (t *T) domainsFail(bad []string) {
	if len(bad) == 0 {
		return
	}
	id := strings.TrimPrefix(strings.SplitN(bad[0], "]", 2)[0], "[")
	rule := rules.FieldType
	for _, r := range rules.Fields() {
		if r.ID == id {
			rule = r
		}
	}
	t.fail(rule, "every input of every field answered as contracts/PROTOCOL.md Part B \"Fields and their domains\" says",
		fmt.Sprintf("%d input(s) answered otherwise:\n  %s", len(bad), strings.Join(bad, "\n  ")))
}

// fieldGroup is some ops and the fields of theirs a contract owns.
type fieldGroup struct {
	ops []string
	sel domainSel
}

// fieldsClause is the clause "fields" of a contract: the inputs of the fields it owns.
func fieldsClause(groups ...fieldGroup) clause {
	return clause{name: "fields", body: fieldGroups(groups).answeredAsTheTableSays}
}

// fieldGroups are the fields a contract owns.
type fieldGroups []fieldGroup

// answeredAsTheTableSays sends every input of every field of the groups and checks the answers.
func (groups fieldGroups) answeredAsTheTableSays(t *T) {
	var bad []string
	for _, g := range groups {
		for _, op := range g.ops {
			if op == "clock" && !slices.Contains(t.Hello.Capabilities, protocol.CapClock) ||
				slices.Contains(protocol.BatchOps, op) && !slices.Contains(t.Hello.Capabilities, protocol.CapBatch) {
				continue // a test aid or an optional op the port does not offer
			}
			bad = append(bad, t.fieldDomains(op, g.sel)...)
		}
	}
	t.domainsFail(bad)
}

// namedOps are the ops with a queue, lane or job id field.
var namedOps = []string{"key", "enqueue", "claim", "lane_claim", "extend", "complete", "retry", "fail", "checkpoint",
	"reap", "promote", "morgue", "revive", "purge", "pause", "resume", "lane_pause", "lane_resume", "lane_ceiling", "park",
	"enqueue_batch", "claim_batch", "complete_batch"}

// fencedOps are the ops that name (id, token).
var fencedOps = []string{"extend", "complete", "retry", "fail", "checkpoint"}

// nameField tells the fields C04 owns in every op: queue and lane names and job ids.
func nameField(_ string, f protocol.Field) bool {
	return f.Kind == protocol.KindName || f.Kind == protocol.KindJobID || f.Kind == protocol.KindKeyType
}

// ownField selects, for an op's owner, every field but the names (C04's) and the token (C07's).
func ownField(_ string, f protocol.Field) bool { return !nameField("", f) && f.Name != "token" }

// tokenField selects the fencing token.
func tokenField(_ string, f protocol.Field) bool { return f.Name == "token" }
