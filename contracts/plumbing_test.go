package contracts

import (
	"slices"
	"testing"

	"github.com/echomq/kit/contracts/internal/wire"
	"github.com/echomq/kit/contracts/rules"
)

// TestLawRulesQuoted: every rule the wire law can name is a rule the contracts quote, under the
// same id, and is evaluated by every clause (the wire rules in every run, the cluster ones in a
// cluster run).
func TestLawRulesQuoted(t *testing.T) {
	every := append(rules.Wire(), rules.ClusterLaw()...)
	for _, id := range wire.RuleIDs() {
		r, ok := lawRules[id]
		switch {
		case !ok:
			t.Errorf("the wire law names %s, which the contracts do not quote", id)
		case r.ID != string(id):
			t.Errorf("the wire law's %s is quoted as rule %s", id, r.ID)
		case !slices.Contains(every, r):
			t.Errorf("rule %s is not evaluated by every clause", id)
		}
	}
}
