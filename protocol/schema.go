package protocol

import (
	_ "embed"
	"encoding/json"
	"sync"
)

//go:embed port-protocol.schema.json
var schema []byte

// Schema returns the port protocol's JSON Schema (port-protocol.schema.json), a fresh copy.
func Schema() []byte { return append([]byte(nil), schema...) }

// SchemaURL is the schema's $id, the base for references such as SchemaURL+"#/$defs/reply".
const SchemaURL = "https://echomq.dev/kit/port-protocol.schema.json"

// ContractIDs are the fourteen contracts a port may claim in hello, in canon order. The
// contracts themselves (names, rules, clauses) live in package contracts.
var ContractIDs = []string{"C01", "C02", "C03", "C04", "C05", "C06", "C07", "C08", "C09", "C10", "C11", "C12", "C13", "C14"}

// requiredByOp is each op's required request fields, read once from the schema's
// $defs/requests/<op>.required (seq and op left out). It never changes after the first read.
var requiredByOp = sync.OnceValue(func() map[string][]string {
	var doc struct {
		Defs struct {
			Requests map[string]struct {
				Required []string `json:"required"`
			} `json:"requests"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(schema, &doc); err != nil {
		panic("protocol: the embedded schema does not parse: " + err.Error())
	}
	out := map[string][]string{}
	for op, r := range doc.Defs.Requests {
		for _, f := range r.Required {
			if f != "seq" && f != "op" {
				out[op] = append(out[op], f)
			}
		}
	}
	return out
})

// Required lists the fields a request of op must carry besides seq and op, as the schema
// states them (contracts/PROTOCOL.md Part B): a port answers EMQARG when one is missing, even
// where a zero value would be the default.
func Required(op string) []string { return append([]string(nil), requiredByOp()[op]...) }
