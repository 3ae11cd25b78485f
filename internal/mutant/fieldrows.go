package mutant

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// Field-row mutants: one defect of the port's JSON layer per row of PROTOCOL.md Part B's fields
// table, generated from protocol.Fields (the table's source), so that each row's sentence is
// broken by a mutant of its own and a clause blind to one row cannot hide behind another's kill.
// They touch raw requests only (jsonFront): the typed ops the other clauses send pass through,
// so the kill comes from the fields clause that owns the row.
var fieldRowMutants = fieldRows()

// fieldOwner is the contract whose fields clause sends an op's own fields (contracts/domains.go);
// names and ids are C04's in every op, and the fencing token C07's.
var fieldOwner = map[string]string{
	"hello": "C01", "mint": "C02", "enqueue": "C02", "enqueue_batch": "C02", "key": "C04", "slot": "C04",
	"clock": "C05", "claim": "C06", "claim_batch": "C06", "extend": "C07", "complete_batch": "C08",
	"retry": "C09", "promote": "C09", "fail": "C10", "morgue": "C10", "checkpoint": "C11", "reap": "C11",
	"lane_claim": "C12", "lane_ceiling": "C13", "park": "C14",
}

func ownerOf(op string, f protocol.Field, item bool) string {
	switch {
	case item:
		return fieldOwner[op]
	case f.Kind == protocol.KindName || f.Kind == protocol.KindJobID || f.Kind == protocol.KindKeyType:
		return "C04"
	case f.Name == "token":
		return "C07"
	}
	return fieldOwner[op]
}

// FieldRowName is the name of the field-row mutant of family for op's field (an item field of a
// list as "jobs.id").
func FieldRowName(family, op, field string) string {
	return "json-" + family + "-" + strings.NewReplacer("_", "-", ".", "-").Replace(op+"-"+field)
}

// fieldRows generates the families, op by op in name order.
func fieldRows() []Spec {
	var out []Spec
	for _, op := range slices.Sorted(maps.Keys(protocol.Fields)) {
		for _, f := range protocol.Fields[op] {
			out = append(out, rowSpecs(op, f, "", false)...)
			for _, it := range f.Items {
				out = append(out, rowSpecs(op, it, f.Name, true)...)
			}
		}
	}
	return out
}

// rowSpecs are the mutants of one field: list is the list field an item field belongs to.
func rowSpecs(op string, f protocol.Field, list string, item bool) []Spec {
	name, shown := f.Name, f.Name
	if item {
		name, shown = list+"."+f.Name, list+"[]."+f.Name
	}
	spec := func(family, rule, defect string, fix func(string, json.RawMessage) (json.RawMessage, bool, error)) Spec {
		return Spec{Name: FieldRowName(family, op, name), Contract: ownerOf(op, f, item), Rule: rule,
			Defect: fmt.Sprintf("%s's %s %s", op, shown, defect), Go: jsonWrap(onField(op, list, f.Name, fix))}
	}
	var out []Spec
	switch {
	case olderMutant[FieldRowName("absent", op, name)]:
	case f.Required || f.When != "":
		out = append(out, spec("absent", "field-required", "is read, when absent, as "+absentText(f)+" instead of EMQARG", absentFix(op, f)))
	case !olderMutant[FieldRowName("default-refused", op, name)]:
		out = append(out, spec("default-refused", "field-default", "is refused EMQARG when absent instead of taking its default ("+f.Absent+f.Default+")",
			func(_ string, v json.RawMessage) (json.RawMessage, bool, error) {
				if v == nil {
					return nil, false, argErr(shown + " is absent (required by the mutant)")
				}
				return nil, false, nil
			}))
	}
	switch f.Kind {
	case protocol.KindInt, protocol.KindList:
		out = append(out, spec("below", "field-range", "below its range is raised to its minimum instead of EMQARG", belowFix(op, f)))
	case protocol.KindName, protocol.KindJobID:
		out = append(out, spec("lax", "key-builder", "outside canon's grammar is made into a valid one (cleaned, padded or cut) instead of EMQKEY", laxFix(f)))
	case protocol.KindString, protocol.KindB64:
		out = append(out, spec("empty-refused", map[protocol.Kind]string{protocol.KindString: "field-type", protocol.KindB64: "field-b64"}[f.Kind],
			"is refused EMQARG when empty, which its domain admits", func(_ string, v json.RawMessage) (json.RawMessage, bool, error) {
				if string(v) == `""` {
					return nil, false, argErr(shown + " is empty (refused by the mutant)")
				}
				return nil, false, nil
			}))
	case protocol.KindAddr:
		out = append(out, spec("empty-dialled", "field-type", "is dialled when empty (host \"\", port 0) instead of EMQARG",
			func(_ string, v json.RawMessage) (json.RawMessage, bool, error) {
				if string(v) == `""` {
					return absentValue(f), false, nil
				}
				return nil, false, nil
			}))
	case protocol.KindBool:
		out = append(out, spec("loose", "field-type", "that is not a boolean is read as false instead of EMQARG",
			func(_ string, v json.RawMessage) (json.RawMessage, bool, error) {
				if v != nil && string(v) != "true" && string(v) != "false" {
					return json.RawMessage("false"), false, nil
				}
				return nil, false, nil
			}))
	case protocol.KindKeyType:
		out = append(out, spec("empty-as-pending", "field-empty-name", "is read, when empty, as pending instead of EMQKEY",
			func(_ string, v json.RawMessage) (json.RawMessage, bool, error) {
				if string(v) == `""` {
					return json.RawMessage(`"pending"`), false, nil
				}
				return nil, false, nil
			}))
	}
	return out
}

// olderMutant names the field-row mutants whose defect an older mutant of jsonfront.go already
// is (json-ceiling-absent-zero, json-retry-delay-optional, json-parallel-required).
var olderMutant = map[string]bool{
	FieldRowName("absent", "lane_ceiling", "ceiling"):   true,
	FieldRowName("absent", "retry", "delay_ms"):         true,
	FieldRowName("default-refused", "mint", "parallel"): true,
}

// onField applies fix to the field of op (to every item's when list names a list field): fix
// returns the field's new value (nil: leave it as it is), or, with done, a reply the request
// gets in place of the op's, or an error.
func onField(op, list, field string, fix func(op string, v json.RawMessage) (json.RawMessage, bool, error)) func(string, map[string]json.RawMessage) (json.RawMessage, error) {
	apply := func(m map[string]json.RawMessage) (json.RawMessage, error) {
		nv, done, err := fix(op, m[field])
		if err != nil || done {
			return nv, err
		}
		if nv != nil {
			m[field] = nv
		}
		return nil, nil
	}
	return func(o string, f map[string]json.RawMessage) (json.RawMessage, error) {
		if o != op {
			return nil, nil
		}
		if list == "" {
			return apply(f)
		}
		var items []map[string]json.RawMessage
		if json.Unmarshal(f[list], &items) != nil {
			return nil, nil // not a list of objects: the port's own checks answer it
		}
		for _, it := range items {
			if it == nil {
				return nil, nil
			}
			if r, err := apply(it); r != nil || err != nil {
				return r, err
			}
		}
		f[list], _ = json.Marshal(items)
		return nil, nil
	}
}

func argErr(msg string) error { return &emqerr.Error{Type: emqerr.TypeArg, Message: msg} }

// emptyBatch is the reply of a batch op that had nothing to do.
var emptyBatch = map[string]json.RawMessage{"enqueue_batch": json.RawMessage(`{"jobs":[]}`), "complete_batch": json.RawMessage(`{"results":[]}`)}

// absentValue is what a port that defaults a required field reads its absence as: a value of
// the field's domain (an empty address dials nowhere; an absent list is an empty batch).
func absentValue(f protocol.Field) json.RawMessage {
	switch f.Kind {
	case protocol.KindName:
		return json.RawMessage(`"default"`)
	case protocol.KindJobID:
		return json.RawMessage(`"` + ids.Encode(ids.BrandJob, 1<<40) + `"`)
	case protocol.KindKeyType:
		return json.RawMessage(`"pending"`)
	case protocol.KindInt:
		return json.RawMessage(fmt.Sprint(f.Min))
	case protocol.KindAddr:
		return json.RawMessage(`":0"`)
	}
	return json.RawMessage(`""`)
}

func absentText(f protocol.Field) string {
	if f.Kind == protocol.KindList {
		return "an empty batch (answered empty)"
	}
	return string(absentValue(f))
}

func absentFix(op string, f protocol.Field) func(string, json.RawMessage) (json.RawMessage, bool, error) {
	return func(_ string, v json.RawMessage) (json.RawMessage, bool, error) {
		switch {
		case v != nil:
			return nil, false, nil
		case f.Kind == protocol.KindList:
			return emptyBatch[op], true, nil
		}
		return absentValue(f), false, nil
	}
}

// belowFix raises an integer under the field's minimum to it; a list under its minimum (empty)
// is an empty batch, answered empty.
func belowFix(op string, f protocol.Field) func(string, json.RawMessage) (json.RawMessage, bool, error) {
	return func(_ string, v json.RawMessage) (json.RawMessage, bool, error) {
		if f.Kind == protocol.KindList {
			var items []json.RawMessage
			if json.Unmarshal(v, &items) == nil && v != nil && string(v) != "null" && len(items) == 0 {
				return emptyBatch[op], true, nil
			}
			return nil, false, nil
		}
		var n int64
		if json.Unmarshal(v, &n) == nil && string(v) != "null" && n < f.Min && (n != 0 || f.Zero == "") {
			return json.RawMessage(fmt.Sprint(f.Min)), false, nil
		}
		return nil, false, nil
	}
}

// laxFix makes a non-empty name or id outside the grammar into a valid one, as a port that
// cleans its input instead of refusing it would; the empty one stays empty (another rule's).
func laxFix(f protocol.Field) func(string, json.RawMessage) (json.RawMessage, bool, error) {
	return func(_ string, v json.RawMessage) (json.RawMessage, bool, error) {
		var s string
		if json.Unmarshal(v, &s) != nil || s == "" {
			return nil, false, nil
		}
		fixed := cleanName(s)
		if f.Kind == protocol.KindJobID {
			fixed = cleanID(s)
		}
		b, _ := json.Marshal(fixed)
		return b, false, nil
	}
}

func cleanName(s string) string {
	if keys.ValidName(s) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-", r) {
			b.WriteRune(r)
		}
	}
	out := b.String()
	if out == "" {
		out = "x"
	}
	return out[:min(len(out), 64)]
}

// cleanID keeps a 3-letter brand, drops what is not base62 from the body and left-pads or cuts
// it to 11 characters.
func cleanID(s string) string {
	if len(s) < 3 {
		return s
	}
	var body strings.Builder
	for _, r := range s[3:] {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			body.WriteRune(r)
		}
	}
	b := body.String()
	if len(b) < 11 {
		b = strings.Repeat("0", 11-len(b)) + b
	}
	return s[:3] + b[len(b)-11:]
}
