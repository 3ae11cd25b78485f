package mutation

import (
	"slices"
	"testing"
)

// TestCommittedTriageParses holds contracts/mutation-triage.txt to its format: a run refuses a
// triage file it cannot read.
func TestCommittedTriageParses(t *testing.T) {
	tr, err := ReadTriage("../../contracts/mutation-triage.txt")
	if err != nil {
		t.Fatal(err)
	}
	for k, e := range tr {
		if !slices.Contains(Ports, k.Port) {
			t.Errorf("line %d: port %q is none of %v", e.Line, k.Port, Ports)
		}
	}
}
