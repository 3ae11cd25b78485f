package contracts

import (
	"fmt"
	"slices"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// keyOp is one port op taking a queue, a job id or a lane, run with the argument under test.
type keyOp struct {
	name string
	run  func(t *T, queue, id, lane string) error
}

func errOf[R any](_ R, err error) error { return err }

// queueOps are every op that takes a queue name; id and lane are well formed.
var queueOps = []keyOp{
	{"enqueue", func(t *T, q, _, _ string) error {
		return errOf(t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: q, PayloadB64: b64("x")}))
	}},
	{"enqueue with id", func(t *T, q, id, _ string) error {
		return errOf(t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: q, ID: id, PayloadB64: b64("x")}))
	}},
	{"enqueue with lane", func(t *T, q, _, g string) error {
		return errOf(t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: q, Lane: g, PayloadB64: b64("x")}))
	}},
	{"claim", func(t *T, q, _, _ string) error {
		return errOf(t.D.Claim(t.ctx, protocol.ClaimArgs{Queue: q, LeaseMS: 1000}))
	}},
	{"lane_claim", func(t *T, q, _, _ string) error {
		return errOf(t.D.LaneClaim(t.ctx, protocol.ClaimArgs{Queue: q, LeaseMS: 1000}))
	}},
	{"reap", func(t *T, q, _, _ string) error {
		return errOf(t.D.Reap(t.ctx, protocol.ReapArgs{Queue: q, MaxAttempts: 5}))
	}},
	{"promote", func(t *T, q, _, _ string) error { return errOf(t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: q})) }},
	{"morgue", func(t *T, q, _, _ string) error { return errOf(t.D.Morgue(t.ctx, protocol.MorgueArgs{Queue: q})) }},
	{"pause", func(t *T, q, _, _ string) error { return t.D.Pause(t.ctx, protocol.QueueArgs{Queue: q}) }},
	{"resume", func(t *T, q, _, _ string) error { return t.D.Resume(t.ctx, protocol.QueueArgs{Queue: q}) }},
	{"park", func(t *T, q, _, _ string) error {
		return errOf(t.D.Park(t.ctx, protocol.ParkArgs{Queue: q, Consumers: 1, Jobs: 1, LeaseMS: 1000, ParkMS: 100, TimeoutMS: 300}))
	}},
	{"key pending", func(t *T, q, _, _ string) error {
		return errOf(t.D.Key(t.ctx, protocol.KeyArgs{Queue: q, Type: "pending"}))
	}},
}

// idOps are every op that takes a job id.
var idOps = []keyOp{
	{"enqueue with id", func(t *T, q, id, _ string) error {
		return errOf(t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: q, ID: id, PayloadB64: b64("x")}))
	}},
	{"lane enqueue with id", func(t *T, q, id, g string) error {
		return errOf(t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: q, ID: id, Lane: g, PayloadB64: b64("x")}))
	}},
	{"extend", func(t *T, q, id, _ string) error {
		return errOf(t.D.Extend(t.ctx, protocol.ExtendArgs{FenceArgs: fa(q, id, 1), LeaseMS: 1000}))
	}},
	{"complete", func(t *T, q, id, _ string) error { return t.D.Complete(t.ctx, fa(q, id, 1)) }},
	{"retry", func(t *T, q, id, _ string) error {
		return errOf(t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa(q, id, 1), MaxAttempts: 5, Error: "x"}))
	}},
	{"fail", func(t *T, q, id, _ string) error {
		return t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa(q, id, 1), Error: "x"})
	}},
	{"checkpoint", func(t *T, q, id, _ string) error {
		return t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa(q, id, 1), DataB64: b64("x")})
	}},
	{"revive", func(t *T, q, id, _ string) error { return errOf(t.D.Revive(t.ctx, protocol.JobArgs{Queue: q, ID: id})) }},
	{"purge", func(t *T, q, id, _ string) error { return errOf(t.D.Purge(t.ctx, protocol.JobArgs{Queue: q, ID: id})) }},
	{"key job", func(t *T, q, id, _ string) error {
		return errOf(t.D.Key(t.ctx, protocol.KeyArgs{Queue: q, Type: "job", ID: id}))
	}},
}

// laneOps are every op that takes a lane name.
var laneOps = []keyOp{
	{"enqueue with lane", queueOps[2].run},
	{"lane enqueue with id", idOps[1].run},
	{"lane_pause", func(t *T, q, _, g string) error { return t.D.LanePause(t.ctx, protocol.QueueArgs{Queue: q, Lane: g}) }},
	{"lane_resume", func(t *T, q, _, g string) error { return t.D.LaneResume(t.ctx, protocol.QueueArgs{Queue: q, Lane: g}) }},
	{"lane_ceiling", func(t *T, q, _, g string) error {
		return t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: q, Lane: g, Ceiling: 2})
	}},
	{"key lane", func(t *T, q, _, g string) error {
		return errOf(t.D.Key(t.ctx, protocol.KeyArgs{Queue: q, Type: "lane", Lane: g}))
	}},
}

// refusedEverywhere runs every op with the bad argument, requires the refusal want from each,
// and no command of the port on the server.
func (t *T) refusedEverywhere(ops []keyOp, want *emqerr.Error, queue, id, lane, what string) {
	m := t.mark()
	for _, op := range ops {
		t.refused(op.run(t, queue, id, lane), want, rules.KeyBuilder, fmt.Sprintf("%s with %s", op.name, what))
	}
	t.cover(rules.KeyBuilder)
	if ls := t.portCommands(m); len(ls) > 0 {
		t.fail(rules.KeyBuilder, what+" is refused by every op before any command reaches the server",
			fmt.Sprintf("%d command(s) reached the server", len(ls)), ls...)
	}
}

// allKeyOps are every op that takes a queue name: those above, once each.
func allKeyOps() []keyOp {
	var out []keyOp
	seen := map[string]bool{}
	for _, op := range slices.Concat(queueOps, idOps, laneOps) {
		if !seen[op.name] {
			seen[op.name] = true
			out = append(out, op)
		}
	}
	return out
}
