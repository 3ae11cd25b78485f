package bench

import (
	"context"

	"github.com/echomq/kit/bench/queue"
	"github.com/echomq/kit/bench/systems/asynqq"
	"github.com/echomq/kit/bench/systems/busq"
	"github.com/echomq/kit/bench/systems/nodeq"
	"github.com/echomq/kit/bench/systems/obanq"
	"github.com/echomq/kit/bench/systems/riverq"
)

// registry is every system the bench opens on an axis, in report order: the bus, the queues on
// Valkey, the queues on PostgreSQL, the model. A new system is one line here (and its package);
// the scenarios it can run are the ones its Info offers.
var registry = []registered{
	{busq.Name, openBus},
	{nodeq.BullMQ, nodeq.Opener(nodeq.BullMQ)},
	{asynqq.Name, asynqq.New},
	{riverq.Name, riverq.New},
	{nodeq.Graphile, nodeq.Opener(nodeq.Graphile)},
	{nodeq.GraphileW, nodeq.Opener(nodeq.GraphileW)},
	{nodeq.PgBoss, nodeq.Opener(nodeq.PgBoss)},
	{obanq.Name, obanq.New},
}

type registered struct {
	name string
	open queue.Opener
}

func openBus(ctx context.Context, s queue.Setup) (queue.Queue, error) {
	return busq.Open(ctx, s.Valkey, s.Pool, s.Schema, s.Rows)
}
