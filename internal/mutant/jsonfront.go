package mutant

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

// A JSON front is a port whose JSON layer mishandles some inputs: it rewrites a raw request's
// fields (drivers.RawCaller) before the kit's JSON layer (drivers.Dispatch) and the reference
// bus see them — a port that reads null as absent, 0 as "unset", "5" as 5 — or answers for the
// bus. The typed ops, the batch ops and the clock pass straight through.
type jsonFront struct {
	drivers.Driver
	// rewrite changes the fields of a request of op, or answers it: a non-nil result or error
	// is the reply, and the request goes no further.
	rewrite func(op string, f map[string]json.RawMessage) (json.RawMessage, error)
}

func (j *jsonFront) Raw(ctx context.Context, op string, fields map[string]json.RawMessage) (json.RawMessage, error) {
	f := maps.Clone(fields)
	if r, err := j.rewrite(op, f); r != nil || err != nil {
		return r, err
	}
	return drivers.Raw(ctx, j.Driver, op, f)
}

func (j *jsonFront) Clock(ctx context.Context, a protocol.ClockArgs) error {
	return j.Driver.(drivers.Clocker).Clock(ctx, a)
}

func (j *jsonFront) EnqueueBatch(ctx context.Context, a protocol.EnqueueBatchArgs) (protocol.EnqueueBatchResult, error) {
	return j.Driver.(drivers.Batcher).EnqueueBatch(ctx, a)
}

func (j *jsonFront) ClaimBatch(ctx context.Context, a protocol.ClaimBatchArgs) (protocol.ClaimBatchResult, error) {
	return j.Driver.(drivers.Batcher).ClaimBatch(ctx, a)
}

func (j *jsonFront) CompleteBatch(ctx context.Context, a protocol.CompleteBatchArgs) (protocol.CompleteBatchResult, error) {
	return j.Driver.(drivers.Batcher).CompleteBatch(ctx, a)
}

// jsonWrap is a Go mutant of the port's JSON layer.
func jsonWrap(rewrite func(op string, f map[string]json.RawMessage) (json.RawMessage, error)) func(*bus.Options) Wrap {
	return front(func(d drivers.Driver) drivers.Driver { return &jsonFront{Driver: d, rewrite: rewrite} })
}

// when rewrites one field of the ops named (any op when ops is empty) with fix, which returns
// the new value, or nil to leave the field out.
func when(field string, match func(json.RawMessage) bool, fix func(json.RawMessage) json.RawMessage, ops ...string) func(string, map[string]json.RawMessage) (json.RawMessage, error) {
	return func(op string, f map[string]json.RawMessage) (json.RawMessage, error) {
		v, ok := f[field]
		if !ok || (len(ops) > 0 && !slices.Contains(ops, op)) || !match(v) {
			return nil, nil
		}
		if nv := fix(v); nv != nil {
			f[field] = nv
		} else {
			delete(f, field)
		}
		return nil, nil
	}
}

func is(s string) func(json.RawMessage) bool {
	return func(v json.RawMessage) bool { return string(v) == s }
}

func drop(json.RawMessage) json.RawMessage { return nil }

func set(s string) func(json.RawMessage) json.RawMessage {
	return func(json.RawMessage) json.RawMessage { return json.RawMessage(s) }
}

// absentAs fills a required field the request left out, as a port that defaults it would.
func absentAs(field, value string, ops ...string) func(string, map[string]json.RawMessage) (json.RawMessage, error) {
	return func(op string, f map[string]json.RawMessage) (json.RawMessage, error) {
		if _, ok := f[field]; !ok && slices.Contains(ops, op) {
			f[field] = json.RawMessage(value)
		}
		return nil, nil
	}
}

// refuse answers EMQARG to the requests of op that match.
func refuse(op string, match func(map[string]json.RawMessage) bool) func(string, map[string]json.RawMessage) (json.RawMessage, error) {
	return func(o string, f map[string]json.RawMessage) (json.RawMessage, error) {
		if o == op && match(f) {
			return nil, &emqerr.Error{Type: emqerr.TypeArg, Message: "refused by the mutant's JSON layer"}
		}
		return nil, nil
	}
}

// quoted tells a JSON string holding an integer ("5").
func quoted(v json.RawMessage) bool {
	s := str(v)
	return len(v) > 0 && v[0] == '"' && s != "" && strings.Trim(s, "0123456789") == ""
}

func unquote(v json.RawMessage) json.RawMessage { return json.RawMessage(str(v)) }

// fraction tells a JSON number with a fraction, and truncate cuts it.
func fraction(v json.RawMessage) bool { return strings.Contains(string(v), ".") }

func truncate(v json.RawMessage) json.RawMessage {
	s, _, _ := strings.Cut(string(v), ".")
	return json.RawMessage(s)
}

// padded pads an unpadded base64 string; unpadded tells one that padding would make base64.
func padded(v json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(pad(str(v)))
	return b
}

func unpadded(v json.RawMessage) bool {
	s := str(v)
	return len(s)%4 != 0 && protocol.IsB64(pad(s))
}

func pad(s string) string { return s + strings.Repeat("=", (4-len(s)%4)%4) }

func str(v json.RawMessage) string {
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

// broken tells a JSON string with a line break inside, and unbroken removes them.
func broken(v json.RawMessage) bool { return strings.Contains(string(v), `\n`) }

func unbroken(v json.RawMessage) json.RawMessage {
	return json.RawMessage(strings.ReplaceAll(string(v), `\n`, ""))
}

// nullOptional reads null as absent in every field that is optional, as a port checking
// "value == nil" for "absent" does.
func nullOptional(op string, f map[string]json.RawMessage) (json.RawMessage, error) {
	for _, fd := range protocol.Fields[op] {
		if v, ok := f[fd.Name]; ok && !fd.Required && string(v) == "null" {
			delete(f, fd.Name)
		}
	}
	return nil, nil
}

// jsonMutants break the port protocol's field domains (PROTOCOL.md Part B, "Fields and their
// domains") in the port's JSON layer.
var jsonMutants = []Spec{
	{Name: "morgue-default-1000", Contract: "C10", Rule: "field-default", Defect: "morgue without limit lists up to 1000 dead jobs instead of the default 100",
		Go: front(func(d drivers.Driver) drivers.Driver { return &morgueDefault{d} })},
	{Name: "json-reap-limit-zero-default", Contract: "C11", Rule: "field-range", Defect: `reap reads "limit": 0 as absent (the default 1000) instead of EMQARG`,
		Go: jsonWrap(when("limit", is("0"), drop, "reap"))},
	{Name: "json-promote-limit-zero-default", Contract: "C09", Rule: "field-range", Defect: `promote reads "limit": 0 as absent instead of EMQARG`,
		Go: jsonWrap(when("limit", is("0"), drop, "promote"))},
	{Name: "json-morgue-limit-zero-default", Contract: "C10", Rule: "field-range", Defect: `morgue reads "limit": 0 as absent instead of EMQARG`,
		Go: jsonWrap(when("limit", is("0"), drop, "morgue"))},
	{Name: "json-mint-zero-refused", Contract: "C02", Rule: "field-range", Defect: `mint refuses "n": 0 (EMQARG), which the table admits ("required, may be 0")`,
		Go: jsonWrap(refuse("mint", func(f map[string]json.RawMessage) bool { return string(f["n"]) == "0" }))},
	{Name: "json-park-consumers-zero", Contract: "C14", Rule: "field-range", Defect: `park runs one consumer for "consumers": 0 instead of EMQARG`,
		Go: jsonWrap(when("consumers", is("0"), set("1"), "park"))},
	{Name: "json-clock-scale-zero", Contract: "C05", Rule: "field-range", Defect: `clock reads "scale": 0 as the default 1 instead of EMQARG`,
		Go: jsonWrap(when("scale", is("0"), drop, "clock"))},
	{Name: "json-hello-ttl-zero", Contract: "C01", Rule: "field-range", Defect: `hello reads "minter_ttl_ms": 0 as absent instead of EMQARG`,
		Go: jsonWrap(when("minter_ttl_ms", is("0"), drop, "hello"))},
	{Name: "json-null-as-absent", Contract: "C02", Rule: "field-type", Defect: "an optional field whose value is null is read as absent (its default) instead of EMQARG",
		Go: jsonWrap(nullOptional)},
	{Name: "json-string-lease", Contract: "C06", Rule: "field-type", Defect: `claim takes "lease_ms": "1" (a string) as the integer 1`,
		Go: jsonWrap(when("lease_ms", quoted, unquote, "claim"))},
	{Name: "json-fraction-token", Contract: "C07", Rule: "field-type", Defect: "a fenced op truncates a fractional token (1.5 → 1) instead of EMQARG",
		Go: jsonWrap(when("token", fraction, truncate))},
	{Name: "json-ceiling-absent-zero", Contract: "C13", Rule: "field-required", Defect: "lane_ceiling without its required ceiling removes the ceiling (as 0) instead of EMQARG",
		Go: jsonWrap(absentAs("ceiling", "0", "lane_ceiling"))},
	{Name: "json-retry-delay-optional", Contract: "C09", Rule: "field-required", Defect: "retry without its required delay_ms retries at once (as 0) instead of EMQARG",
		Go: jsonWrap(absentAs("delay_ms", "0", "retry"))},
	{Name: "json-parallel-required", Contract: "C02", Rule: "field-default", Defect: "mint without its optional parallel is EMQARG instead of one caller (the default 1)",
		Go: jsonWrap(refuse("mint", func(f map[string]json.RawMessage) bool { _, ok := f["parallel"]; return !ok }))},
	{Name: "json-empty-lane-plain", Contract: "C04", Rule: "field-empty-name", Defect: `enqueue reads "lane": "" as no lane (a plain enqueue) instead of EMQKEY`,
		Go: jsonWrap(when("lane", is(`""`), drop, "enqueue"))},
	{Name: "json-empty-id-mints", Contract: "C04", Rule: "field-empty-name", Defect: `enqueue reads "id": "" as absent and mints an id instead of EMQKEY`,
		Go: jsonWrap(when("id", is(`""`), drop, "enqueue"))},
	{Name: "json-b64-unpadded", Contract: "C02", Rule: "field-b64", Defect: "enqueue accepts base64 without its padding",
		Go: jsonWrap(when("payload_b64", unpadded, padded, "enqueue"))},
	{Name: "json-b64-line-break", Contract: "C11", Rule: "field-b64", Defect: "checkpoint accepts base64 with a line break inside (as a MIME decoder does)",
		Go: jsonWrap(when("data_b64", broken, unbroken, "checkpoint"))},
	{Name: "json-names-before-shape", Contract: "C04", Rule: "shape-first", Defect: "a request's queue name is checked before its fields' shape: a bad name beside a null field is EMQKEY, not EMQARG",
		Go: jsonWrap(func(op string, f map[string]json.RawMessage) (json.RawMessage, error) {
			if q, ok := f["queue"]; ok && !keys.ValidName(str(q)) {
				return nil, &emqerr.Error{Type: emqerr.TypeKey, Message: "bad queue name (checked first by the mutant)"}
			}
			return nil, nil
		})},
	{Name: "json-empty-name-before-shape", Contract: "C04", Rule: "shape-first", Defect: `an empty queue, lane or id ("") is refused EMQKEY as the fields are read, before the other fields' shape: {queue: "", payload_b64: "*"} is EMQKEY, not EMQARG`,
		Go: jsonWrap(func(op string, f map[string]json.RawMessage) (json.RawMessage, error) {
			for _, name := range []string{"queue", "lane", "id"} {
				if v, ok := f[name]; ok && string(v) == `""` {
					return nil, &emqerr.Error{Type: emqerr.TypeKey, Message: name + " is empty (checked as it was read by the mutant)"}
				}
			}
			return nil, nil
		})},
	{Name: "json-mint-over-bound-cut", Contract: "C02", Rule: "mint-bound", Defect: "a mint of more than 100000 ids in all is cut to fit (fewer callers) instead of EMQARG",
		Go: jsonWrap(func(op string, f map[string]json.RawMessage) (json.RawMessage, error) {
			var n, p int64
			if op == "mint" && json.Unmarshal(f["n"], &n) == nil && json.Unmarshal(f["parallel"], &p) == nil && n > 0 && n*p > protocol.MaxMint {
				f["parallel"] = json.RawMessage(fmt.Sprint(protocol.MaxMint / n))
			}
			return nil, nil
		})},
	{Name: "json-delay-absent-delays", Contract: "C02", Rule: "enqueue-defaults", Defect: "an enqueue without delay_ms is scheduled a second ahead instead of pending now (the default 0)",
		Go: jsonWrap(absentAs("delay_ms", "1000", "enqueue"))},
	{Name: "json-unknown-field-refused", Contract: "C09", Rule: "field-unknown", Defect: "a request with a field its op does not list is EMQARG instead of answered as if the field were not there",
		Go: jsonWrap(func(op string, f map[string]json.RawMessage) (json.RawMessage, error) {
			for k := range f {
				if k != "seq" && k != "op" && !slices.ContainsFunc(protocol.Fields[op], func(fd protocol.Field) bool { return fd.Name == k }) {
					return nil, &emqerr.Error{Type: emqerr.TypeArg, Message: "unknown field " + k}
				}
			}
			return nil, nil
		})},
	{Name: "json-batch-too-long-cut", Contract: "C02", Rule: "field-range", Defect: "enqueue_batch of 1001 jobs enqueues the first 1000 instead of EMQARG",
		Go: jsonWrap(func(op string, f map[string]json.RawMessage) (json.RawMessage, error) {
			var jobs []json.RawMessage
			if op == "enqueue_batch" && json.Unmarshal(f["jobs"], &jobs) == nil && len(jobs) > protocol.MaxBatch {
				f["jobs"], _ = json.Marshal(jobs[:protocol.MaxBatch])
			}
			return nil, nil
		})},
}

// morgueDefault gives an absent morgue limit the wrong default, on the typed op.
type morgueDefault struct{ drivers.Driver }

func (m *morgueDefault) Morgue(ctx context.Context, a protocol.MorgueArgs) (protocol.MorgueResult, error) {
	if a.Limit == 0 {
		a.Limit = 1000
	}
	return m.Driver.Morgue(ctx, a)
}
