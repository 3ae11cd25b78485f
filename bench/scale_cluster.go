package bench

import (
	"context"

	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/cluster"
)

// clusterTarget is a Valkey Cluster drained through the bus in cluster mode: one pipeline per
// primary, each queue's scripts sent to the primary owning its slot.
func clusterTarget(addrs []string, pids []int) *scaleTarget {
	return &scaleTarget{addrs: addrs, pids: pids,
		open: func(ctx context.Context) (*bus.Bus, error) {
			return bus.OpenCluster(ctx, addrs, bus.Options{BatchEnqueue: true})
		},
		owner:     func(b *bus.Bus, q string) string { return b.Router().Owner(cluster.SlotOfQueue(q)) },
		primaries: func(b *bus.Bus) []string { return b.Router().Primaries() },
		redir: func(b *bus.Bus) int64 {
			s := b.Router().Stats()
			return s.Moved + s.Ask + s.TryAgain
		}}
}
