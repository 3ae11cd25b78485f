package contracts

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
)

// c04 is contract C04: kind.
var c04 = Contract{ID: "C04", Name: "kind",
	Rule: "a wrong-kind id (EMQKIND), a malformed id, a bad queue or lane name (EMQKEY) is refused before any command reaches the server",
	clauses: slices.Concat(refusalOrderClauses, []clause{
		fieldsClause(fieldGroup{namedOps, nameField}, fieldGroup{[]string{"key", "slot"}, ownField}),
		{name: "wrong-brand-refused-before-server", body: wrongBrandRefusedBeforeServer},
		{name: "malformed-id-refused", body: malformedIDRefused},
		{name: "bad-queue-name-refused", body: badQueueNameRefused},
		{name: "bad-lane-name-refused", body: badLaneNameRefused},
		{name: "bad-queue-refused-by-every-op", body: badQueueRefusedByEveryOp},
		{name: "bad-id-refused-by-every-op", body: badIDRefusedByEveryOp},
		{name: "largest-snowflake-accepted", body: largestSnowflakeAccepted},
		{name: "bad-lane-refused-by-every-op", body: badLaneRefusedByEveryOp},
		{name: "name-edges-accepted-by-every-op", body: nameEdgesAcceptedByEveryOp},
	}),
}

func wrongBrandRefusedBeforeServer(t *T) {
	ord := ids.Encode("ORD", 1<<40)
	m := t.mark()
	_, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", ID: ord, PayloadB64: b64("x")})
	refuse(t, emqerr.Kind, "enqueue of "+ord, err)
	_, err = t.D.Key(t.ctx, protocol.KeyArgs{Queue: "orders", Type: "job", ID: ord})
	refuse(t, emqerr.Kind, "the job key of "+ord, err)
	refuse(t, emqerr.Kind, "complete of "+ord, t.D.Complete(t.ctx, fa("orders", ord, 1)))
	_, err = t.D.Extend(t.ctx, protocol.ExtendArgs{FenceArgs: fa("orders", ord, 1), LeaseMS: 1000})
	refuse(t, emqerr.Kind, "extend of "+ord, err)
	_, err = t.D.Revive(t.ctx, protocol.JobArgs{Queue: "orders", ID: ord})
	refuse(t, emqerr.Kind, "revive of "+ord, err)
	noWire(t, m, "a wrong-kind id")
}

func malformedIDRefused(t *T) {
	m := t.mark()
	for _, bad := range []string{"JOB123", "JOB0000000000!", "JOB00000000000A", "JOB000000 000A", "JOB"} {
		_, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", ID: bad, PayloadB64: b64("x")})
		refuse(t, emqerr.Key, fmt.Sprintf("enqueue of malformed id %q", bad), err)
		_, err = t.D.Key(t.ctx, protocol.KeyArgs{Queue: "orders", Type: "job", ID: bad})
		refuse(t, emqerr.Key, fmt.Sprintf("the job key of malformed id %q", bad), err)
		refuse(t, emqerr.Key, fmt.Sprintf("complete of malformed id %q", bad), t.D.Complete(t.ctx, fa("orders", bad, 1)))
	}
	noWire(t, m, "a malformed id")
}

func badQueueNameRefused(t *T) {
	m := t.mark()
	for _, bad := range []string{"Orders", "a b", "a:b", "{x}", "ü", strings.Repeat("q", 65), "orders}:x"} {
		_, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: bad, PayloadB64: b64("x")})
		refuse(t, emqerr.Key, fmt.Sprintf("enqueue on queue %q", bad), err)
		_, err = t.D.Claim(t.ctx, protocol.ClaimArgs{Queue: bad, LeaseMS: 1000})
		refuse(t, emqerr.Key, fmt.Sprintf("claim on queue %q", bad), err)
		_, err = t.D.Key(t.ctx, protocol.KeyArgs{Queue: bad, Type: "pending"})
		refuse(t, emqerr.Key, fmt.Sprintf("the pending key of queue %q", bad), err)
	}
	noWire(t, m, "a bad queue name")
	// The grammar's edge is accepted: 64 bytes of the alphabet.
	long := strings.Repeat("a", 62) + ".-"
	t.enqueue(long, "edge")
}

func badLaneNameRefused(t *T) {
	m := t.mark()
	for _, bad := range []string{"East", "a b", "a:b", strings.Repeat("g", 65)} {
		_, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", Lane: bad, PayloadB64: b64("x")})
		refuse(t, emqerr.Key, fmt.Sprintf("lane enqueue into lane %q", bad), err)
		refuse(t, emqerr.Key, fmt.Sprintf("lane_pause of lane %q", bad), t.D.LanePause(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: bad}))
		refuse(t, emqerr.Key, fmt.Sprintf("lane_ceiling of lane %q", bad), t.D.LaneCeiling(t.ctx, protocol.QueueArgs{Queue: "orders", Lane: bad, Ceiling: 1}))
		_, err = t.D.Key(t.ctx, protocol.KeyArgs{Queue: "orders", Type: "lane", Lane: bad})
		refuse(t, emqerr.Key, fmt.Sprintf("the key of lane %q", bad), err)
	}
	noWire(t, m, "a bad lane name")
}

// Every op that takes a queue, an id or a lane refuses a bad one, before any byte.
func badQueueRefusedByEveryOp(t *T) {
	id := jobID(1 << 40)
	for _, bad := range []string{"", "Orders", "a!b", "a b", "a:b", "{x}", "or{ders", "ü", strings.Repeat("q", 65), "orders\n"} {
		t.refusedEverywhere(allKeyOps(), emqerr.Key, bad, id, "east", fmt.Sprintf("queue %q", bad))
	}
}

func badIDRefusedByEveryOp(t *T) {
	good := jobID(1 << 40)
	for _, bad := range []string{"JOB123", good + "0", good[:13], "JOB0000000000!", "JOB000000 000A", "JOB", "", "job" + good[3:], "Job" + good[3:], "JOB000000000-A", "JOB00000000\xc3\xa9", "JOBzzzzzzzzzzz", "JOBLygHa16AHYG",
		"@" + good[1:], "JO[" + good[3:]} { // the bytes just outside the capitals, 'A'-1 and 'Z'+1, in the brand
		if bad == "" {
			continue // an absent id means "mint one" on enqueue
		}
		t.refusedEverywhere(idOps, emqerr.Key, "orders", bad, "east", fmt.Sprintf("malformed id %q", bad))
	}
	for _, brand := range []string{"ORD", "USR", "JOC", "AAA", "ZZZ"} { // the capitals' edges are capitals
		other := ids.Encode(brand, 1<<40)
		t.refusedEverywhere(idOps, emqerr.Kind, "orders", other, "east", "id "+other+" of brand "+brand)
	}
}

// The largest 64-bit snowflake is a JOB id like any other.
func largestSnowflakeAccepted(t *T) {
	top := jobID(math.MaxUint64)
	got := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", ID: top, PayloadB64: b64("top")})
	t.check(got == top, rules.KeyBuilder, "enqueue keeps the id "+top, "%s", got)
	c := t.mustClaim("orders", workLease)
	t.check(c.ID == top, rules.KeyBuilder, "the claim returns "+top, "%s", c.ID)
	t.complete("orders", top, c.Token)
}

func badLaneRefusedByEveryOp(t *T) {
	id := jobID(1 << 40)
	for _, bad := range []string{"East", "a!b", "a b", "a:b", "{x}", "ü", strings.Repeat("g", 65)} {
		t.refusedEverywhere(laneOps, emqerr.Key, "orders", id, bad, fmt.Sprintf("lane %q", bad))
	}
}

// The grammar's edges are names: 64 bytes, and every byte of [a-z0-9_.-], as queue and
// as lane, through every op that takes them.
func nameEdgesAcceptedByEveryOp(t *T) {
	alphabet := "abcdefghijklmnopqrstuvwxyz0123456789_.-"
	for _, name := range []string{strings.Repeat("a", 62) + ".-", alphabet, "0", "_", ".", "-"} {
		id := t.mintOne()
		for _, op := range queueOps {
			if op.name == "park" {
				continue // a park needs work to finish promptly; the name is what counts
			}
			t.ok(op.run(t, name, id, name), rules.KeyBuilder, fmt.Sprintf("%s on queue %q, lane %q", op.name, name, name))
		}
		for _, op := range laneOps {
			t.ok(op.run(t, name, id, name), rules.KeyBuilder, fmt.Sprintf("%s on queue %q, lane %q", op.name, name, name))
		}
		// The name is the key's name, unchanged: the row and the lane under it exist.
		q := t.q(name)
		k, err := t.D.Key(t.ctx, protocol.KeyArgs{Queue: name, Type: "lane", Lane: name})
		t.ok(err, rules.KeyBuilder, "key lane")
		t.check(k.Key == laneKey(q, name), rules.KeyBuilder, "the lane key "+laneKey(q, name), "%q", k.Key)
		t.check(t.exists(jobKey(q, id)) && t.exists(laneKey(q, name)), rules.KeyBuilder,
			fmt.Sprintf("%s and %s written", jobKey(q, id), laneKey(q, name)), "missing")
	}
}

func noWire(t *T, m int, what string) {
	t.cover(rules.KeyBuilder)
	if ls := t.portCommands(m); len(ls) > 0 {
		t.fail(rules.KeyBuilder, what+" is refused before any command reaches the server", fmt.Sprintf("%d command(s) reached the server", len(ls)), ls...)
	}
}

func refuse(t *T, want *emqerr.Error, what string, err error) {
	t.refused(err, want, rules.KeyBuilder, what)
}
