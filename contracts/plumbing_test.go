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

// TestLargeBytesSpreadEveryByteValue: the largest-payload clause's bytes hold every byte value,
// unprintable ones at every offset modulo a read buffer's size, and most of them printable (the
// MONITOR capture's cost on the server, largest.go).
func TestLargeBytesSpreadEveryByteValue(t *testing.T) {
	for _, seed := range []int{0, 1} {
		b := largeBytes(1536<<10, seed)
		var values [256]bool
		var offsets [4096]bool
		unprintable := 0
		for i := 0; i < len(b); i++ {
			values[b[i]] = true
			if b[i] < 0x20 || b[i] > 0x7e {
				offsets[i%len(offsets)] = true
				unprintable++
			}
		}
		if i := slices.Index(values[:], false); i >= 0 {
			t.Errorf("seed %d: byte value %d never appears", seed, i)
		}
		if i := slices.Index(offsets[:], false); i >= 0 {
			t.Errorf("seed %d: no unprintable byte at offset %d modulo 4096", seed, i)
		}
		if unprintable > len(b)/25 {
			t.Errorf("seed %d: %d unprintable bytes of %d: each costs the server a formatted print under MONITOR", seed, unprintable, len(b))
		}
		if largeBytes(1536<<10, seed) == largeBytes(1536<<10, seed+1) {
			t.Errorf("seeds %d and %d give the same bytes", seed, seed+1)
		}
	}
}
