package rules

import "slices"

// rulesDomains are the rules of the request fields' domains (contracts/PROTOCOL.md Part B,
// "Fields and their domains"), checked by every contract's "fields" clause (contracts/domains.go).
var rulesDomains = []Rule{FieldRequired, FieldType, FieldDefault, FieldRange, FieldEmptyName, FieldB64, FieldUnknown}

var (
	FieldRequired  = Rule{"field-required", `contracts/PROTOCOL.md Part B, Fields and their domains: "A required field that is absent is EMQARG"`}
	FieldType      = Rule{"field-type", `contracts/PROTOCOL.md Part B, Fields and their domains: "null is not a value: a field whose value is null is EMQARG, required or optional … A field of the wrong JSON type is EMQARG"; a string field "takes any JSON string, the empty one and non-ASCII text included"`}
	FieldDefault   = Rule{"field-default", `contracts/PROTOCOL.md Part B, Fields and their domains: "An optional field that is absent takes the default the table states … absent and 0 are different inputs"`}
	FieldRange     = Rule{"field-range", `contracts/PROTOCOL.md Part B, Fields and their domains: "An integer outside its range is EMQARG and changes nothing" — both edges of every range are accepted (A16; the table's ranges)`}
	FieldEmptyName = Rule{"field-empty-name", `contracts/PROTOCOL.md Part B, Fields and their domains: “A name (queue or lane) outside canon §2.1 — the empty string included — is EMQKEY … This holds where the field is optional too: enqueue with "id": "" or "lane": "" is EMQKEY, not "absent"”`}
	FieldUnknown   = Rule{"field-unknown", `contracts/PROTOCOL.md Part B, Fields and their domains: "A field the op does not list is ignored: a request is answered as if it were not there"`}
	FieldB64       = Rule{"field-b64", `contracts/PROTOCOL.md Part B, Fields and their domains: "A base64 field (*_b64) holds standard base64 with padding, nothing else (no line breaks, no URL-safe alphabet, no missing padding): anything else is EMQARG. The empty string is zero bytes"`}
)

// Fields are the rules of the fields' domains, one of which a domain failure names.
func Fields() []Rule { return slices.Clone(rulesDomains) }
