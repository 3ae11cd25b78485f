package contracts

import (
	"fmt"
	"strings"

	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/ids"
)

// c05 is contract C05: order.
var c05 = Contract{ID: "C05", Name: "order",
	Rule: "ids minted in sequence, even within one millisecond and across a pool of connections, sort in mint order; claims come oldest first",
	specs: func(s spec) {
		increasing := func(t *T, list []string, what string) {
			t.cover(ruleMintOrder)
			for i, id := range list {
				t.validJob(id)
				if i > 0 && id <= list[i-1] {
					t.fail(ruleMintOrder, what+": each id sorts after the one minted before it", fmt.Sprintf("id %d %s after %s", i, id, list[i-1]))
				}
			}
		}
		s.clause("one-caller-strictly-increasing", clauseOpts{}, func(t *T) {
			m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 5000})
			t.ok(err, ruleMintOrder, "mint")
			t.check(len(m.IDs) == 1 && len(m.IDs[0]) == 5000, ruleMintOrder, "one list of 5000 ids", "%d lists", len(m.IDs))
			increasing(t, m.IDs[0], "one caller")
			perMS := map[uint64]int{}
			most := 0
			for _, id := range m.IDs[0] {
				sf, _ := ids.ParseJob(id)
				ms, _, _ := ids.Split(sf)
				perMS[ms]++
				most = max(most, perMS[ms])
			}
			t.check(most > 1, ruleMintOrder, "several ids within one millisecond (the sequence bits in use)", "every id in its own millisecond; the check could not exercise the sequence")
		})
		s.clause("parallel-callers", clauseOpts{}, func(t *T) {
			m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 1000, Parallel: 4})
			t.ok(err, ruleMintOrder, "mint")
			t.check(len(m.IDs) == 4, ruleMintOrder, "four lists, one per caller", "%d lists", len(m.IDs))
			seen := map[string]bool{}
			for i, l := range m.IDs {
				t.check(len(l) == 1000, ruleMintOrder, "1000 ids per caller", "caller %d got %d", i, len(l))
				increasing(t, l, fmt.Sprintf("caller %d", i))
				for _, id := range l {
					t.check(!seen[id], ruleMintOrder, "ids never repeat across callers", "%s minted twice", id)
					seen[id] = true
				}
			}
		})
		s.clause("claims-oldest-first", clauseOpts{}, func(t *T) {
			m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 6})
			t.ok(err, ruleMintOrder, "mint")
			t.check(len(m.IDs) == 1 && len(m.IDs[0]) == 6, ruleMintOrder, "mint n=6 answers one list of six ids", "%v", m.IDs)
			minted := m.IDs[0]
			for _, i := range []int{5, 3, 1, 0, 2, 4} {
				t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", ID: minted[i], PayloadB64: b64(fmt.Sprint(i))})
			}
			var got []string
			for range minted {
				c := t.mustClaim("orders", 30000)
				got = append(got, c.ID)
			}
			t.check(strings.Join(got, ",") == strings.Join(minted, ","), ruleMintOrder, "claims in mint order "+strings.Join(minted, ","), "%s", strings.Join(got, ","))
			t.check(t.claim("orders", 30000) == nil, ruleClaim, "an empty reply once the queue is drained", "another job")
		})
	},
}
