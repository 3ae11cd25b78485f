package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// Input domains (contracts/PROTOCOL.md Part B, "Fields and their domains"): every field of every
// op is sent absent, null, of the wrong JSON type, at 0, -1, its minimum, its maximum and one
// past it, empty — each input with the answer the documents give, derived from the field's
// kind, range, requirement and default (protocol.Fields), never from what a port answers. The
// requests travel raw (drivers.Raw): a typed call cannot leave a field out or send null.

// domainAnswer is what the documents say a port answers to one input.
type domainAnswer int

const (
	accept     domainAnswer = iota // the op runs: no EMQARG, EMQKEY or EMQKIND (a canon refusal such as EMQSTALE may follow)
	refuseArg                      // EMQARG, nothing changed
	refuseKey                      // EMQKEY, nothing changed, before any byte reaches the server
	refuseKind                     // EMQKIND, likewise
)

func (a domainAnswer) String() string {
	return [...]string{"accepted", "EMQARG", "EMQKEY", "EMQKIND"}[a]
}

// input is one value of a field and the answer the documents give to it.
type input struct {
	label string
	raw   json.RawMessage // nil: the field is left out
	want  domainAnswer
	rule  Rule
}

func rawOf(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// inputsOf derives a field's inputs from its domain.
func inputsOf(f protocol.Field) []input {
	var in []input
	if f.Required || f.When != "" { // a fixture of a When field makes its condition hold
		in = append(in, input{"absent", nil, refuseArg, ruleFieldRequired})
	} else {
		in = append(in, input{"absent", nil, accept, ruleFieldDefault})
	}
	in = append(in, input{"null", rawOf(nil), refuseArg, ruleFieldType})
	switch f.Kind {
	case protocol.KindInt:
		in = append(in,
			input{"a string", rawOf(strconv.FormatInt(max(f.Min, 1), 10)), refuseArg, ruleFieldType},
			input{"a fraction", json.RawMessage(fmt.Sprintf("%d.5", f.Min)), refuseArg, ruleFieldType},
			input{"a boolean", rawOf(true), refuseArg, ruleFieldType},
			input{"an array", rawOf([]int64{max(f.Min, 1)}), refuseArg, ruleFieldType},
			input{"an object", rawOf(map[string]int64{"n": max(f.Min, 1)}), refuseArg, ruleFieldType},
			input{"min in exponent form", json.RawMessage(fmt.Sprintf("%de0", f.Min)), accept, ruleFieldType},
			input{"-1", rawOf(-1), refuseArg, ruleFieldRange},
			input{"min", rawOf(f.Min), accept, ruleFieldRange},
			input{"max", rawOf(f.Max), accept, ruleFieldRange},
			input{"max+1", rawOf(f.Max + 1), refuseArg, ruleFieldRange})
		switch {
		case f.Zero != "":
			in = append(in, input{"0 (" + f.Zero + ")", rawOf(0), accept, ruleFieldRange})
		case f.Min > 0:
			in = append(in, input{"0", rawOf(0), refuseArg, ruleFieldRange})
		}
		if f.Min > 1 {
			in = append(in, input{"min-1", rawOf(f.Min - 1), refuseArg, ruleFieldRange})
		}
	case protocol.KindBool:
		in = append(in, input{"a string", rawOf("true"), refuseArg, ruleFieldType}, input{"a number", rawOf(1), refuseArg, ruleFieldType},
			input{"an array", rawOf([]bool{false}), refuseArg, ruleFieldType}, input{"an object", rawOf(map[string]bool{"x": false}), refuseArg, ruleFieldType})
	default:
		in = append(in, input{"a number", rawOf(5), refuseArg, ruleFieldType}, input{"an array", rawOf([]string{"x"}), refuseArg, ruleFieldType},
			input{"a boolean", rawOf(true), refuseArg, ruleFieldType}, input{"an object", rawOf(map[string]string{"x": "y"}), refuseArg, ruleFieldType})
	}
	switch f.Kind {
	case protocol.KindKeyType:
		in = append(in, input{"empty", rawOf(""), refuseKey, ruleFieldEmptyName})
		for _, bad := range []string{"bogus", "Pending", "pendings", "minter", "bundle", "job "} {
			in = append(in, input{"the type " + strconvQuote(bad), rawOf(bad), refuseKey, ruleKeyBuilder})
		}
	case protocol.KindName:
		// canon §2.1: 1–64 bytes of a–z 0–9 _ . - ; the edge inside, and one of each way out.
		in = append(in, input{"empty", rawOf(""), refuseKey, ruleFieldEmptyName},
			input{"64 bytes", rawOf(strings.Repeat("n", 63) + "-"), accept, ruleKeyBuilder},
			input{"65 bytes", rawOf(strings.Repeat("n", 65)), refuseKey, ruleKeyBuilder},
			input{"upper case", rawOf("Orders"), refuseKey, ruleKeyBuilder},
			input{"non-ASCII", rawOf("ordérs"), refuseKey, ruleKeyBuilder},
			input{"a brace", rawOf("or{ders}"), refuseKey, ruleKeyBuilder})
	case protocol.KindJobID:
		// canon §3: 14 bytes, a brand and 11 base62 characters.
		in = append(in, input{"empty", rawOf(""), refuseKey, ruleFieldEmptyName},
			input{"13 bytes", rawOf("JOB0000000001"), refuseKey, ruleKeyBuilder},
			input{"15 bytes", rawOf("JOB000000000001"), refuseKey, ruleKeyBuilder},
			input{"outside base62", rawOf("JOB00000000-01"), refuseKey, ruleKeyBuilder})
	case protocol.KindAddr:
		in = append(in, input{"empty", rawOf(""), refuseArg, ruleFieldType})
	case protocol.KindB64:
		in = append(in,
			input{"empty (zero bytes)", rawOf(""), accept, ruleFieldB64},
			input{"unpadded", rawOf("aGk"), refuseArg, ruleFieldB64},
			input{"url-safe alphabet", rawOf("-_-_"), refuseArg, ruleFieldB64},
			input{"a line break inside", rawOf("aGVs\nbG8="), refuseArg, ruleFieldB64},
			input{"not base64", rawOf("*!*!"), refuseArg, ruleFieldB64},
			input{"non-ASCII", rawOf("aGké"), refuseArg, ruleFieldB64})
	case protocol.KindString:
		in = append(in, input{"empty", rawOf(""), accept, ruleFieldType}, input{"non-ASCII", rawOf("échec ✗"), accept, ruleFieldType})
	}
	return in
}

// listInputs derives a list field's inputs: the list's own (absent, null, not a list, empty,
// its longest, one too long, an item that is not an object), then every input of every item
// field, sent in a one-item list built on item.
func listInputs(f protocol.Field, item map[string]any) []input {
	rep := func(n int) json.RawMessage {
		items := make([]map[string]any, n)
		for i := range items {
			items[i] = item
		}
		return rawOf(items)
	}
	in := []input{
		{"absent", nil, refuseArg, ruleFieldRequired},
		{"null", rawOf(nil), refuseArg, ruleFieldType},
		{"an object", rawOf(item), refuseArg, ruleFieldType},
		{"a number", rawOf(1), refuseArg, ruleFieldType},
		{"empty", rawOf([]any{}), refuseArg, ruleFieldRange},
		{"max", rep(int(f.Max)), accept, ruleFieldRange},
		{"max+1", rep(int(f.Max) + 1), refuseArg, ruleFieldRange},
		{"an item null", rawOf([]any{nil}), refuseArg, ruleFieldType},
	}
	for _, sub := range f.Items {
		for _, si := range inputsOf(sub) {
			it := map[string]json.RawMessage{}
			for k, v := range item {
				it[k] = rawOf(v)
			}
			delete(it, sub.Name)
			if si.raw != nil {
				it[sub.Name] = si.raw
			}
			in = append(in, input{"[0]." + sub.Name + " " + si.label, rawOf([]any{it}), si.want, si.rule})
		}
	}
	return in
}

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
		ins := inputsOf(f)
		if f.Kind == protocol.KindList {
			ins = listInputs(f, base[f.Name].([]map[string]any)[0])
		}
		for _, in := range ins {
			t.cover(in.rule)
			req := rawRequest(base, f.Name, in.raw)
			m := t.mark()
			_, err := drivers.Raw(t.ctx, t.D, op, req)
			if miss := t.judge(in, err, m, before); miss != "" {
				bad = append(bad, fmt.Sprintf("[%s] %s %s %s: %s", in.rule.ID, op, f.Name, in.label, miss))
				base, before = fresh()
				continue
			}
			if in.want == accept && fx.consumes {
				base, before = fresh()
			} else if in.want == accept {
				before = t.snapshot()
			}
		}
	}
	return bad
}

func strconvQuote(s string) string { return strconv.Quote(s) }

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
	t.cover(ruleFieldUnknown)
	var bad []string
	for i, name := range append([]string{unknownField}, unknownNames...) {
		req := rawRequest(fx.base(t, fmt.Sprintf("fdx%d", i)), name, rawOf(1))
		_, err := drivers.Raw(t.ctx, t.D, op, req)
		if got, text := classify(err); got != accept {
			bad = append(bad, fmt.Sprintf("[%s] %s with the unknown field %s: the field is ignored, got %s", ruleFieldUnknown.ID, op, name, text))
		}
	}
	return bad
}

// rawRequest is base with field set to raw (or left out when raw is nil), every value JSON.
func rawRequest(base map[string]any, field string, raw json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(base)+1)
	for k, v := range base {
		out[k] = rawOf(v)
	}
	delete(out, field)
	if raw != nil {
		out[field] = raw
	}
	return out
}

// judge compares a port's answer with the documents' and returns the mismatch ("" when none): a
// refusal must be the documented type and change nothing, an EMQKEY or EMQKIND must come before
// any byte reaches the server, an accepted input must not be refused as out of its domain.
func (t *T) judge(in input, err error, mark int, before map[string]string) string {
	return t.judgeOn(in, err, mark, before, nil)
}

// judgeOn is judge with the snapshots passed through view first (nil: as they are).
func (t *T) judgeOn(in input, err error, mark int, before map[string]string, view func(map[string]string) map[string]string) string {
	got, gotText := classify(err)
	want := in.want
	switch {
	case got == -1:
		return "expected " + want.String() + ", the port misbehaved: " + gotText
	case want == accept && got != accept:
		return "a value inside the field's domain was refused: " + gotText
	case want != accept && got != want:
		return "expected " + want.String() + ", got " + gotText
	case want == accept:
		return ""
	}
	after := t.snapshot()
	if view != nil {
		before, after = view(maps.Clone(before)), view(after)
	}
	if d := diff(before, after); d != "" {
		return "refused " + want.String() + " but changed the keyspace: " + d
	}
	if want == refuseKey || want == refuseKind {
		if ls := t.portCommands(mark); len(ls) > 0 {
			return fmt.Sprintf("refused %s after %d command(s) reached the server (the key builder refuses before any byte)", want, len(ls))
		}
	}
	return ""
}

// classify reads a raw call's outcome as an answer (-1: the port misbehaved or answered
// UNSUPPORTED/INTERNAL) and a phrase for the report.
func classify(err error) (domainAnswer, string) {
	var e *emqerr.Error
	switch {
	case err == nil:
		return accept, "accepted"
	case errors.As(err, &e) && e.Type == emqerr.TypeArg:
		return refuseArg, err.Error()
	case errors.As(err, &e) && e.Type == emqerr.TypeKey:
		return refuseKey, err.Error()
	case errors.As(err, &e) && e.Type == emqerr.TypeKind:
		return refuseKind, err.Error()
	case errors.As(err, &e):
		return accept, "accepted, then " + err.Error()
	}
	return -1, err.Error()
}

// domainsFail fails the clause listing every mismatch, under the rule of the first one.
func (t *T) domainsFail(bad []string) {
	if len(bad) == 0 {
		return
	}
	id := strings.TrimPrefix(strings.SplitN(bad[0], "]", 2)[0], "[")
	rule := ruleFieldType
	for _, r := range rulesDomains {
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
