package mutant

import (
	"maps"
	"slices"
)

// proofs names the statements of the documents each catalogue mutant breaks, by the ids
// contracts/statements traces them under. A traced statement is proven when a mutant that
// breaks it is killed on behaviour by its own contract (make mutants): traced says a clause
// looks, proven says a port that gets it wrong fails. A mutant of a rule that exactly one
// statement is traced to proves that statement without an entry here. Every id listed must be
// traced to the mutant's rule (TestStatements).
// The table is split by the mutants' contract (proofs_c01_c07.go, proofs_c08_c14.go) and, for
// the port protocol's statements, proofs_partb.go; a mutant in more than one gets the union.
var proofs = joinProofs(proofsC01toC07, proofsC08toC14, proofsPartB)

func joinProofs(ms ...map[string][]string) map[string][]string {
	out := map[string][]string{}
	for _, m := range ms {
		for name, ids := range m {
			for _, id := range ids {
				if !slices.Contains(out[name], id) {
					out[name] = append(out[name], id)
				}
			}
		}
	}
	return out
}

// Proofs maps a catalogue mutant's name to the statement ids it breaks (a copy).
func Proofs() map[string][]string { return maps.Clone(proofs) }
