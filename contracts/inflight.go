package contracts

import (
	"encoding/json"
	"fmt"

	"github.com/echomq/kit/contracts/internal/domains"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
)

// Requests in flight (contracts/PROTOCOL.md Part B, B-1 and B-280): the kit writes a run of
// requests before it reads a reply, so a port holds several at once. A port that serves them
// concurrently answers the fast ones before a slow one (a reply out of sequence) or lets a
// request run before the effects of those written ahead of it (a claim of a job not yet
// enqueued, a complete of a job not yet claimed). With one request in flight, as every other
// clause sends them, neither can show.

// requestsInFlightServedInOrder is C01's clause of several requests written at once.
func requestsInFlightServedInOrder(t *T) {
	mint, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 2})
	t.ok(err, rules.InFlight, "mint of the two jobs' ids")
	t.check(len(mint.IDs) == 1 && len(mint.IDs[0]) == 2, rules.InFlight, "mint n 2 answers one list of two ids", "%v", mint.IDs)
	first, second := mint.IDs[0][0], mint.IDs[0][1]
	reqs := []drivers.RawRequest{
		// A park on a queue nobody fills takes its timeout_ms by design: the slow request.
		request("park", "queue", "idle", "consumers", 1, "jobs", 1, "lease_ms", 60_000, "park_ms", 100, "timeout_ms", 300),
		request("slot", "key", "emq:{orders}:pending"),
		request("enqueue", "queue", "orders", "id", second, "payload_b64", b64("second")),
		request("enqueue", "queue", "orders", "id", first, "payload_b64", b64("first")),
		request("claim", "queue", "orders", "lease_ms", 60_000),
		request("complete", "queue", "orders", "id", first, "token", 1),
		request("claim", "queue", "orders", "lease_ms", 60_000),
	}
	replies, err := drivers.Pipeline(t.ctx, t.D, reqs)
	t.ok(err, rules.InFlight, fmt.Sprintf("%d requests written before the first reply was read, answered in order", len(reqs)))
	for i, r := range replies {
		t.ok(r.Err, rules.InFlight, fmt.Sprintf("request %d (%s) of the run", i+1, reqs[i].Op))
	}
	var park protocol.ParkResult
	var firstClaim, secondClaim *protocol.ClaimResult
	decodeInto(t, replies[0].Result, &park, "park")
	decodeInto(t, replies[4].Result, &firstClaim, "the first claim")
	decodeInto(t, replies[6].Result, &secondClaim, "the second claim")
	t.check(len(park.Jobs) == 0, rules.InFlight, "the park on a queue nobody fills ends with no job", "%d jobs", len(park.Jobs))
	// Ids order pending jobs by mint order, whatever order they were enqueued in: the first
	// claim takes first, which the complete behind it settles, so the second takes second.
	t.check(firstClaim != nil && firstClaim.ID == first && firstClaim.Token == 1, rules.InFlight,
		fmt.Sprintf("the claim written after both enqueues takes %s (the older id) with token 1", first), "%s", claimText(firstClaim))
	t.check(secondClaim != nil && secondClaim.ID == second && secondClaim.Token == 1, rules.InFlight,
		fmt.Sprintf("the claim written after the complete of %s takes %s with token 1", first, second), "%s", claimText(secondClaim))
	t.state("orders", second, "active", 1, rules.InFlight)
	t.check(!t.exists(jobKey(t.q("orders"), first)), rules.InFlight, "the completed job's row is gone", "%s remains", jobKey(t.q("orders"), first))
	// An enqueue with no id waits on the port's minter before its script runs: a claim written
	// right behind it must still see the job (a port that runs requests side by side lets the
	// claim find the queue empty).
	reqs = []drivers.RawRequest{
		request("enqueue", "queue", "minted", "payload_b64", b64("its id minted by the port")),
		request("claim", "queue", "minted", "lease_ms", 60_000),
	}
	replies, err = drivers.Pipeline(t.ctx, t.D, reqs)
	t.ok(err, rules.InFlight, "an enqueue with no id and a claim written together, answered in order")
	var enq protocol.EnqueueResult
	var claim *protocol.ClaimResult
	if len(replies) == 2 && replies[0].Err == nil && replies[1].Err == nil {
		decodeInto(t, replies[0].Result, &enq, "the enqueue")
		decodeInto(t, replies[1].Result, &claim, "the claim")
	}
	t.check(enq.ID != "" && claim != nil && claim.ID == enq.ID, rules.InFlight,
		"the claim written right behind an enqueue whose id the port mints takes that job", "enqueued %q, claimed %s", enq.ID, claimText(claim))
}

// request is a raw request of op with fields from name, value pairs.
func request(op string, kv ...any) drivers.RawRequest {
	f := make(map[string]json.RawMessage, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		f[kv[i].(string)] = domains.Raw(kv[i+1])
	}
	return drivers.RawRequest{Op: op, Fields: f}
}

// decodeInto decodes a raw result into v, failing the clause under the in-flight rule when it
// does not decode (the driver checked it against the schema: a harness bug if so).
func decodeInto(t *T, raw json.RawMessage, v any, what string) {
	if err := json.Unmarshal(raw, v); err != nil {
		t.fail(rules.InFlight, what+"'s result decodes", err.Error())
	}
}

// claimText is a claim's result for a failure message.
func claimText(c *protocol.ClaimResult) string {
	if c == nil {
		return "nothing claimed"
	}
	return fmt.Sprintf("claimed %s with token %d", c.ID, c.Token)
}
