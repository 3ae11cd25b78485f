package contracts

import (
	"maps"
	"slices"

	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/reference/keys"
)

// recordQueues notes, from the wire, which queues the port's calls touched and on which
// primary each of them lives.
func (t *T) recordQueues(lines []Line) {
	home := map[string]int{}
	for _, l := range lines {
		if l.Client == "lua" || t.isOwn(l) {
			continue
		}
		ks, err := t.law.KeysOf(l.Args)
		if err != nil {
			continue
		}
		for _, k := range ks {
			if p, err := keys.Parse(k); err == nil && p.Queue != "" {
				home[p.Queue] = t.admin.PrimaryOf(keys.Slot(k))
			}
		}
	}
	var hs []verdict.QueueHome
	for _, q := range slices.Sorted(maps.Keys(home)) {
		hs = append(hs, verdict.QueueHome{Queue: q, Primary: home[q]})
	}
	n := len(t.admin.Nodes)
	t.rec.Update(func(c *verdict.Clause) { c.Queues, c.Primaries = hs, n })
}
