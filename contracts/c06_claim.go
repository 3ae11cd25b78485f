package contracts

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

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
	t.check(c.ID == id && c.Token == 1 && unb64(c.PayloadB64) == "the payload" && c.CheckpointB64 == nil, ruleClaim,
		fmt.Sprintf("{id %s, payload %q, token 1, no checkpoint}", id, "the payload"),
		"{id %s, payload %q, token %d, checkpoint %v}", c.ID, unb64(c.PayloadB64), c.Token, c.CheckpointB64)
	t.state("orders", id, "active", 1, ruleClaim)
	t.leaseWithin(q.Active(), id, before, after, 5000, ruleClaim)
	t.in(q.Pending(), id, false, ruleClaim)
	t.durationOnWire(m, lua.Claim, 5000)
}

func emptyQueueEmptyReply(t *T) {
	before := t.snapshot()
	t.check(t.claim("orders", 5000) == nil, ruleClaim, "an empty reply from an empty queue", "a job")
	d := diff(before, t.snapshot())
	t.check(d == "", ruleClaim, "an empty claim changes nothing", "%s", d)
}

func pausedQueueEmptyReply(t *T) {
	q := t.q("orders")
	// meta holds queue-wide facts (§2.2-8), paused only one of them: another fact written
	// there by someone else is no pause.
	t.do("HSET", q.Meta(), "owner", "billing")
	first := t.enqueue("orders", "first")
	c0 := t.claim("orders", 30000)
	t.check(c0 != nil && c0.ID == first, ruleClaim, "a claim with another fact in meta (owner) and no paused field takes the job", "%s", claimText(c0))
	id := t.enqueue("orders", "held")
	t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleQueuePause, "pause")
	p, _ := t.hget(q.Meta(), "paused")
	t.check(p == "1", ruleQueuePause, "meta.paused = 1", "meta.paused = %q", p)
	t.check(t.claim("orders", 5000) == nil, ruleClaim, "an empty reply from a paused queue", "a job")
	t.state("orders", id, "pending", 0, ruleClaim)
	t.in(q.Pending(), id, true, ruleClaim)
	t.ok(t.D.Resume(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleQueuePause, "resume")
	c := t.mustClaim("orders", 5000)
	t.check(c.ID == id && c.Token == 1, ruleClaim, "after resume the held job, token 1", "%s token %d", c.ID, c.Token)
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
			t.check(got == p, ruleClaimBytes, fmt.Sprintf("row %s holds payload %s", id, short(p)), "%s", short(got))
		}
	}
	for i, p := range ps {
		t.claimedBytes(t.mustClaim("orders", 30000), plain[i], p, ruleClaimBytes)
		t.claimedBytes(t.laneClaim("orders", 30000), lane[i], p, ruleClaimBytes)
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
				return t.mustClaim("orders", 30000)
			}
			c := t.laneClaim("orders", 30000)
			t.check(c != nil, ruleClaimCheckpointBytes, "lane_claim returns the lane's job", "an empty reply")
			return c
		}
		id := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", Lane: lane, PayloadB64: b64("work")})
		c := claim()
		t.check(c.ID == id && c.CheckpointB64 == nil, ruleClaimCheckpointBytes, "a first claim of "+id+" has no checkpoint", "%s checkpoint %v", c.ID, c.CheckpointB64)
		for _, p := range ps {
			t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", id, c.Token), DataB64: base64.StdEncoding.EncodeToString([]byte(p))}), ruleCheckpoint, "checkpoint")
			got, ok := t.hget(q.Ckpt(), id)
			t.check(ok && got == p, ruleCheckpoint, "ckpt["+id+"] holds exactly "+short(p), "%v %s", ok, short(got))
			_, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa("orders", id, c.Token), MaxAttempts: 100, Error: "again"})
			t.ok(err, ruleRetry, "retry")
			c = claim()
			t.check(c.ID == id, ruleClaimCheckpointBytes, "the redelivery of "+id, "%s", c.ID)
			t.checkpointBytes(c, p)
		}
		t.complete("orders", id, c.Token)
	}
}

// Each claim, first or redelivery, plain or lane, has exactly its effect on the whole
// keyspace, among dead, active, scheduled and retried jobs with errors and checkpoints.
func claimChangesOnlyItsJob(t *T) {
	dead := t.enqueue("orders", "dies")
	t.claimExact("orders", false, 30000)
	t.ok(t.D.Fail(t.ctx, protocol.FailArgs{FenceArgs: fa("orders", dead, 1), Error: "boom"}), ruleFail, "fail")
	held := t.enqueue("orders", "held")
	t.claimExact("orders", false, 30000)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", held, 1), DataB64: b64("held step")}), ruleCheckpoint, "checkpoint")
	again := t.enqueue("orders", "again\x00\xff")
	t.claimExact("orders", false, 30000)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", again, 1), DataB64: b64("step\x00\xfe")}), ruleCheckpoint, "checkpoint")
	t.retried("orders", again, 1, 0)
	t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("later"), DelayMS: 60000})
	t.enqueue("orders", "a")
	t.enqueue("orders", "")
	first := t.claimExact("orders", false, 30000)
	t.check(first == again, ruleClaim, "the redelivery first (oldest id)", "%s", first)
	t.claimExact("orders", false, 30000)
	t.claimExact("orders", false, 30000)
	lr := t.laneEnqueue("orders", "east", "lane again")
	t.claimExact("orders", true, 30000)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", lr, 1), DataB64: b64("lane step")}), ruleCheckpoint, "checkpoint")
	t.retried("orders", lr, 1, 0)
	t.laneEnqueue("orders", "west", "w")
	t.laneEnqueue("orders", "east", "e")
	got := t.claimExact("orders", true, 30000)
	t.check(got == lr, ruleLanes, "east's redelivery first", "%s", got)
	t.claimExact("orders", true, 30000)
	t.claimExact("orders", true, 30000)
}

// A paused queue answers both claims empty and nothing moves: not the pending set,
// not a lane, not the ring's order.
func pausedClaimsChangeNothing(t *T) {
	t.enqueue("orders", "held")
	t.laneEnqueue("orders", "east", "e")
	t.laneEnqueue("orders", "west", "w")
	t.ok(t.D.Pause(t.ctx, protocol.QueueArgs{Queue: "orders"}), ruleQueuePause, "pause")
	for range 2 {
		before := t.snapshot()
		t.check(t.laneClaim("orders", 5000) == nil, ruleQueuePause, "lane_claim on a paused queue answers empty", "a job")
		d := diff(before, t.snapshot())
		t.check(d == "", ruleQueuePause, "an empty lane_claim on a paused queue changes nothing (the ring keeps its order)", "%s", d)
		t.check(t.claim("orders", 5000) == nil, ruleQueuePause, "claim on a paused queue answers empty", "a job")
		d = diff(before, t.snapshot())
		t.check(d == "", ruleQueuePause, "an empty claim on a paused queue changes nothing", "%s", d)
	}
}

func afterScriptFlushExactlyOnce(t *T) {
	q := t.q("orders")
	first := t.enqueue("orders", "one")
	second := t.enqueue("orders", "two")
	t.do("SCRIPT", "FLUSH")
	m := t.mark()
	c := t.mustClaim("orders", 5000)
	t.check(c.ID == first && c.Token == 1, ruleNoScript, "the oldest job, token 1", "%s token %d", c.ID, c.Token)
	t.state("orders", first, "active", 1, ruleNoScript)
	pending, _ := t.zset(q.Pending())
	active, _ := t.zset(q.Active())
	t.check(strings.Join(pending, ",") == second && strings.Join(active, ",") == first, ruleNoScript,
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
	t.cover(ruleNoScript)
	if !loaded {
		t.fail(ruleNoScript, "SCRIPT LOAD of the claim's exact source after NOSCRIPT", "no such SCRIPT LOAD", lines...)
	}
	t.check(pops == 1, ruleNoScript, "the claim script ran once ("+claimSHA[:8]+"…)", "it popped %d times", pops)
}
