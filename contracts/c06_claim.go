package contracts

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
)

// c06 is contract C06: claim.
var c06 = Contract{ID: "C06", Name: "claim",
	Rule: "token 1 on first claim; payload returned; state active; lease = server TIME + lease_ms in active; empty or paused queue → empty reply; after SCRIPT FLUSH the claim still happens exactly once",
	clauses: []clause{
		{name: "claim-batch", body: claimBatch},
		fieldsClause(fieldGroup{[]string{"claim", "claim_batch"}, ownField}),
		{name: "first-claim-token-1", body: firstClaimToken1},
		{name: "empty-queue-empty-reply", body: emptyQueueEmptyReply},
		{name: "paused-queue-empty-reply", body: pausedQueueEmptyReply},
		{name: "largest-payload-and-checkpoint", body: largestPayloadAndCheckpoint},
		{name: "payload-bytes-round-trip", body: payloadBytesRoundTrip},
		{name: "checkpoint-bytes-redelivered", body: checkpointBytesRedelivered},
		{name: "claim-changes-only-its-job", body: claimChangesOnlyItsJob},
		{name: "paused-claims-change-nothing", body: pausedClaimsChangeNothing},
		{name: "after-script-flush-exactly-once", body: afterScriptFlushExactlyOnce},
		{name: "server-error-not-reloaded", body: serverErrorNotReloaded},
		{name: "batch-ops-after-script-flush", body: batchOpsAfterScriptFlush},
		{name: "batch-ops-after-slot-moved", body: batchOpsAfterSlotMoved, only: clusterOnly},
		{name: "extend-while-its-slot-migrates", body: extendWhileItsSlotMigrates, only: clusterOnly},
		{name: "walk-plain", body: walkPlain.body},
	},
}

func firstClaimToken1(t *T) {
	q := t.q("orders")
	id := t.enqueue("orders", "the payload")
	m := t.mark()
	before := t.now()
	c := t.mustClaim("orders", 5000)
	after := t.now()
	t.check(c.ID == id && c.Token == 1 && unb64(c.PayloadB64) == "the payload" && c.CheckpointB64 == nil, rules.Claim,
		fmt.Sprintf("{id %s, payload %q, token 1, no checkpoint}", id, "the payload"),
		"{id %s, payload %q, token %d, checkpoint %v}", c.ID, unb64(c.PayloadB64), c.Token, c.CheckpointB64)
	t.state("orders", id, "active", 1, rules.Claim)
	t.leaseWithin(q.Active(), id, before, after, 5000, rules.Claim)
	t.in(q.Pending(), id, false, rules.Claim)
	t.durationOnWire(m, lua.Claim, 5000)
	// A claim re-arms the wake while work remains, and not past the last job (§4.2-12, A13-2),
	// as claim_batch is held to in claimBatch.
	second := t.enqueue("orders", "second")
	t.enqueue("orders", "third")
	t.do("DEL", q.Wake())
	c = t.mustClaim("orders", 5000)
	t.check(c.ID == second && t.llen(q.Wake()) == 1, rules.WakeClaimRearm, "a claim of 1 of 2 pending re-arms the wake (work remains)",
		"claimed %s, wake length %d", c.ID, t.llen(q.Wake()))
	t.do("DEL", q.Wake())
	t.mustClaim("orders", 5000)
	t.check(t.llen(q.Wake()) == 0, rules.WakeClaimRearm, "a claim of the last pending job leaves the wake unarmed", "wake length %d", t.llen(q.Wake()))
}

func emptyQueueEmptyReply(t *T) {
	before := t.snapshot()
	t.check(t.claim("orders", 5000) == nil, rules.Claim, "an empty reply from an empty queue", "a job")
	d := diff(before, t.snapshot())
	t.check(d == "", rules.Claim, "an empty claim changes nothing", "%s", d)
}

func pausedQueueEmptyReply(t *T) {
	q := t.q("orders")
	// meta holds queue-wide facts (§2.2-8), paused only one of them: another fact written
	// there by someone else is no pause.
	t.do("HSET", q.Meta(), "owner", "billing")
	first := t.enqueue("orders", "first")
	c0 := t.claim("orders", workLease)
	t.check(c0 != nil && c0.ID == first, rules.Claim, "a claim with another fact in meta (owner) and no paused field takes the job", "%s", claimText(c0))
	id := t.enqueue("orders", "held")
	t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "orders"}), rules.QueuePause, "pause")
	p, _ := t.hget(q.Meta(), "paused")
	t.check(p == "1", rules.QueuePause, "meta.paused = 1", "meta.paused = %q", p)
	t.check(t.claim("orders", 5000) == nil, rules.Claim, "an empty reply from a paused queue", "a job")
	t.state("orders", id, "pending", 0, rules.Claim)
	t.in(q.Pending(), id, true, rules.Claim)
	t.ok(t.D.Resume(t.ctx, protocol.QueueArgs{Queue: "orders"}), rules.QueuePause, "resume")
	c := t.mustClaim("orders", 5000)
	t.check(c.ID == id && c.Token == 1, rules.Claim, "after resume the held job, token 1", "%s token %d", c.ID, c.Token)
}

// The payload crosses enqueue → row → claim as opaque bytes: every odd payload comes
// back exactly, from claim and from lane_claim, and the row holds exactly it.
func payloadBytesRoundTrip(t *T) {
	q := t.q("orders")
	ps := oddPayloads()
	var plain, lane []string
	for _, p := range ps {
		plain = append(plain, t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: base64.StdEncoding.EncodeToString([]byte(p))}))
		lane = append(lane, t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", Lane: "east", PayloadB64: base64.StdEncoding.EncodeToString([]byte(p))}))
	}
	for i, p := range ps {
		for _, id := range []string{plain[i], lane[i]} {
			got, _ := t.hget(jobKey(q, id), "payload")
			t.check(got == p, rules.ClaimBytes, fmt.Sprintf("row %s holds payload %s", id, short(p)), "%s", short(got))
		}
	}
	for i, p := range ps {
		t.claimedBytes(t.mustClaim("orders", workLease), plain[i], p, rules.ClaimBytes)
		t.claimedBytes(t.laneClaim("orders", workLease), lane[i], p, rules.ClaimBytes)
	}
}

// A checkpoint of odd bytes (and an empty one) comes back exactly on the redelivery
// after a retry, from claim and from lane_claim; a first claim has none.
func checkpointBytesRedelivered(t *T) {
	q := t.q("orders")
	ps := oddPayloads()
	for _, lane := range []string{"", "east"} {
		claim := func() *protocol.ClaimResult {
			if lane == "" {
				return t.mustClaim("orders", workLease)
			}
			c := t.laneClaim("orders", workLease)
			t.check(c != nil, rules.ClaimCheckpointBytes, "lane_claim returns the lane's job", "an empty reply")
			return c
		}
		id := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", Lane: lane, PayloadB64: b64("work")})
		c := claim()
		t.check(c.ID == id && c.CheckpointB64 == nil, rules.ClaimCheckpointBytes, "a first claim of "+id+" has no checkpoint", "%s checkpoint %v", c.ID, c.CheckpointB64)
		for _, p := range ps {
			t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", id, c.Token), DataB64: base64.StdEncoding.EncodeToString([]byte(p))}), rules.Checkpoint, "checkpoint")
			got, ok := t.hget(q.Ckpt(), id)
			t.check(ok && got == p, rules.Checkpoint, "ckpt["+id+"] holds exactly "+short(p), "%v %s", ok, short(got))
			_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c.Token), MaxAttempts: 100, Error: "again"})
			t.ok(err, rules.Retry, "retry")
			c = claim()
			t.check(c.ID == id, rules.ClaimCheckpointBytes, "the redelivery of "+id, "%s", c.ID)
			t.checkpointBytes(c, p)
		}
		t.complete("orders", id, c.Token)
	}
}

// Each claim, first or redelivery, plain or lane, has exactly its effect on the whole
// keyspace, among dead, active, scheduled and retried jobs with errors and checkpoints.
func claimChangesOnlyItsJob(t *T) {
	dead := t.enqueue("orders", "dies")
	t.claimExact("orders", false, workLease)
	t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", dead, 1), Error: "boom"}), rules.Fail, "fail")
	held := t.enqueue("orders", "held")
	t.claimExact("orders", false, workLease)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", held, 1), DataB64: b64("held step")}), rules.Checkpoint, "checkpoint")
	again := t.enqueue("orders", "again\x00\xff")
	t.claimExact("orders", false, workLease)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", again, 1), DataB64: b64("step\x00\xfe")}), rules.Checkpoint, "checkpoint")
	t.retried("orders", again, 1, 0)
	t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("later"), DelayMS: 60000})
	t.enqueue("orders", "a")
	t.enqueue("orders", "")
	first := t.claimExact("orders", false, workLease)
	t.check(first == again, rules.Claim, "the redelivery first (oldest id)", "%s", first)
	t.claimExact("orders", false, workLease)
	t.claimExact("orders", false, workLease)
	lr := t.laneEnqueue("orders", "east", "lane again")
	t.claimExact("orders", true, workLease)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", lr, 1), DataB64: b64("lane step")}), rules.Checkpoint, "checkpoint")
	t.retried("orders", lr, 1, 0)
	t.laneEnqueue("orders", "west", "w")
	t.laneEnqueue("orders", "east", "e")
	got := t.claimExact("orders", true, workLease)
	t.check(got == lr, rules.Lanes, "east's redelivery first", "%s", got)
	t.claimExact("orders", true, workLease)
	t.claimExact("orders", true, workLease)
}

// A paused queue answers both claims empty and nothing moves: not the pending set,
// not a lane, not the ring's order.
func pausedClaimsChangeNothing(t *T) {
	t.enqueue("orders", "held")
	t.laneEnqueue("orders", "east", "e")
	t.laneEnqueue("orders", "west", "w")
	t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "orders"}), rules.QueuePause, "pause")
	for range 2 {
		before := t.snapshot()
		t.check(t.laneClaim("orders", 5000) == nil, rules.QueuePause, "lane_claim on a paused queue answers empty", "a job")
		d := diff(before, t.snapshot())
		t.check(d == "", rules.QueuePause, "an empty lane_claim on a paused queue changes nothing (the ring keeps its order)", "%s", d)
		t.check(t.claim("orders", 5000) == nil, rules.QueuePause, "claim on a paused queue answers empty", "a job")
		d = diff(before, t.snapshot())
		t.check(d == "", rules.QueuePause, "an empty claim on a paused queue changes nothing", "%s", d)
	}
}

// serverErrorNotReloaded: once the server holds the enqueue script, a script that meets a
// server error of its own (the queue's wake key holds a string, so the enqueue's wake arm
// answers WRONGTYPE) ran: the port answers INTERNAL (B-14: not a canon refusal) and never
// loads the script to send it again, which only NOSCRIPT allows (canon §5.3: a retry after any
// other error may apply an effect twice). The wire law sees a reload; the clause counts the
// enqueue script's sends.
func serverErrorNotReloaded(t *T) {
	q := t.q("orders")
	t.enqueue("orders", "first") // the server holds the script now: no NOSCRIPT below
	t.do("DEL", q.Wake())
	t.do("SET", q.Wake(), "not a list")
	m := t.mark()
	_, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("x")})
	t.cover(rules.NoScript)
	t.check(t.answeredInternal(err), rules.NoScript, "an enqueue whose script meets WRONGTYPE answers INTERNAL", "%v", err)
	runs := 0
	for _, l := range t.portLines(m) {
		if t.evalshaOf(l) == lua.Enqueue {
			runs++
		}
	}
	t.check(runs == 1, rules.NoScript, "the enqueue script sent once: a script that answered an error other than NOSCRIPT ran, and is not sent again", "%d EVALSHA of it", runs)
	t.do("DEL", q.Wake())
}

func afterScriptFlushExactlyOnce(t *T) {
	q := t.q("orders")
	first := t.enqueue("orders", "one")
	second := t.enqueue("orders", "two")
	t.do("SCRIPT", "FLUSH")
	m := t.mark()
	c := t.mustClaim("orders", 5000)
	t.check(c.ID == first && c.Token == 1, rules.NoScript, "the oldest job, token 1", "%s token %d", c.ID, c.Token)
	t.state("orders", first, "active", 1, rules.NoScript)
	pending, _ := t.zset(q.Pending())
	active, _ := t.zset(q.Active())
	t.check(strings.Join(pending, ",") == second && strings.Join(active, ",") == first, rules.NoScript,
		"exactly one claim happened: pending = [second], active = [first]", "pending %v, active %v", pending, active)
	claimSHA := t.cfg.Bundle.MustScript(lua.Claim).SHA1
	lines := t.portLines(m)
	loaded, pops := false, 0
	for _, l := range lines {
		if l.Cmd() == "SCRIPT" && strings.EqualFold(argAt(l, 1), "load") {
			sum := sha1.Sum([]byte(argAt(l, 2)))
			loaded = loaded || t.law.scripts[hex.EncodeToString(sum[:])].Name == lua.Claim
		}
		if l.Client == "lua" && l.Cmd() == "ZPOPMIN" {
			pops++
		}
	}
	t.cover(rules.NoScript)
	if !loaded {
		t.fail(rules.NoScript, "SCRIPT LOAD of the claim's exact source after NOSCRIPT", "no such SCRIPT LOAD", lines...)
	}
	t.check(pops == 1, rules.NoScript, "the claim script ran once ("+claimSHA[:8]+"…)", "it popped %d times", pops)
}
