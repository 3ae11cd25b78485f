package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// The port protocol's own rules (contracts/PROTOCOL.md Part B): what a port owes the
// conversation itself, beside each op's effect — the seq echoed whatever its value, an unknown op
// answered UNSUPPORTED, a second hello refused, the test aids answered as their capabilities say,
// and hello's own fields held to their domains. C01 owns them: they are the session's handshake.

var rulesConversation = []Rule{ruleSeqEcho, ruleUnknownOp, ruleSecondHello, ruleAidUnsupported, ruleAidIgnored, ruleAidTTL, ruleInFlight, ruleDropped, ruleChopped}

var (
	ruleSeqEcho        = Rule{"seq-echo", `contracts/PROTOCOL.md Part B: "seq is echoed" — whatever the number the kit sends (not a count of the port's own), and "the reply to request n is the n-th line the port prints"`}
	ruleUnknownOp      = Rule{"unknown-op", `contracts/PROTOCOL.md Part B: "A failed op answers ok: false with error.type one of … UNSUPPORTED (an op the port does not implement)" — an op the protocol does not have is one, and the session goes on`}
	ruleSecondHello    = Rule{"second-hello", `contracts/PROTOCOL.md Part B: "a second hello on an open session is EMQARG" — and the open session goes on unchanged`}
	ruleAidUnsupported = Rule{"aid-unsupported", `contracts/PROTOCOL.md Part B clock: "a test aid, only for a port declaring capability clock … Other ports answer UNSUPPORTED"; Fields: "An op behind a capability the port does not declare … is answered UNSUPPORTED whatever its fields"`}
	ruleAidTTL         = Rule{"aid-minter-ttl", `contracts/PROTOCOL.md Part B hello: "minter_ttl_ms (a test aid, capability minter_ttl): lease the worker id for that many ms instead of the port's default"`}
	ruleAidIgnored     = Rule{"aid-ignored", `contracts/PROTOCOL.md Part B hello: "minter_ttl_ms (a test aid, capability minter_ttl) … a port without the capability ignores it"`}
)

// conversationClauses are C01's clauses of the port protocol's own rules.
var conversationClauses = []clause{
	{name: "seq-echoed-unknown-op-second-hello", body: seqEchoedUnknownOpSecondHello},
	{name: "test-aids-as-declared", body: testAidsAsDeclared},
	{name: "hello-fields", body: helloFields},
	{name: "requests-in-flight-served-in-order", body: requestsInFlightServedInOrder},
}

func seqEchoedUnknownOpSecondHello(t *T) {
	for _, seq := range []uint64{1<<53 - 1, 7, 1_000_000, 2} {
		t.cover(ruleSeqEcho)
		_, err := drivers.Raw(t.ctx, t.D, "slot", map[string]json.RawMessage{"seq": rawOf(seq), "key": rawOf("emq:{orders}:pending")})
		t.ok(err, ruleSeqEcho, fmt.Sprintf("slot sent with seq %d", seq))
	}
	_, err := drivers.Raw(t.ctx, t.D, "frobnicate", map[string]json.RawMessage{"queue": rawOf("orders")})
	var ue *drivers.UnsupportedError
	t.check(errors.As(err, &ue), ruleUnknownOp, "the op frobnicate, which the protocol does not have, is answered UNSUPPORTED", "%v", errText(err))
	before := t.snapshot()
	_, err = t.D.Hello(t.ctx, t.helloArgs())
	t.refused(err, emqerr.Arg, ruleSecondHello, "a second hello on the open session")
	t.check(diff(before, t.snapshot()) == "", ruleSecondHello, "a refused second hello changes nothing", "%s", diff(before, t.snapshot()))
	t.enqueue("orders", "after the second hello") // the session goes on
}

func testAidsAsDeclared(t *T) {
	caps := t.Hello.Capabilities
	// An op the port does not offer is UNSUPPORTED whatever its fields: one in its domain, and
	// one that a port offering the op would refuse EMQARG.
	unoffered := map[string][]map[string]json.RawMessage{}
	if !slices.Contains(caps, protocol.CapClock) {
		unoffered["clock"] = []map[string]json.RawMessage{{"set_ms": rawOf(protocol.EpochMS + 1000)}, {"set_ms": rawOf("soon")}}
	}
	if !slices.Contains(caps, protocol.CapBatch) {
		unoffered["enqueue_batch"] = []map[string]json.RawMessage{{"queue": rawOf("orders"), "jobs": json.RawMessage("null")}}
	}
	for _, op := range slices.Sorted(maps.Keys(unoffered)) {
		for _, fields := range unoffered[op] {
			_, err := drivers.Raw(t.ctx, t.D, op, fields)
			var ue *drivers.UnsupportedError
			t.check(errors.As(err, &ue), ruleAidUnsupported, fmt.Sprintf("%s %s, from a port that does not declare its capability, is answered UNSUPPORTED", op, rawFields(fields)), "%v", errText(err))
		}
	}
	if !slices.Contains(caps, protocol.CapMinterTTL) {
		d := t.start()
		_, err := d.Hello(t.ctx, protocol.HelloArgs{Valkey: t.cfg.Valkey, Cluster: t.cluster(), MinterTTLMS: 1})
		t.ok(err, ruleAidIgnored, "hello with minter_ttl_ms, from a port that does not declare the capability")
	}
	t.cover(ruleAidUnsupported, ruleAidIgnored)
}

func helloFields(t *T) {
	// reconnect lists no field, so only an unlisted one can be sent to it (B-277).
	t.domainsFail(append(t.helloDomains(), t.unknownFieldIgnored("reconnect", fixtures["reconnect"])...))
}

// helloDomains sends every input of hello's fields, each to a fresh session (a hello that
// succeeds opens it), and returns the mismatches.
func (t *T) helloDomains() []string {
	var bad []string
	base := map[string]any{"valkey": t.cfg.Valkey}
	if t.cluster() {
		base["cluster"] = true
	}
	for _, f := range protocol.Fields["hello"] {
		if f.Cap != "" && !slices.Contains(t.Hello.Capabilities, f.Cap) {
			continue // a port without the aid ignores the field (test-aids-as-declared)
		}
		for _, in := range inputsOf(f) {
			t.cover(in.rule)
			d := t.start()
			before, m := t.snapshot(), t.mark()
			_, err := drivers.Raw(t.ctx, d, "hello", rawRequest(base, f.Name, in.raw))
			if miss := t.judgeOn(in, err, m, before, withoutLeases); miss != "" {
				bad = append(bad, fmt.Sprintf("[%s] hello %s %s: %s", in.rule.ID, f.Name, in.label, miss))
			}
			if err == nil {
				// Its minter lease goes now, not by its TTL under the next input's snapshot.
				t.ok(d.Close(t.ctx), ruleClose, "close after an accepted hello")
			}
		}
	}
	return bad
}

// withoutLeases drops the minter leases from a snapshot: they come and go with the sessions the
// hello inputs open and close (a released lease lives one more millisecond).
func withoutLeases(snap map[string]string) map[string]string {
	for k := range snap {
		if strings.HasPrefix(k, "{emq}:minter:") {
			delete(snap, k)
		}
	}
	return snap
}

// rawFields writes a raw request's fields as one JSON object, for a report.
func rawFields(fields map[string]json.RawMessage) string {
	b, _ := json.Marshal(fields)
	return string(b)
}

func errText(err error) string {
	if err == nil {
		return "it succeeded"
	}
	return err.Error()
}
