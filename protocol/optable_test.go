package protocol_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/kit/protocol"
)

// TestOpTable: the op table of contracts/PROTOCOL.md Part B, the schema's requests and
// protocol.Ops name the same ops, and the table lists them in Ops' order.
func TestOpTable(t *testing.T) {
	doc, err := os.ReadFile("../contracts/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, partB, ok := strings.Cut(string(doc), "| op | request fields | result | notes |")
	if !ok {
		t.Fatal("PROTOCOL.md has no op table (| op | request fields | result | notes |)")
	}
	var table []string
	opCell := regexp.MustCompile("`([a-z_]+)`")
	for _, line := range strings.Split(partB, "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cell := strings.Split(line, "|")[1]
		for _, m := range opCell.FindAllStringSubmatch(cell, -1) {
			table = append(table, m[1])
		}
	}
	if !slices.Equal(table, protocol.Ops) {
		t.Errorf("PROTOCOL.md's op table lists %v,\nprotocol.Ops is       %v", table, protocol.Ops)
	}
	var schema struct {
		Defs struct {
			Requests map[string]json.RawMessage `json:"requests"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(protocol.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	var inSchema []string
	for op := range schema.Defs.Requests {
		inSchema = append(inSchema, op)
	}
	slices.Sort(inSchema)
	ops := slices.Sorted(slices.Values(protocol.Ops))
	if !slices.Equal(inSchema, ops) {
		t.Errorf("the schema's requests are %v,\nprotocol.Ops are      %v", inSchema, ops)
	}
}
