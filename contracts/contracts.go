// Package contracts is the fourteen wire contracts (C01–C14), one file per contract, each a table
// of named clauses, and the machinery they share: a fresh keyspace and a fresh port session per
// clause, the harness's own connection for reading the keyspace, and a MONITOR capture checked
// against the wire law after every clause. Run runs a selection of the table — as Ginkgo v2 specs
// in one process (ginkgo.go, the one file that knows Ginkgo), or on several servers at once — and
// Register hands the same specs to a port's own Ginkgo suite. The verdicts are typed
// (contracts/verdict); package runner and cmd/emq-conform make a certification of them.
package contracts

import (
	"fmt"
	"strings"
)

// Contract is one of the fourteen: its id (C01…C14), short name and what the canon says a port
// must show (CANON.md §7).
type Contract struct {
	ID   string
	Name string
	Rule string
	// clauses is the contract's table, in declaration order (nil in copies handed out by All).
	clauses []clause
}

// slug is the contract's part of a clause id: "C13/pause-limit/…".
func (c Contract) slug() string { return strings.ReplaceAll(c.Name, " & ", "-") }

// Title is "C09 retry".
func (c Contract) Title() string { return c.ID + " " + c.Name }

// WireLaw is the canon's wire law (§7), which holds in every contract.
const WireLaw = "the fence runs before anything else; every transition is an EVALSHA of a bundle SHA1 " +
	"(never EVAL of edited source, never a loose command sequence); every key any command or script " +
	"touches parses under §2 and every key of one queue answers one slot; no script touches a key it " +
	"neither declared nor derived by the grammar"

// all is the fourteen, in the order a job lives them; each is declared in its own file.
var all = []Contract{c01, c02, c03, c04, c05, c06, c07, c08, c09, c10, c11, c12, c13, c14}

// All returns the fourteen contracts in canon order.
func All() []Contract {
	out := make([]Contract, len(all))
	for i, c := range all {
		out[i] = Contract{ID: c.ID, Name: c.Name, Rule: c.Rule}
	}
	return out
}

// Lookup finds a contract by id ("C09", case-insensitive).
func Lookup(id string) (Contract, bool) {
	for _, c := range all {
		if strings.EqualFold(c.ID, id) {
			return c, true
		}
	}
	return Contract{}, false
}

// ParseID checks a contract id and returns it in canonical form ("c9" is not accepted: ids are
// C01…C14).
func ParseID(id string) (string, error) {
	c, ok := Lookup(strings.TrimSpace(id))
	if !ok {
		return "", fmt.Errorf("contracts: unknown contract id %q (want C01…C14)", id)
	}
	return c.ID, nil
}

// KitVersion is the conformance kit's version, reported in every certification and by
// emq-conform -version; CHANGELOG.md says what each one changed.
const KitVersion = "0.3.0"
