package inproc

import (
	"context"

	"github.com/echomq/kit/reference/bus"
)

// openCluster opens the bus in cluster mode from one seed node: the bus reads the slot map
// from it and connects to every primary itself.
func openCluster(ctx context.Context, seed string, opt bus.Options) (*bus.Bus, error) {
	return bus.OpenCluster(ctx, []string{seed}, opt)
}
