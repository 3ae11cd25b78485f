package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FieldError is a request field outside its domain. Type is the error a port answers: EMQARG
// (absent when required, null, the wrong JSON type, out of range, bad base64) or EMQKEY (an
// empty name or id: canon §2.1 admits no empty name).
type FieldError struct {
	Op, Field string
	Type      string
	Reason    string
}

func (e *FieldError) Error() string { return e.Op + ": " + e.Field + ": " + e.Reason }

// Check holds one request's fields (the request object's members, seq and op among them) to
// its op's domains (Fields) and returns them with every integer in plain decimal, so that a
// decoder into Go integers reads 1e3 as the 1000 it is. Fields the op does not list are left
// as they are. It is the port protocol's shape check, run before any name reaches a key
// builder and before any value reaches a script: a shape fault is EMQARG whatever else the
// request holds.
func Check(op string, fields map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		out[k] = v
	}
	ints := map[string]int64{}
	var keyErr error // an empty name: EMQKEY, unless a shape fault elsewhere makes it EMQARG
	for _, f := range Fields[op] {
		raw, present := fields[f.Name]
		if !present {
			if f.Required || f.requiredBy(fields) {
				return nil, &FieldError{op, f.Name, "EMQARG", "missing required field " + f.Name}
			}
			continue
		}
		if f.Kind == KindList {
			list, err := f.checkList(op, raw)
			if keyErr, err = deferKey(keyErr, err); err != nil {
				return nil, err
			}
			out[f.Name] = list
			continue
		}
		n, err := f.check(op, raw)
		if keyErr, err = deferKey(keyErr, err); err != nil {
			return nil, err
		}
		if f.Kind == KindInt {
			ints[f.Name] = n
			out[f.Name] = json.RawMessage(strconv.FormatInt(n, 10))
		}
	}
	if keyErr != nil {
		return nil, keyErr
	}
	if op == "mint" {
		if n, p := ints["n"], max(ints["parallel"], 1); n*p > MaxMint {
			return nil, &FieldError{op, "n", "EMQARG", fmt.Sprintf("n %d × parallel %d is over %d ids", n, p, MaxMint)}
		}
	}
	return out, nil
}

// checkList holds a list field to its length and each of its objects to f.Items, and returns
// the list with every integer in plain decimal.
func (f Field) checkList(op string, raw json.RawMessage) (json.RawMessage, error) {
	var items []map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, &FieldError{op, f.Name, "EMQARG", fmt.Sprintf("%s is %.40s: want a list of objects", f.Name, raw)}
	}
	if n := int64(len(items)); n < f.Min || n > f.Max {
		return nil, &FieldError{op, f.Name, "EMQARG", fmt.Sprintf("%s holds %d objects: want %d..%d", f.Name, n, f.Min, f.Max)}
	}
	var keyErr error
	for i, obj := range items {
		if obj == nil {
			return nil, &FieldError{op, fmt.Sprintf("%s[%d]", f.Name, i), "EMQARG", "null: want an object"}
		}
		for _, sub := range f.Items {
			v, present := obj[sub.Name]
			at := sub
			at.Name = fmt.Sprintf("%s[%d].%s", f.Name, i, sub.Name)
			if !present {
				if sub.Required {
					return nil, &FieldError{op, at.Name, "EMQARG", "missing required field " + at.Name}
				}
				continue
			}
			n, err := at.check(op, v)
			if keyErr, err = deferKey(keyErr, err); err != nil {
				return nil, err
			}
			if sub.Kind == KindInt {
				obj[sub.Name] = json.RawMessage(strconv.FormatInt(n, 10))
			}
		}
	}
	b, err := json.Marshal(items)
	if err == nil && keyErr != nil {
		return b, keyErr
	}
	return b, err
}

// deferKey keeps the first empty-name refusal (EMQKEY) aside in keyErr, so that a shape fault
// found after it still answers EMQARG (PROTOCOL.md Part B, "Order" [B-100]); any other error is
// returned as it is.
func deferKey(keyErr, err error) (error, error) {
	var fe *FieldError
	if errors.As(err, &fe) && fe.Type == "EMQKEY" {
		if keyErr == nil {
			keyErr = err
		}
		return keyErr, nil
	}
	return keyErr, err
}

// requiredBy tells a field required by another field's value (When "type=job").
func (f Field) requiredBy(fields map[string]json.RawMessage) bool {
	other, want, ok := strings.Cut(f.When, "=")
	if !ok {
		return false
	}
	var v string
	return json.Unmarshal(fields[other], &v) == nil && v == want
}

// check holds one present value to the field's kind; for an integer it returns the value.
func (f Field) check(op string, raw json.RawMessage) (int64, error) {
	bad := func(format string, a ...any) error {
		return &FieldError{op, f.Name, "EMQARG", fmt.Sprintf(format, a...)}
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return 0, bad("%s is null: want %s", f.Name, withArticle(f.Kind.String()))
	}
	switch f.Kind {
	case KindInt:
		n, ok := integer(raw)
		switch {
		case !ok:
			return 0, bad("%s is %s: want an integer", f.Name, raw)
		case n == 0 && f.Zero != "":
			return 0, nil
		case n < f.Min || n > f.Max:
			return 0, bad("%s %d: want %d..%d", f.Name, n, f.Min, f.Max)
		}
		return n, nil
	case KindBool:
		if string(raw) != "true" && string(raw) != "false" {
			return 0, bad("%s is %s: want true or false", f.Name, raw)
		}
		return 0, nil
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return 0, bad("%s is %s: want a string", f.Name, raw)
	}
	switch {
	case f.Kind == KindB64:
		if !IsB64(s) {
			return 0, bad("%s is not standard padded base64", f.Name)
		}
	case f.Kind == KindAddr && s == "":
		return 0, bad("%s is empty: want host:port", f.Name)
	case (f.Kind == KindName || f.Kind == KindJobID) && s == "":
		return 0, &FieldError{op, f.Name, "EMQKEY", f.Name + " is empty"}
	}
	return 0, nil
}

// withArticle puts "a" or "an" before a kind's name: "an integer", "a string".
func withArticle(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// integer reads a JSON number with an integral value that fits in an int64 (1000, 1e3, 1000.0);
// a fraction, a string or any other JSON value is not one.
func integer(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	var num json.Number
	if json.Unmarshal(raw, &num) != nil {
		return 0, false
	}
	if n, err := num.Int64(); err == nil {
		return n, true
	}
	x, err := num.Float64()
	if err != nil || x != math.Trunc(x) || math.Abs(x) >= 1<<63 {
		return 0, false
	}
	return int64(x), true
}

// B64Pattern is the schema's $defs/b64: standard base64 with padding, groups of four, the last
// one padded. Go's decoder alone would also take line breaks inside the text.
const B64Pattern = `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`

// IsB64 tells standard padded base64 (the empty string is zero bytes): B64Pattern, decided by a
// scan (a regexp took over half a second over a payload of a few MiB, B-281).
func IsB64(s string) bool {
	if len(s)%4 != 0 {
		return false
	}
	body := strings.TrimSuffix(s, "=")
	body = strings.TrimSuffix(body, "=")
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}
