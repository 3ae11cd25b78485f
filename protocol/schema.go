package protocol

import _ "embed"

//go:embed port-protocol.schema.json
var schema []byte

// Schema returns the port protocol's JSON Schema (port-protocol.schema.json), a fresh copy.
func Schema() []byte { return append([]byte(nil), schema...) }

// SchemaURL is the schema's $id, the base for references such as SchemaURL+"#/$defs/reply".
const SchemaURL = "https://echomq.dev/kit/port-protocol.schema.json"

// ContractIDs are the fourteen contracts a port may claim in hello, in canon order. The
// contracts themselves (names, rules, clauses) live in package contracts.
var ContractIDs = []string{"C01", "C02", "C03", "C04", "C05", "C06", "C07", "C08", "C09", "C10", "C11", "C12", "C13", "C14"}
