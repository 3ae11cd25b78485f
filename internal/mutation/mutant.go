// Package mutation is `make mutation`: maintained mutation tools over the kit's two ports and a
// small set of operators over the Lua bundle, each mutant judged by a certification on
// behaviour. StrykerJS makes the Node port's mutants and runs them through its command test
// runner; gremlins makes the Go reference's and runs them through a `go` shim that certifies
// the mutated emq-port instead of running unit tests; the bundle's mutants are this package's
// own (no maintained Lua mutator fits). Every certification gets a server set of its own (each
// FLUSHALLs its Valkey), runs first the clauses that execute the mutated code, and its verdict
// is recorded here, not read back from a tool's score: the run ends with one MUTATION line per
// port and writes every survivor, with its diff and the contracts that should have failed, under
// the output folder.
package mutation

import (
	"fmt"
	"sort"
	"strings"
)

// The ports a run mutates.
const (
	PortNode      = "node"      // ports/node, StrykerJS
	PortReference = "reference" // the Go reference as emq-port, gremlins
	PortBundle    = "bundle"    // lua/*.lua, this package's operators, run through the reference
)

// Ports lists the ports in the order the summary prints them.
var Ports = []string{PortNode, PortReference, PortBundle}

// Mutant is one mutant a tool made: where it is, what it changes, and which clauses of a
// certification execute the code it changes.
type Mutant struct {
	Port string `json:"port"`
	// ID is the tool's own id: Stryker's mutant id, gremlins' file:line:column:type, the
	// bundle operator's file:line:column:operator.
	ID   string `json:"id"`
	File string `json:"file"` // the path in the kit's checkout
	// Line and Col locate the change (1-based; Col in the tool's unit: UTF-16 units for
	// Stryker, bytes for gremlins and the bundle); End* close the changed span.
	Line    int `json:"line"`
	Col     int `json:"col"`
	EndLine int `json:"end_line"`
	EndCol  int `json:"end_col"`
	// Mutator names the operator in the tool's own words (ConditionalExpression,
	// CONDITIONALS_BOUNDARY, rel-boundary).
	Mutator string `json:"mutator"`
	// Was is the line the mutant starts on; Now is that line as the mutant reads (a change
	// spanning lines is folded into it).
	Was string `json:"was"`
	Now string `json:"now"`
	// Occurrence numbers the mutants of one file with the same mutator, Was and Now, in source
	// order, from 1: with them it makes the key that survives code drift.
	Occurrence int `json:"occurrence"`
	// Covered says some clause executes the mutated code; Clauses are those clauses, the
	// cheapest first.
	Covered bool     `json:"covered"`
	Clauses []string `json:"clauses,omitempty"`
}

// Key identifies a mutant across code drift: the file, the mutator, the text of the line it
// changes and what it makes of it (whitespace runs folded), and its occurrence among mutants
// with the same four. Line numbers are not part of it.
type Key struct {
	Port, File, Mutator, Was, Now string
	N                             int
}

// Key is the mutant's stable key.
func (m Mutant) Key() Key {
	return Key{Port: m.Port, File: m.File, Mutator: m.Mutator, Was: Fold(m.Was), Now: Fold(m.Now), N: m.Occurrence}
}

// String is the key's first line in the triage file: "port file mutator #n".
func (k Key) String() string {
	return fmt.Sprintf("%s %s %s #%d", k.Port, k.File, k.Mutator, k.N)
}

// Fold trims a line and folds each run of white space into one space, so that realigned
// columns (gofmt) or a changed indentation leave a key unchanged.
func Fold(s string) string { return strings.Join(strings.Fields(s), " ") }

// Contracts are the contracts of the mutant's clauses ("C05", "C09"), in order.
func (m Mutant) Contracts() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range m.Clauses {
		id, _, _ := strings.Cut(c, "/")
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Number sets each mutant's Occurrence: its rank, in source order, among the mutants of its file
// that share its mutator, Was and Now. The mutants are sorted by file and position first.
func Number(ms []Mutant) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return a.Mutator+a.Now < b.Mutator+b.Now
	})
	seen := map[Key]int{}
	for i := range ms {
		ms[i].Occurrence = 0
		k := ms[i].Key()
		seen[k]++
		ms[i].Occurrence = seen[k]
	}
}

// Status is a mutant's verdict.
type Status string

// The verdicts. Killed and Timeout count as killed; Survived and NoCoverage as survivors;
// Error is neither and makes the run fail; NotViable is left out of the count.
const (
	Killed     Status = "killed"      // a clause failed on behaviour
	Timeout    Status = "timeout"     // the certification overran its deadline (a hang the port never answered)
	Survived   Status = "survived"    // every clause passed
	NoCoverage Status = "no-coverage" // no clause of a certification executes the mutated code
	Error      Status = "error"       // the harness could not judge it (said in Detail)
	NotViable  Status = "not-viable"  // the mutant does not build: no port to judge, not counted
)

// Detected says the mutant was told apart from the port.
func (s Status) Detected() bool { return s == Killed || s == Timeout }

// Verdict is what a certification said of one mutant.
type Verdict struct {
	ID     string  `json:"id"`
	Status Status  `json:"status"`
	By     string  `json:"by,omitempty"`     // the first failed clause
	Rule   string  `json:"rule,omitempty"`   // the rule it quoted
	Detail string  `json:"detail,omitempty"` // what failed, or why no verdict
	Stage  string  `json:"stage,omitempty"`  // "first" (the covering clauses) or "rest"
	Took   float64 `json:"took_s"`
	Dir    string  `json:"dir,omitempty"` // the certification folder kept for a survivor
}
