package contracts

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/echomq/kit/contracts/internal/domains"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
)

// The largest bytes a job carries (contracts/PROTOCOL.md Part B, B-281): every other clause
// sends payloads of at most 64 KiB, below a line cap a port might keep for itself (a 1 MiB
// buffer, a regular expression that recurses once a group). The bound is modest because every
// byte crosses the harness's MONITOR capture twice, escaped.

// largeBytes is n bytes holding every byte value (NUL, CR, LF and the high half among them)
// spread over the whole length, in an order no line reader keeps whole by accident; seed tells
// two of them apart. One byte in every 31 runs through all 256 values (131 is odd, so k·131
// mod 256 visits each), and the bytes between are printable. MONITOR escapes each byte outside
// printable ASCII with a formatted print of its own, for the EVALSHA's argument and again for
// the script's HSET: with every byte of 1.5 MiB drawn from all 256 values an enqueue cost the
// server 0.2 s (seconds on a loaded machine, which a correct port's health watch rightly took
// for a silent server); sprinkled, 0.03 s. 31 is prime, so the unprintable bytes still fall at
// every offset modulo 4096 (TestLargeBytesSpreadEveryByteValue), a reader's chunk size.
func largeBytes(n, seed int) string {
	const every, text = 31, "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		if (i+seed)%every == 0 {
			k := (i + seed) / every
			b[i] = byte(k*131 + k>>8 + seed)
		} else {
			b[i] = text[(i+seed)%len(text)]
		}
	}
	return string(b)
}

// largestPayloadAndCheckpoint is C06's: a 1.5 MiB payload enqueued and claimed, then a 512 KiB
// checkpoint written and redelivered beside it (2 MiB in one reply), byte for byte.
func largestPayloadAndCheckpoint(t *T) {
	big := largeBytes(1536<<10, 0)
	id := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: base64.StdEncoding.EncodeToString([]byte(big))})
	got, _ := t.hget(jobKey(t.q("orders"), id), "payload")
	t.check(got == big, rules.LargestBytes, fmt.Sprintf("row %s holds the 1.5 MiB payload", id), "%s", short(got))
	c := t.mustClaim("orders", 60000)
	t.claimedBytes(c, id, big, rules.LargestBytes)
	ckpt := largeBytes(512<<10, 1)
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa("orders", id, c.Token), DataB64: base64.StdEncoding.EncodeToString([]byte(ckpt))}), rules.LargestBytes, "a 512 KiB checkpoint")
	t.retried("orders", id, c.Token, 0)
	c = t.mustClaim("orders", 60000)
	t.claimedBytes(c, id, big, rules.LargestBytes)
	t.checkpointBytes(c, ckpt)
	t.longestLine()
}

// lineBound is the request line B-281 has every port read.
const lineBound = 4 << 20

// longestLine sends an enqueue whose request line is 4 MiB less 256 bytes: the job's 2 MiB
// travels in a line of about 2.8 MB, so a port that reads lines into a 3 MiB buffer certified.
// An ignored field (B-277) fills the line, so no more bytes cross the MONITOR capture.
func (t *T) longestLine() {
	const payload = "a job in a 4 MiB line"
	fields := map[string]json.RawMessage{"queue": domains.Raw("orders"), "payload_b64": domains.Raw(b64(payload))}
	small, err := json.Marshal(fields)
	if err != nil {
		t.harness("%v", err)
	}
	fields[unknownField] = domains.Raw(strings.Repeat("a", lineBound-256-len(small)))
	raw, err := drivers.Raw(t.ctx, t.D, "enqueue", fields)
	t.ok(err, rules.LargestBytes, "an enqueue whose request line is 4 MiB less 256 bytes (an ignored field fills it)")
	var e protocol.EnqueueResult
	decodeInto(t, raw, &e, "enqueue")
	got, _ := t.hget(jobKey(t.q("orders"), e.ID), "payload")
	t.check(e.Created && got == payload, rules.LargestBytes, fmt.Sprintf("the job sent in a 4 MiB line is created with its payload %q", payload), "created %v, payload %q", e.Created, short(got))
}
