// Package domains derives the inputs of the request fields' domains (contracts/PROTOCOL.md Part
// B, "Fields and their domains") and reads a port's answer to one: every field of every op is
// sent absent, null, of the wrong JSON type, at 0, -1, its minimum, its maximum and one past it,
// empty — each input with the answer the documents give, derived from the field's kind, range,
// requirement and default (protocol.Fields), never from what a port answers. The requests
// travel raw (drivers.Raw): a typed call cannot leave a field out or send null. Sending them and
// judging the keyspace is the contracts' part (contracts/domains.go); this package is pure.
package domains

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// Answer is what the documents say a port answers to one input.
type Answer int

const (
	Accept     Answer = iota // the op runs: no EMQARG, EMQKEY or EMQKIND (a canon refusal such as EMQSTALE may follow)
	RefuseArg                // EMQARG, nothing changed
	RefuseKey                // EMQKEY, nothing changed, before any byte reaches the server
	RefuseKind               // EMQKIND, likewise

	// Misbehaved is no answer of the documents': the port broke the conversation or answered
	// UNSUPPORTED or INTERNAL (Classify only).
	Misbehaved Answer = -1
)

func (a Answer) String() string {
	return [...]string{"accepted", "EMQARG", "EMQKEY", "EMQKIND"}[a]
}

// Input is one value of a field and the answer the documents give to it.
type Input struct {
	Label string
	Raw   json.RawMessage // nil: the field is left out
	Want  Answer
	Rule  rules.Rule
}

// Raw is v as JSON, a value a raw request carries.
func Raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Inputs derives a field's inputs from its domain.
func Inputs(f protocol.Field) []Input {
	var in []Input
	if f.Required || f.When != "" { // a fixture of a When field makes its condition hold
		in = append(in, Input{"absent", nil, RefuseArg, rules.FieldRequired})
	} else {
		in = append(in, Input{"absent", nil, Accept, rules.FieldDefault})
	}
	in = append(in, Input{"null", Raw(nil), RefuseArg, rules.FieldType})
	switch f.Kind {
	case protocol.KindInt:
		in = append(in,
			Input{"a string", Raw(strconv.FormatInt(max(f.Min, 1), 10)), RefuseArg, rules.FieldType},
			Input{"a fraction", json.RawMessage(fmt.Sprintf("%d.5", f.Min)), RefuseArg, rules.FieldType},
			Input{"a boolean", Raw(true), RefuseArg, rules.FieldType},
			Input{"an array", Raw([]int64{max(f.Min, 1)}), RefuseArg, rules.FieldType},
			Input{"an object", Raw(map[string]int64{"n": max(f.Min, 1)}), RefuseArg, rules.FieldType},
			Input{"min in exponent form", json.RawMessage(fmt.Sprintf("%de0", f.Min)), Accept, rules.FieldType},
			Input{"-1", Raw(-1), RefuseArg, rules.FieldRange},
			Input{"min", Raw(f.Min), Accept, rules.FieldRange},
			Input{"max", Raw(f.Max), Accept, rules.FieldRange},
			Input{"max+1", Raw(f.Max + 1), RefuseArg, rules.FieldRange})
		switch {
		case f.Zero != "":
			in = append(in, Input{"0 (" + f.Zero + ")", Raw(0), Accept, rules.FieldRange})
		case f.Min > 0:
			in = append(in, Input{"0", Raw(0), RefuseArg, rules.FieldRange})
		}
		if f.Min > 1 {
			in = append(in, Input{"min-1", Raw(f.Min - 1), RefuseArg, rules.FieldRange})
		}
	case protocol.KindBool:
		in = append(in, Input{"a string", Raw("true"), RefuseArg, rules.FieldType}, Input{"a number", Raw(1), RefuseArg, rules.FieldType},
			Input{"an array", Raw([]bool{false}), RefuseArg, rules.FieldType}, Input{"an object", Raw(map[string]bool{"x": false}), RefuseArg, rules.FieldType})
	default:
		in = append(in, Input{"a number", Raw(5), RefuseArg, rules.FieldType}, Input{"an array", Raw([]string{"x"}), RefuseArg, rules.FieldType},
			Input{"a boolean", Raw(true), RefuseArg, rules.FieldType}, Input{"an object", Raw(map[string]string{"x": "y"}), RefuseArg, rules.FieldType})
	}
	switch f.Kind {
	case protocol.KindKeyType:
		in = append(in, Input{"empty", Raw(""), RefuseKey, rules.FieldEmptyName})
		// Near misses and the deployment's own kinds; then the names a key builder's object, map
		// or class holds beside its types in common runtimes (its queue's name and key prefix,
		// members every object inherits): a builder that tests "is this a member of mine" takes
		// them for types, and every list written from the documents alone misses them.
		for _, bad := range []string{"bogus", "Pending", "pendings", "minter", "bundle", "job ",
			"name", "prefix", "queue", "Name", "Prefix", "constructor", "__proto__", "toString", "valueOf", "hasOwnProperty", "length"} {
			in = append(in, Input{"the type " + strconv.Quote(bad), Raw(bad), RefuseKey, rules.KeyBuilder})
		}
	case protocol.KindName:
		// canon §2.1: 1–64 bytes of a–z 0–9 _ . - ; the edge inside, and one of each way out.
		in = append(in, Input{"empty", Raw(""), RefuseKey, rules.FieldEmptyName},
			Input{"64 bytes", Raw(strings.Repeat("n", 63) + "-"), Accept, rules.KeyBuilder},
			Input{"65 bytes", Raw(strings.Repeat("n", 65)), RefuseKey, rules.KeyBuilder},
			Input{"upper case", Raw("Orders"), RefuseKey, rules.KeyBuilder},
			Input{"non-ASCII", Raw("ordérs"), RefuseKey, rules.KeyBuilder},
			Input{"a brace", Raw("or{ders}"), RefuseKey, rules.KeyBuilder})
	case protocol.KindJobID:
		// canon §3: 14 bytes, a brand and 11 base62 characters.
		in = append(in, Input{"empty", Raw(""), RefuseKey, rules.FieldEmptyName},
			Input{"13 bytes", Raw("JOB0000000001"), RefuseKey, rules.KeyBuilder},
			Input{"15 bytes", Raw("JOB000000000001"), RefuseKey, rules.KeyBuilder},
			Input{"outside base62", Raw("JOB00000000-01"), RefuseKey, rules.KeyBuilder})
	case protocol.KindAddr:
		in = append(in, Input{"empty", Raw(""), RefuseArg, rules.FieldType})
	case protocol.KindB64:
		in = append(in,
			Input{"empty (zero bytes)", Raw(""), Accept, rules.FieldB64},
			Input{"unpadded", Raw("aGk"), RefuseArg, rules.FieldB64},
			Input{"url-safe alphabet", Raw("-_-_"), RefuseArg, rules.FieldB64},
			Input{"a line break inside", Raw("aGVs\nbG8="), RefuseArg, rules.FieldB64},
			Input{"not base64", Raw("*!*!"), RefuseArg, rules.FieldB64},
			Input{"non-ASCII", Raw("aGké"), RefuseArg, rules.FieldB64})
	case protocol.KindString:
		in = append(in, Input{"empty", Raw(""), Accept, rules.FieldType}, Input{"non-ASCII", Raw("échec ✗"), Accept, rules.FieldType})
	}
	return in
}

// ListInputs derives a list field's inputs: the list's own (absent, null, not a list, empty,
// its longest, one too long, an item that is not an object), then every input of every item
// field, sent in a one-item list built on item.
func ListInputs(f protocol.Field, item map[string]any) []Input {
	rep := func(n int) json.RawMessage {
		items := make([]map[string]any, n)
		for i := range items {
			items[i] = item
		}
		return Raw(items)
	}
	in := []Input{
		{"absent", nil, RefuseArg, rules.FieldRequired},
		{"null", Raw(nil), RefuseArg, rules.FieldType},
		{"an object", Raw(item), RefuseArg, rules.FieldType},
		{"a number", Raw(1), RefuseArg, rules.FieldType},
		{"empty", Raw([]any{}), RefuseArg, rules.FieldRange},
		{"max", rep(int(f.Max)), Accept, rules.FieldRange},
		{"max+1", rep(int(f.Max) + 1), RefuseArg, rules.FieldRange},
		{"an item null", Raw([]any{nil}), RefuseArg, rules.FieldType},
	}
	for _, sub := range f.Items {
		for _, si := range Inputs(sub) {
			it := map[string]json.RawMessage{}
			for k, v := range item {
				it[k] = Raw(v)
			}
			delete(it, sub.Name)
			if si.Raw != nil {
				it[sub.Name] = si.Raw
			}
			in = append(in, Input{"[0]." + sub.Name + " " + si.Label, Raw([]any{it}), si.Want, si.Rule})
		}
	}
	return in
}

// Request is base with field set to raw (or left out when raw is nil), every value JSON.
func Request(base map[string]any, field string, raw json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(base)+1)
	for k, v := range base {
		out[k] = Raw(v)
	}
	delete(out, field)
	if raw != nil {
		out[field] = raw
	}
	return out
}

// Classify reads a raw call's outcome as an answer (Misbehaved: the port misbehaved or answered
// UNSUPPORTED/INTERNAL) and a phrase for the report.
func Classify(err error) (Answer, string) {
	var e *emqerr.Error
	switch {
	case err == nil:
		return Accept, "accepted"
	case errors.As(err, &e) && e.Type == emqerr.TypeArg:
		return RefuseArg, err.Error()
	case errors.As(err, &e) && e.Type == emqerr.TypeKey:
		return RefuseKey, err.Error()
	case errors.As(err, &e) && e.Type == emqerr.TypeKind:
		return RefuseKind, err.Error()
	case errors.As(err, &e):
		return Accept, "accepted, then " + err.Error()
	}
	return Misbehaved, err.Error()
}
