package contracts

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/internal/chop"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

// The batch ops (contracts/PROTOCOL.md A17, capability "batch"): each job of a batch gets
// exactly its single-job op's effect, so the contracts that own enqueue, claim and complete
// drive the batches with the same checks. A port that does not declare the capability has these
// clauses NOT RUN (not offered).

// batcher is the port's batch ops, or NOT RUN when its hello does not declare them.
func (t *T) batcher() drivers.Batcher {
	if !slices.Contains(t.Hello.Capabilities, protocol.CapBatch) {
		t.notRun("the port does not declare the batch capability (the batch ops of A17)")
	}
	b, ok := t.D.(drivers.Batcher)
	if !ok {
		t.harness("the driver of a port declaring the batch capability has no batch ops")
	}
	return b
}

// enqueueBatchCutAtEveryByte is C02's, on a standalone server only (the relay stands in front of
// one server): an enqueue_batch whose connection the server drops under it. A port may send the
// batch as one script call or as several (a pipeline), and every clause else answers all of
// them; here, as C10 dropped-at-every-byte-of-the-morgue does for a morgue's reads, the port
// says hello through a relay, one enqueue_batch of three jobs (kit ids) measures the server's
// replies, and then, for every byte position n of them, the relay hands on n bytes and drops
// the port's connections under another enqueue_batch of three new ids. It must answer INTERNAL
// (B-282: a request that meets the loss may) or as documented (B-246, A17-1: one result per job,
// in order, each its job's id, whose row is then there), and the session must serve again
// within 30 s (B-282). A port that fails the whole batch's call on the loss and then reads the
// replies it never got, or exits, is caught at n = 0. Nothing waits on a clock: a cut the port's
// other traffic (a lease renewal's reply) moves only moves where the reply is cut.
func enqueueBatchCutAtEveryByte(t *T) {
	offered := true
	defer func() {
		if !offered {
			t.batcher() // NOT RUN, once the session through the relay is closed
		}
	}()
	t.throughRelay(0, rules.Dropped, relayHello, func(r *chop.Relay) {
		if offered = slices.Contains(t.Hello.Capabilities, protocol.CapBatch); !offered {
			return
		}
		b := t.batcher()
		base := uint64(1 << 45)
		batch := func() protocol.EnqueueBatchArgs {
			a := protocol.EnqueueBatchArgs{Queue: "orders"}
			for _, id := range kitIDs(3, base) {
				a.Jobs = append(a.Jobs, protocol.BatchJob{ID: id, PayloadB64: b64("cut")})
			}
			base += 3
			return a
		}
		t.atEveryByte(r, "an enqueue_batch", func() {
			_, err := b.EnqueueBatch(t.ctx, batch())
			t.ok(err, rules.BatchEnqueue, "enqueue_batch of three jobs through the relay")
		}, func(n int64) error {
			a := batch()
			got, err := b.EnqueueBatch(t.ctx, a)
			if err == nil {
				ok := len(got.Jobs) == len(a.Jobs)
				for i := 0; ok && i < len(a.Jobs); i++ {
					ok = got.Jobs[i].ID == a.Jobs[i].ID && t.exists(jobKey(t.q(a.Queue), a.Jobs[i].ID))
				}
				t.check(ok, rules.Dropped, fmt.Sprintf("an enqueue_batch whose connection the server dropped after %d bytes of its replies answers INTERNAL, or as documented (B-246: one result per job, in order, each job's row there)", n), "it answered %+v", got.Jobs)
			}
			return err
		})
	})
}

// enqueueBatchRows is C02's and C03's batch clauses.
func enqueueBatchRows(t *T) {
	b := t.batcher()
	q := t.q("orders")
	own := jobID(1 << 40)
	before := t.now()
	r, err := b.EnqueueBatch(t.ctx, protocol.EnqueueBatchArgs{Queue: "orders", Jobs: []protocol.BatchJob{
		{PayloadB64: b64("first")}, {ID: own, PayloadB64: b64("own id")}, {PayloadB64: b64("later"), DelayMS: 60000}, {PayloadB64: b64("")},
	}})
	after := t.now()
	t.ok(err, rules.BatchEnqueue, "enqueue_batch of four jobs")
	t.check(len(r.Jobs) == 4, rules.BatchEnqueue, "one result per job", "%d results", len(r.Jobs))
	for i, j := range r.Jobs {
		t.check(j.Created, rules.BatchEnqueue, fmt.Sprintf("job %d created", i), "created: false")
		t.validJob(j.ID)
	}
	t.check(r.Jobs[1].ID == own, rules.BatchEnqueue, "the job given an id keeps it: "+own, "%s", r.Jobs[1].ID)
	t.check(r.Jobs[0].ID < r.Jobs[2].ID && r.Jobs[2].ID < r.Jobs[3].ID, rules.MintOrder, "the minted ids in batch order", "%s %s %s", r.Jobs[0].ID, r.Jobs[2].ID, r.Jobs[3].ID)
	for i, want := range []map[string]string{
		{"state": "pending", "attempts": "0", "payload": "first"}, {"state": "pending", "attempts": "0", "payload": "own id"},
		{"state": "scheduled", "attempts": "0", "payload": "later"}, {"state": "pending", "attempts": "0", "payload": ""},
	} {
		row := t.hash(jobKey(q, r.Jobs[i].ID))
		t.check(fmt.Sprint(row) == fmt.Sprint(want), rules.BatchEnqueue, fmt.Sprintf("job %d's row %q, as enqueue writes it", i, want), "%q", row)
	}
	for _, i := range []int{0, 1, 3} {
		sc, ok := t.zscore(q.Pending(), r.Jobs[i].ID)
		t.check(ok && sc == 0, rules.BatchEnqueue, fmt.Sprintf("job %d in pending with score 0", i), "in pending %v, score %d", ok, sc)
	}
	due, ok := t.zscore(q.Scheduled(), r.Jobs[2].ID)
	t.check(ok && due >= before+60000 && due <= after+60000, rules.BatchEnqueue,
		fmt.Sprintf("the delayed job in scheduled within [%d, %d]", before+60000, after+60000), "in scheduled %v, due %d", ok, due)
	t.check(t.llen(q.Wake()) == 1, rules.BatchEnqueue, "the wake armed once (one token)", "wake length %d", t.llen(q.Wake()))
	// A batch whose every job is delayed: each due time is still the server's now plus its delay,
	// and it arms the (emptied) wake as a delayed enqueue does (canon §4, B-247).
	t.do("DEL", q.Wake())
	before = t.now()
	r, err = b.EnqueueBatch(t.ctx, protocol.EnqueueBatchArgs{Queue: "orders", Jobs: []protocol.BatchJob{{PayloadB64: b64("only later"), DelayMS: 30000}}})
	after = t.now()
	t.ok(err, rules.BatchEnqueue, "enqueue_batch of one delayed job")
	if len(r.Jobs) == 1 {
		due, ok = t.zscore(q.Scheduled(), r.Jobs[0].ID)
	}
	t.check(len(r.Jobs) == 1 && ok && due >= before+30000 && due <= after+30000, rules.BatchEnqueue,
		fmt.Sprintf("a batch of delayed jobs only: due within [%d, %d]", before+30000, after+30000), "%d results, in scheduled %v, due %d", len(r.Jobs), ok, due)
	t.check(t.llen(q.Wake()) == 1, rules.BatchEnqueue, "a batch of delayed jobs only arms the wake (one token)", "wake length %d", t.llen(q.Wake()))
}

// enqueueBatchDuplicates is C03's: a batch's duplicates change nothing, whether the id was already
// there or came earlier in the same batch.
func enqueueBatchDuplicates(t *T) {
	b := t.batcher()
	q := t.q("orders")
	old := t.enqueue("orders", "the original")
	c := t.mustClaim("orders", workLease)
	t.lcClearWake("orders")
	before := t.hash(jobKey(q, old))
	fresh := jobID(1 << 40)
	r, err := b.EnqueueBatch(t.ctx, protocol.EnqueueBatchArgs{Queue: "orders", Jobs: []protocol.BatchJob{
		{ID: old, PayloadB64: b64("a second payload")}, {ID: fresh, PayloadB64: b64("new")}, {ID: fresh, PayloadB64: b64("repeat"), DelayMS: 5000},
	}})
	t.ok(err, rules.BatchEnqueue, "enqueue_batch with duplicates")
	t.check(len(r.Jobs) == 3 && !r.Jobs[0].Created && r.Jobs[1].Created && !r.Jobs[2].Created, rules.BatchEnqueue,
		"created false, true, false (the id already there, the new one, its repeat)", "%+v", r.Jobs)
	after := t.hash(jobKey(q, old))
	t.check(fmt.Sprint(before) == fmt.Sprint(after), rules.BatchEnqueue, "the claimed job's row unchanged by its duplicate", "%q → %q", before, after)
	row := t.hash(jobKey(q, fresh))
	t.check(row["payload"] == "new" && row["state"] == "pending", rules.BatchEnqueue, "the first of the repeated ids wins: pending, payload new", "%q", row)
	t.in(q.Scheduled(), fresh, false, rules.BatchEnqueue)
	t.complete("orders", old, c.Token)
}

// batchOpsAfterScriptFlush is C06's: the batch ops are held to canon §5.3 as the single-job ops
// are (A17): after SCRIPT FLUSH each one meets NOSCRIPT, loads its script's exact source, retries
// once, and its effect happens exactly once — every job created once, claimed once with token 1,
// settled once.
func batchOpsAfterScriptFlush(t *T) {
	b := t.batcher()
	q := t.q("orders")
	jobs := []protocol.BatchJob{{PayloadB64: b64("a")}, {PayloadB64: b64("b")}, {PayloadB64: b64("c"), DelayMS: 60000}}
	m := t.mark()
	t.do("SCRIPT", "FLUSH")
	e, err := b.EnqueueBatch(t.ctx, protocol.EnqueueBatchArgs{Queue: "orders", Jobs: jobs})
	t.ok(err, rules.NoScript, "enqueue_batch after SCRIPT FLUSH")
	t.check(len(e.Jobs) == 3 && e.Jobs[0].Created && e.Jobs[1].Created && e.Jobs[2].Created, rules.NoScript, "three jobs, each created", "%+v", e.Jobs)
	for i, j := range e.Jobs {
		state := map[bool]string{true: "scheduled", false: "pending"}[jobs[i].DelayMS > 0]
		t.state("orders", j.ID, state, 0, rules.NoScript)
	}
	t.zsetIs(q.Pending(), []string{e.Jobs[0].ID, e.Jobs[1].ID}, rules.NoScript, "pending after enqueue_batch")
	t.zsetIs(q.Scheduled(), []string{e.Jobs[2].ID}, rules.NoScript, "scheduled after enqueue_batch")
	t.do("SCRIPT", "FLUSH")
	c, err := b.ClaimBatch(t.ctx, protocol.ClaimBatchArgs{Queue: "orders", LeaseMS: workLease, N: 5})
	t.ok(err, rules.NoScript, "claim_batch after SCRIPT FLUSH")
	t.check(len(c.Jobs) == 2 && c.Jobs[0].ID == e.Jobs[0].ID && c.Jobs[1].ID == e.Jobs[1].ID && c.Jobs[0].Token == 1 && c.Jobs[1].Token == 1,
		rules.NoScript, "the two pending jobs, oldest first, each with token 1", "%+v", c.Jobs)
	t.zsetIs(q.Pending(), nil, rules.NoScript, "pending after claim_batch")
	t.zsetIs(q.Active(), []string{e.Jobs[0].ID, e.Jobs[1].ID}, rules.NoScript, "active after claim_batch")
	t.do("SCRIPT", "FLUSH")
	r, err := b.CompleteBatch(t.ctx, protocol.CompleteBatchArgs{Queue: "orders", Jobs: []protocol.Pair{{ID: e.Jobs[0].ID, Token: 1}, {ID: e.Jobs[1].ID, Token: 1}}})
	t.ok(err, rules.NoScript, "complete_batch after SCRIPT FLUSH")
	t.check(len(r.Results) == 2 && r.Results[0].OK && r.Results[1].OK, rules.NoScript, "both pairs settle (a second run would find them gone: EMQSTALE)", "%+v", r.Results)
	t.zsetIs(q.Active(), nil, rules.NoScript, "active after complete_batch")
	// After a flush a script runs only once loaded again: every script the port called was
	// loaded (SCRIPT LOAD of its exact source), so the NOSCRIPT path was taken each time.
	called, loaded := map[string]bool{}, map[string]bool{}
	for _, l := range t.portCommands(m) {
		switch {
		case l.Cmd() == "EVALSHA":
			called[t.law.scripts[argAt(l, 1)].Name] = true
		case l.Cmd() == "SCRIPT" && strings.EqualFold(argAt(l, 1), "load"):
			sum := sha1.Sum([]byte(argAt(l, 2)))
			loaded[t.law.scripts[hex.EncodeToString(sum[:])].Name] = true
		}
	}
	for _, name := range []string{lua.EnqueueBatch, lua.ClaimBatch, lua.CompleteBatch} {
		t.check(called[name] && loaded[name], rules.NoScript, "the port called "+name+" and, after NOSCRIPT, loaded its exact source",
			"called %v, loaded %v", slices.Sorted(maps.Keys(called)), slices.Sorted(maps.Keys(loaded)))
	}
}

// batchOpsAfterSlotMoved is C06's, on a Valkey Cluster only: after hello the kit moves a queue's
// slot to another primary, so the slot map the port read is stale. The port still sends every
// call to the primary owning its keys' slot (B-35: it follows the old owner's MOVED), and the
// batch ops work there, every primary's scripts flushed first: enqueue_batch, the first call on
// the slot (a pipelined call whose redirected command is sent again alone, and meets NOSCRIPT),
// then claim_batch and complete_batch.
func batchOpsAfterSlotMoved(t *T) {
	b := t.batcher()
	name := t.queueOffPrimary("moved", 0)
	q := t.q(name)
	t.moveSlot(keys.Slot(q.Pending()), 0)
	// No primary holds a script: the call the old owner redirects meets NOSCRIPT on the new one,
	// where the port loads the script and sends the call again (a restarted primary, B-35 and
	// NOSCRIPT together).
	t.do("SCRIPT", "FLUSH")
	jobs := []protocol.BatchJob{{PayloadB64: b64("a")}, {PayloadB64: b64("b")}}
	e, err := b.EnqueueBatch(t.ctx, protocol.EnqueueBatchArgs{Queue: name, Jobs: jobs})
	t.ok(err, rules.ClusterOwner, "enqueue_batch on a queue whose slot moved to another primary after hello")
	t.check(len(e.Jobs) == 2 && e.Jobs[0].Created && e.Jobs[1].Created, rules.ClusterOwner, "two jobs, each created", "%+v", e.Jobs)
	t.zsetIs(q.Pending(), []string{e.Jobs[0].ID, e.Jobs[1].ID}, rules.ClusterOwner, "pending on the slot's new owner after enqueue_batch")
	c, err := b.ClaimBatch(t.ctx, protocol.ClaimBatchArgs{Queue: name, LeaseMS: workLease, N: 5})
	t.ok(err, rules.ClusterOwner, "claim_batch after the slot moved")
	t.check(len(c.Jobs) == 2 && c.Jobs[0].ID == e.Jobs[0].ID && c.Jobs[1].ID == e.Jobs[1].ID && c.Jobs[0].Token == 1 && c.Jobs[1].Token == 1,
		rules.ClusterOwner, "the two pending jobs, oldest first, each with token 1", "%+v", c.Jobs)
	r, err := b.CompleteBatch(t.ctx, protocol.CompleteBatchArgs{Queue: name, Jobs: []protocol.Pair{{ID: e.Jobs[0].ID, Token: 1}, {ID: e.Jobs[1].ID, Token: 1}}})
	t.ok(err, rules.ClusterOwner, "complete_batch after the slot moved")
	t.check(len(r.Results) == 2 && r.Results[0].OK && r.Results[1].OK, rules.ClusterOwner, "both pairs settle", "%+v", r.Results)
	t.zsetIs(q.Active(), nil, rules.ClusterOwner, "active on the slot's new owner after complete_batch")
}

// extendWhileItsSlotMigrates is C06's, on a Valkey Cluster only: a queue's slot is half way to
// another primary — every key already moved, the slot still MIGRATING on its owner and IMPORTING
// on the other — when the port extends a claimed job's lease. The owner answers ASK; the port sends
// ASKING, then the call, to the importing primary (A4-5), which runs it: extend's keys, the row
// and active, are all there. A port that takes ASK for MOVED sends the call there without
// ASKING (the wire law's cluster-owner), one that ignores it fails the call. The map the port
// read stays right: only the move's end, after the call, changes the owner, and the complete
// after it follows the old owner's MOVED.
func extendWhileItsSlotMigrates(t *T) {
	name := t.queueOffPrimary("asked", 0)
	q := t.q(name)
	id := t.enqueue(name, "before the move") // the port knows the owner, its scripts are loaded there
	c := t.claim(name, workLease)
	t.check(c != nil && c.ID == id && c.Token == 1, rules.Claim, "the claim before the move: the job, token 1", "%+v", c)
	slot := keys.Slot(q.Pending())
	from, err := t.admin.StartMove(t.ctx, slot, 0)
	if err != nil {
		t.harness("%v", err)
	}
	t.law.SlotMoved(t.admin.Nodes[from].Label)
	t.stops = append(t.stops, func() { // back where it was, the slot's keys with it
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if t.admin.PrimaryOf(slot) == from {
			_ = t.admin.EndMove(ctx, slot, 0)
		}
		_, _ = t.admin.MoveSlot(ctx, slot, from)
		dropMigrations(ctx, t.admin)
	})
	for _, c := range t.portClients() { // MIGRATE's connection carried the kit's RESTORE-ASKING
		if c["cmd"] == "restore-asking" {
			t.own = append(t.own, c["node"]+"|"+c["addr"])
		}
	}
	const lease = 7 * workLease
	before := t.now()
	x, err := t.D.Extend(t.ctx, protocol.ExtendArgs{FenceArgs: fa(name, id, 1), LeaseMS: lease})
	after := t.now()
	t.ok(err, rules.ClusterOwner, "extend while the queue's slot is half way to another primary (its owner answers ASK: ASKING, then the call, on the other)")
	if err := t.admin.EndMove(t.ctx, slot, 0); err != nil {
		t.harness("%v", err)
	}
	t.law.OwnedUntil(slot, t.mark(), t.admin.Nodes[from].Label)
	t.check(x.DeadlineMS >= before+lease && x.DeadlineMS <= after+lease, rules.ClusterOwner,
		fmt.Sprintf("the deadline extend answered while the slot was half way: the importing primary's TIME + %d ms", lease), "%d, outside [%d, %d]", x.DeadlineMS, before+lease, after+lease)
	t.leaseWithin(q.Active(), id, before, after, lease, rules.ClusterOwner)
	t.ok(t.D.Complete(t.ctx, fa(name, id, 1)), rules.ClusterOwner, "complete once the move ended (the old owner answers MOVED)")
	t.zsetIs(q.Active(), nil, rules.ClusterOwner, "active once the job completed on the slot's new owner")
}

// dropMigrations closes the connections MIGRATE left open between primaries (a source keeps
// one 10 s for the next MIGRATE), so that no later clause takes one for a port's.
func dropMigrations(ctx context.Context, a *admin) {
	for _, nd := range a.Nodes {
		v, err := nd.C.Do(ctx, "CLIENT", "LIST")
		if err != nil {
			continue
		}
		for _, l := range strings.Split(v.Text(), "\n") {
			if strings.Contains(l, " cmd=restore-asking ") {
				for _, kv := range strings.Fields(l) {
					if id, ok := strings.CutPrefix(kv, "id="); ok {
						_, _ = nd.C.Do(ctx, "CLIENT", "KILL", "ID", id)
					}
				}
			}
		}
	}
}

// queueOffPrimary is the first queue name prefix0, prefix1, … whose slot the primary of index
// primary (slot order) does not own.
func (t *T) queueOffPrimary(prefix string, primary int) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		if t.admin.PrimaryOf(keys.Slot(t.q(name).Pending())) != primary {
			return name
		}
	}
}

// moveSlot moves slot to the primary of index to (slot order) while the port's session is open,
// and back once the clause's checks are done (the slot's keys with it). The wire law lets the
// old owner answer the port MOVED. Moving to the first primary keeps the primaries' order.
func (t *T) moveSlot(slot uint16, to int) {
	from, err := t.admin.MoveSlot(t.ctx, slot, to)
	if err != nil {
		t.harness("%v", err)
	}
	t.law.SlotMoved(t.admin.Nodes[from].Label)
	t.stops = append(t.stops, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = t.admin.MoveSlot(ctx, slot, from)
	})
}

// zsetIs checks that the sorted set key holds exactly want, in order.
func (t *T) zsetIs(key string, want []string, rule rules.Rule, when string) {
	got, _ := t.zset(key)
	t.check(slices.Equal(got, want), rule, fmt.Sprintf("%s: %s holds exactly %v", when, key, want), "%v", got)
}

// claimBatch is C06's: the n oldest, each as claim leases it.
func claimBatch(t *T) {
	b := t.batcher()
	q := t.q("orders")
	var want []string
	for i := range 5 {
		want = append(want, t.enqueue("orders", fmt.Sprintf("job %d", i)))
	}
	t.do("DEL", q.Wake()) // each claim of the batch re-arms the wake while work remains (A13-2)
	before := t.now()
	r, err := b.ClaimBatch(t.ctx, protocol.ClaimBatchArgs{Queue: "orders", LeaseMS: workLease, N: 3})
	after := t.now()
	t.ok(err, rules.BatchClaim, "claim_batch n 3")
	t.check(t.llen(q.Wake()) == 1, rules.WakeClaimRearm, "claim_batch of 3 of 5 pending re-arms the wake (work remains)", "wake length %d", t.llen(q.Wake()))
	t.check(len(r.Jobs) == 3, rules.BatchClaim, "three jobs", "%d", len(r.Jobs))
	for i, j := range r.Jobs {
		t.check(j.ID == want[i] && j.Token == 1 && unb64(j.PayloadB64) == fmt.Sprintf("job %d", i) && j.CheckpointB64 == nil, rules.BatchClaim,
			fmt.Sprintf("claim %d: %s, token 1, its payload, no checkpoint", i, want[i]), "%s token %d payload %q", j.ID, j.Token, unb64(j.PayloadB64))
		t.state("orders", j.ID, "active", 1, rules.BatchClaim)
		t.leaseWithin(q.Active(), j.ID, before, after, workLease, rules.BatchClaim)
	}
	for _, id := range want[3:] {
		t.state("orders", id, "pending", 0, rules.BatchClaim)
	}
	t.do("DEL", q.Wake())
	r, err = b.ClaimBatch(t.ctx, protocol.ClaimBatchArgs{Queue: "orders", LeaseMS: workLease, N: 1000})
	t.ok(err, rules.BatchClaim, "claim_batch n 1000")
	t.check(len(r.Jobs) == 2, rules.BatchClaim, "the two left", "%d", len(r.Jobs))
	t.check(t.llen(q.Wake()) == 0, rules.WakeClaimRearm, "claim_batch that takes the last pending jobs leaves the wake unarmed", "wake length %d", t.llen(q.Wake()))
	r, err = b.ClaimBatch(t.ctx, protocol.ClaimBatchArgs{Queue: "orders", LeaseMS: workLease, N: 5})
	t.ok(err, rules.BatchClaim, "claim_batch on an empty queue")
	t.check(len(r.Jobs) == 0, rules.BatchClaim, "an empty list from an empty queue", "%d jobs", len(r.Jobs))
	// A redelivery carries the earlier attempt's checkpoint, as claim's does (A3).
	step := "step\x00\xff of job 0"
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", want[0], 1), DataB64: b64(step)}), rules.Checkpoint, "checkpoint")
	t.retried("orders", want[0], 1, 0)
	r, err = b.ClaimBatch(t.ctx, protocol.ClaimBatchArgs{Queue: "orders", LeaseMS: workLease, N: 5})
	t.ok(err, rules.BatchClaim, "claim_batch of the retried job")
	t.check(len(r.Jobs) == 1 && r.Jobs[0].ID == want[0] && r.Jobs[0].Token == 2, rules.BatchClaim, "the retried job, token 2", "%v", r.Jobs)
	t.checkpointBytes(&r.Jobs[0], step)
	// Paused: nothing, the backlog kept; the limit bites at 1000.
	t.kitEnqueue("held", kitIDs(1001, 1<<41))
	t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "held"}), rules.QueuePause, "pause")
	snap := t.snapshot()
	r, err = b.ClaimBatch(t.ctx, protocol.ClaimBatchArgs{Queue: "held", LeaseMS: workLease, N: 10})
	t.ok(err, rules.BatchClaim, "claim_batch on a paused queue")
	t.check(len(r.Jobs) == 0 && diff(snap, t.snapshot()) == "", rules.BatchClaim, "a paused queue: an empty list, nothing changed", "%d jobs; %s", len(r.Jobs), diff(snap, t.snapshot()))
	t.ok(t.D.Resume(t.ctx, protocol.QueueArgs{Queue: "held"}), rules.QueuePause, "resume")
	r, err = b.ClaimBatch(t.ctx, protocol.ClaimBatchArgs{Queue: "held", LeaseMS: workLease, N: protocol.MaxBatch})
	t.ok(err, rules.BatchClaim, "claim_batch n 1000 of 1001")
	t.check(len(r.Jobs) == protocol.MaxBatch && t.lcZcard(t.q("held").Pending()) == 1, rules.BatchClaim,
		"1000 claimed, the 1001st left pending", "%d claimed, %d pending", len(r.Jobs), t.lcZcard(t.q("held").Pending()))
}

// completeBatchPairsFenced is C07's and C08's clause of complete_batch (C07 names it for the stale
// pair, C08 for the retired ones): every pair fenced on its own, every settled job retired
// everywhere.
func completeBatchPairsFenced(t *T) {
	b := t.batcher()
	q := t.q("orders")
	a := t.enqueue("orders", "a")
	ca := t.mustClaim("orders", workLease)
	t.lcCheckpoint("orders", a, ca.Token, "ckpt")
	t.retried("orders", a, ca.Token, 0) // leaves a last error
	ca = t.mustClaim("orders", workLease)
	bj := t.enqueue("orders", "b")
	cb := t.mustClaim("orders", workLease)
	lj := t.laneEnqueue("orders", "east", "lane")
	lj2 := t.laneEnqueue("orders", "east", "lane 2")
	cl := t.laneClaim("orders", workLease)
	cl2 := t.laneClaim("orders", workLease)
	t.check(cl != nil && cl.ID == lj && cl2 != nil && cl2.ID == lj2, rules.Lanes, "lane_claim takes the lane's jobs, oldest first", "%+v, %+v", cl, cl2)
	pairs := []protocol.Pair{{ID: a, Token: ca.Token}, {ID: bj, Token: cb.Token + 1}, {ID: lj, Token: cl.Token}, {ID: a, Token: ca.Token}}
	// A pair's token past A16's 1e14 is EMQARG for the whole call and changes nothing, as
	// complete's is (outOfRangeArgumentsRefused): the live pair beside it stays active.
	_, err := b.CompleteBatch(t.ctx, protocol.CompleteBatchArgs{Queue: "orders", Jobs: []protocol.Pair{{ID: a, Token: ca.Token}, {ID: bj, Token: protocol.MaxMS + 1}}})
	t.refused(err, emqerr.Arg, rules.FieldRange, "complete_batch with a pair's token 1e14+1")
	t.state("orders", a, "active", ca.Token, rules.FieldRange)
	rowB := t.hash(jobKey(q, bj))
	r, err := b.CompleteBatch(t.ctx, protocol.CompleteBatchArgs{Queue: "orders", Jobs: pairs})
	t.ok(err, rules.BatchComplete, "complete_batch")
	t.check(len(r.Results) == 4, rules.BatchComplete, "one result per pair", "%d", len(r.Results))
	okAt := func(i int) bool { return i < len(r.Results) && r.Results[i].OK }
	staleAt := func(i int) bool {
		return i < len(r.Results) && !r.Results[i].OK && r.Results[i].Error != nil && r.Results[i].Error.Type == string(emqerr.TypeStale)
	}
	t.check(okAt(0) && okAt(2), rules.BatchComplete, "the live pairs settle", "%+v", r.Results)
	t.check(staleAt(1) && staleAt(3), rules.BatchStale, "the wrong token and the repeated pair are EMQSTALE", "%+v", r.Results)
	t.check(fmt.Sprint(rowB) == fmt.Sprint(t.hash(jobKey(q, bj))), rules.BatchStale, "the stale pair's row unchanged", "%q", t.hash(jobKey(q, bj)))
	t.in(q.Active(), bj, true, rules.BatchStale)
	for _, id := range []string{a, lj} {
		t.check(!t.exists(jobKey(q, id)), rules.BatchComplete, id+"'s row gone", "still there")
		t.in(q.Active(), id, false, rules.BatchComplete)
		_, hasCk := t.hget(q.Ckpt(), id)
		_, hasErr := t.hget(q.Errors(), id)
		_, hasLane := t.hget(q.LaneOf(), id)
		t.check(!hasCk && !hasErr && !hasLane, rules.BatchComplete, id+": no checkpoint, no last error, no laneof", "checkpoint %v error %v laneof %v", hasCk, hasErr, hasLane)
	}
	// The lane had two active jobs: one settled lowers its count by exactly one, as complete
	// does; the second, settled by a batch of its own, takes the count away at zero.
	n, _ := t.hget(q.Lanes(), "active:east")
	t.check(n == "1", rules.BatchComplete, "the lane's active count down by one (2 claimed, 1 settled)", "active:east = %q", n)
	// The lane has no backlog: settling its job must not put it in the ring (A14, in the ring
	// iff serviceable, at most once), nor may the last settlement below.
	t.ringIsServiceable("orders", []string{"east"}, "after complete_batch settled one of the lane's two jobs")
	r, err = b.CompleteBatch(t.ctx, protocol.CompleteBatchArgs{Queue: "orders", Jobs: []protocol.Pair{{ID: lj2, Token: cl2.Token}}})
	t.ok(err, rules.BatchComplete, "complete_batch of the lane's second job")
	t.check(len(r.Results) == 1 && r.Results[0].OK, rules.BatchComplete, "the lane's second job settles", "%+v", r.Results)
	_, counted := t.hget(q.Lanes(), "active:east")
	t.check(!counted, rules.BatchComplete, "the lane's active count gone at zero", "active:east still there")
	t.ringIsServiceable("orders", []string{"east"}, "after complete_batch settled the lane's last job")
	t.complete("orders", bj, cb.Token)
}
