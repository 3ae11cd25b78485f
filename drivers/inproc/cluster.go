package inproc

import (
	"context"
	"errors"

	"github.com/echomq/kit/reference/bus"
)

// openCluster opens the bus in cluster mode from one seed node. Until the bus's cluster mode
// lands this says so instead of pretending.
func openCluster(ctx context.Context, seed string, opt bus.Options) (*bus.Bus, error) {
	return nil, errors.New("inproc: the bus has no cluster mode yet (bus.OpenCluster)")
}
