package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/echomq/kit/contracts/internal/domains"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

// The port protocol's own rules (contracts/PROTOCOL.md Part B): what a port owes the
// conversation itself, beside each op's effect — the seq echoed whatever its value, an unknown op
// answered UNSUPPORTED, a second hello refused, the test aids answered as their capabilities say,
// and hello's own fields held to their domains. C01 owns them: they are the session's handshake.

// conversationClauses are C01's clauses of the port protocol's own rules.
var conversationClauses = []clause{
	{name: "seq-echoed-unknown-op-second-hello", body: seqEchoedUnknownOpSecondHello},
	{name: "test-aids-as-declared", body: testAidsAsDeclared},
	{name: "hello-fields", body: helloFields},
	{name: "requests-in-flight-served-in-order", body: requestsInFlightServedInOrder},
	{name: "unreadable-lines-refused", body: unreadableLinesRefused},
	{name: "input-ended-mid-park", body: inputEndedMidPark},
	{name: "input-ended-after-close", body: inputEndedAfterClose},
	{name: "input-ended-behind-an-enqueue", body: inputEndedBehindAnEnqueue},
	{name: "input-ended-inside-a-line", body: inputEndedInsideALine},
}

func seqEchoedUnknownOpSecondHello(t *T) {
	for _, seq := range []uint64{1<<53 - 1, 7, 1_000_000, 2} {
		t.cover(rules.SeqEcho)
		_, err := drivers.Raw(t.ctx, t.D, "slot", map[string]json.RawMessage{"seq": domains.Raw(seq), "key": domains.Raw("emq:{orders}:pending")})
		t.ok(err, rules.SeqEcho, fmt.Sprintf("slot sent with seq %d", seq))
	}
	// A seq is an integer however JSON writes it (B-87): 1e3 and 7.0 are the seqs 1000 and 7.
	for _, c := range []struct {
		text string
		seq  uint64
	}{{`{"seq":1e3,"op":"slot","key":"emq:{orders}:pending"}`, 1000}, {`{"seq":7.0,"op":"slot","key":"emq:{orders}:pending"}`, 7}} {
		raw, err := drivers.Line(t.ctx, t.D, []byte(c.text), c.seq)
		var s protocol.SlotResult
		t.ok(errors.Join(err, json.Unmarshal(raw, &s)), rules.SeqEcho, fmt.Sprintf("the request %s, answered under seq %d", c.text, c.seq))
		t.check(err != nil || s.Slot == int(keys.Slot("emq:{orders}:pending")), rules.SeqEcho, "slot answers the key's slot", "%d", s.Slot)
	}
	_, err := drivers.Raw(t.ctx, t.D, "frobnicate", map[string]json.RawMessage{"queue": domains.Raw("orders")})
	var ue *drivers.UnsupportedError
	t.check(errors.As(err, &ue), rules.UnknownOp, "the op frobnicate, which the protocol does not have, is answered UNSUPPORTED", "%v", errText(err))
	// An op that is not a string names no op either: UNSUPPORTED, under the request's own seq
	// (B-285 answers seq 0 only to a line without a usable seq).
	for _, text := range opsNotStrings {
		_, err := drivers.Line(t.ctx, t.D, []byte(text), 9)
		t.check(errors.As(err, &ue), rules.UnknownOp, fmt.Sprintf("the request %s is answered UNSUPPORTED under seq 9", text), "%v", errText(err))
	}
	before := t.snapshot()
	_, err = t.D.Hello(t.ctx, t.helloArgs())
	t.refused(err, emqerr.Arg, rules.SecondHello, "a second hello on the open session")
	t.check(diff(before, t.snapshot()) == "", rules.SecondHello, "a refused second hello changes nothing", "%s", diff(before, t.snapshot()))
	t.enqueue("orders", "after the second hello") // the session goes on
}

// opsNotStrings are the requests seqEchoedUnknownOpSecondHello writes by hand with an op that is
// not a string: requests, each answered UNSUPPORTED under its seq 9.
var opsNotStrings = []string{`{"seq":9,"op":7}`, `{"seq":9,"op":["slot"]}`}

// unreadableLines are the lines unreadableLinesRefused writes: not one is a request.
var unreadableLines = []string{`not json`, `{"seq":5,"op":"slot"`, `[1,2]`, `42`, `null`, `"slot"`,
	`{"op":"slot","key":"emq:{orders}:pending"}`, `{"seq":"7","op":"slot","key":"emq:{orders}:pending"}`, `{"seq":-1,"op":"slot","key":"emq:{orders}:pending"}`,
	`{"seq":9007199254740992,"op":"slot","key":"emq:{orders}:pending"}`}

// unreadableLinesRefused writes lines that are not requests — not JSON, cut short, JSON of
// another kind, objects without a usable seq (one past 2⁵³ − 1 too, B-293) — each answered
// EMQARG under seq 0 with nothing changed, and a request after each one served (B-285). A port
// without a conversation (the reference in-process) answers them through the kit's JSON layer,
// which its stdio server serves.
func unreadableLinesRefused(t *T) {
	t.enqueue("orders", "before the lines")
	for _, line := range unreadableLines {
		before := t.snapshot()
		_, err := drivers.Line(t.ctx, t.D, []byte(line), 0)
		t.refused(err, emqerr.Arg, rules.BadLine, fmt.Sprintf("the line %s", line))
		t.check(diff(before, t.snapshot()) == "", rules.BadLine, fmt.Sprintf("the line %s changes nothing", line), "%s", diff(before, t.snapshot()))
		s, err := t.D.Slot(t.ctx, protocol.SlotArgs{Key: "emq:{orders}:pending"})
		t.ok(err, rules.BadLine, fmt.Sprintf("slot, the request after the line %s", line))
		t.check(s.Slot == int(keys.Slot("emq:{orders}:pending")), rules.BadLine, "slot answers the key's slot", "%d", s.Slot)
	}
	c := t.mustClaim("orders", workLease)
	t.check(unb64(c.PayloadB64) == "before the lines", rules.BadLine, "the session goes on: the job enqueued before the lines is claimed", "%q", unb64(c.PayloadB64))
	t.badLineInTurn()
}

// badLineInTurn writes a line that is not a request behind a park still running (it takes its
// timeout_ms by design) and a request behind the line, before reading a reply: the line's EMQARG
// comes after the park's reply and before the request's (B-297), never as soon as it is read.
func (t *T) badLineInTurn() {
	t.cover(rules.BadLineInTurn)
	reqs := []drivers.RawRequest{
		request("park", "queue", "idle", "consumers", 1, "jobs", 1, "lease_ms", 60_000, "park_ms", 100, "timeout_ms", 300),
		{Line: []byte(unreadableLines[0])},
		request("slot", "key", "emq:{orders}:pending"),
	}
	what := fmt.Sprintf("a park, the line %s and a slot written before the first reply was read, answered in that order", unreadableLines[0])
	replies, err := drivers.Pipeline(t.ctx, t.D, reqs)
	t.ok(err, rules.BadLineInTurn, what)
	t.ok(replies[0].Err, rules.BadLineInTurn, what+": the park")
	t.refused(replies[1].Err, emqerr.Arg, rules.BadLineInTurn, what+": the line")
	t.ok(replies[2].Err, rules.BadLineInTurn, what+": the slot")
}

func testAidsAsDeclared(t *T) {
	caps := t.Hello.Capabilities
	// An op the port does not offer is UNSUPPORTED whatever its fields: one in its domain, and
	// one that a port offering the op would refuse EMQARG.
	unoffered := map[string][]map[string]json.RawMessage{}
	if !slices.Contains(caps, protocol.CapClock) {
		unoffered["clock"] = []map[string]json.RawMessage{{"set_ms": domains.Raw(protocol.EpochMS + 1000)}, {"set_ms": domains.Raw("soon")}}
	}
	if !slices.Contains(caps, protocol.CapBatch) {
		unoffered["enqueue_batch"] = []map[string]json.RawMessage{{"queue": domains.Raw("orders"), "jobs": json.RawMessage("null")}}
	}
	for _, op := range slices.Sorted(maps.Keys(unoffered)) {
		for _, fields := range unoffered[op] {
			_, err := drivers.Raw(t.ctx, t.D, op, fields)
			var ue *drivers.UnsupportedError
			t.check(errors.As(err, &ue), rules.AidUnsupported, fmt.Sprintf("%s %s, from a port that does not declare its capability, is answered UNSUPPORTED", op, rawFields(fields)), "%v", errText(err))
		}
	}
	if !slices.Contains(caps, protocol.CapMinterTTL) {
		d := t.start()
		_, err := d.Hello(t.ctx, protocol.HelloArgs{Valkey: t.cfg.Valkey, Cluster: t.cluster(), MinterTTLMS: 1})
		t.ok(err, rules.AidIgnored, "hello with minter_ttl_ms, from a port that does not declare the capability")
	}
	t.cover(rules.AidUnsupported, rules.AidIgnored)
	if !t.cluster() {
		t.clusterOnStandalone(slices.Contains(caps, protocol.CapCluster))
	}
}

// clusterOnStandalone says hello with cluster: true to a fresh process, against the run's
// standalone Valkey: a port declaring the capability refuses the server EMQSERVER (B-36), a port
// without it answers an error (B-37) — it does not ignore the field and open a standalone
// session — and a shape fault beside it is EMQARG all the same (B-100). No refused hello opens
// a session: the process then answers a hello as a first one (B-288).
func (t *T) clusterOnStandalone(declared bool) {
	d := t.start()
	for _, c := range []struct {
		fields map[string]json.RawMessage
		shape  bool
	}{
		{map[string]json.RawMessage{"valkey": domains.Raw(t.cfg.Valkey), "cluster": domains.Raw(true)}, false},
		{map[string]json.RawMessage{"valkey": domains.Raw(nil), "cluster": domains.Raw(true)}, true},
		{map[string]json.RawMessage{"cluster": domains.Raw(true)}, true},
	} {
		_, err := drivers.Raw(t.ctx, d, "hello", c.fields)
		what := fmt.Sprintf("hello %s against the run's standalone Valkey", rawFields(c.fields))
		switch {
		case c.shape:
			t.refused(err, emqerr.Arg, rules.ShapeFirst, what+" (a shape fault beside cluster mode)")
		case declared:
			t.refused(err, emqerr.Server, rules.ClusterRefused, what+", from a port declaring the capability cluster,")
		default:
			t.check(err != nil, rules.ClusterRefused, what+", from a port that does not declare the capability cluster, answers an error (not a standalone session)", "%s", errText(err))
		}
	}
	_, err := d.Hello(t.ctx, t.helloArgs())
	t.ok(err, rules.ClusterRefused, "hello against Valkey 8.1, after the refused hellos with cluster: true in the same process (answered as a first one)")
	t.ok(d.Close(t.ctx), rules.Close, "close after an accepted hello")
}

func helloFields(t *T) {
	// reconnect lists no field, so only an unlisted one can be sent to it (B-277).
	bad := append(t.helloDomains(), t.unknownFieldIgnored("reconnect", fixtures["reconnect"])...)
	t.domainsFail(append(bad, t.closeUnknownFieldsIgnored()...))
}

// closeUnknownFieldsIgnored says hello to a fresh process and closes its session with every
// unlisted field of unknownFieldIgnored at once (close lists no field and ends the session, so
// one request carries them all): the close is answered ok, as if they were not there (B-277).
func (t *T) closeUnknownFieldsIgnored() []string {
	t.cover(rules.FieldUnknown)
	d := t.start()
	if _, err := d.Hello(t.ctx, t.helloArgs()); err != nil {
		return []string{fmt.Sprintf("[%s] hello before a close with unknown fields: %v", rules.FieldUnknown.ID, err)}
	}
	req := map[string]json.RawMessage{}
	for _, name := range append([]string{unknownField}, unknownNames...) {
		req[name] = domains.Raw(1)
	}
	_, err := drivers.Raw(t.ctx, d, "close", req)
	if got, text := domains.Classify(err); got != domains.Accept {
		return []string{fmt.Sprintf("[%s] close with the unknown fields %s: the fields are ignored, got %s", rules.FieldUnknown.ID, rawFields(req), text)}
	}
	_ = d.Close(t.ctx) // the port has ended its session; this only reaps the process
	return nil
}

// helloDomains sends every input of hello's fields and returns the mismatches. A refused hello
// opens no session (only an open one refuses a second hello, B-19), so the next input goes to the
// same process; a hello that succeeds opens it, and the next input gets a fresh one. A process
// whose last hellos were refused says an in-domain hello at the end: refusals leave the port
// able to open its session (a port that refused everything after its first refusal would
// otherwise pass the refusals that follow it).
func (t *T) helloDomains() []string {
	var bad []string
	base := map[string]any{"valkey": t.cfg.Valkey}
	if t.cluster() {
		base["cluster"] = true
	}
	var d drivers.Driver // a process with no session open yet
	for _, f := range protocol.Fields["hello"] {
		if f.Cap != "" && !slices.Contains(t.Hello.Capabilities, f.Cap) {
			continue // a port without the aid ignores the field (test-aids-as-declared)
		}
		for _, in := range domains.Inputs(f) {
			t.cover(in.Rule)
			if d == nil {
				d = t.start()
			}
			before, m := t.snapshot(), t.mark()
			_, err := drivers.Raw(t.ctx, d, "hello", domains.Request(base, f.Name, in.Raw))
			if miss := t.judgeOn(in, err, m, before, withoutLeases); miss != "" {
				bad = append(bad, fmt.Sprintf("[%s] hello %s %s: %s", in.Rule.ID, f.Name, in.Label, miss))
			}
			if err == nil && f.Name == "minter_ttl_ms" {
				// Accepted is not honoured: the lease on the wire is for the ms asked, at the
				// domain's edges too (a port that raised a short lease to a floor of its own
				// certified: red team 55).
				if px, asked := t.leasePX(m), rawInt(in.Raw); asked >= 0 && px != asked {
					bad = append(bad, fmt.Sprintf("[%s] hello %s %s: a port declaring minter_ttl leases for hello's minter_ttl_ms, PX %d: the lease on the wire is PX %d", rules.AidTTL.ID, f.Name, in.Label, asked, px))
				}
			}
			if err == nil {
				// Its minter lease goes now, not by its TTL under the next input's snapshot.
				t.ok(d.Close(t.ctx), rules.Close, "close after an accepted hello")
				d = nil
			}
		}
	}
	// valkey's domain is host:port (B-102), and a bracket belongs to a host only as the pair
	// around an IPv6 literal: a host with one bracket, at either end, around the run's own server
	// is no host:port, and the hello is refused (the fields table types no refusal for it) with
	// no session opened — never connected to the server the rest of the string names.
	t.cover(rules.FieldType)
	if host, port, err := net.SplitHostPort(t.cfg.Valkey); err == nil {
		for _, addr := range []string{"x" + host + "]:" + port, "[" + host + "x:" + port} {
			if d == nil {
				d = t.start()
			}
			if _, err := drivers.Raw(t.ctx, d, "hello", domains.Request(base, "valkey", domains.Raw(addr))); err == nil {
				bad = append(bad, fmt.Sprintf("[%s] hello valkey %q (one stray bracket: no host:port, B-102): refused, opening no session: accepted", rules.FieldType.ID, addr))
				t.ok(d.Close(t.ctx), rules.Close, "close after an accepted hello")
				d = nil
			}
		}
	}
	if d != nil {
		_, err := d.Hello(t.ctx, t.helloArgs())
		t.ok(err, rules.HelloOp, "hello against Valkey 8.1, after refused hellos in the same process")
		t.ok(d.Close(t.ctx), rules.Close, "close after an accepted hello")
	}
	return bad
}

// leasePX is the PX of the first minter lease the port took after from (SET {emq}:minter:<w> …
// NX … PX <ms>), or -1 when none shows.
func (t *T) leasePX(from int) int64 {
	for _, l := range t.portLines(from) {
		if l.Cmd() != "SET" || !strings.HasPrefix(argAt(l, 1), "{emq}:minter:") || !slices.ContainsFunc(l.Args, func(a string) bool { return strings.EqualFold(a, "NX") }) {
			continue
		}
		if n, ok := linePX(l); ok {
			return n
		}
	}
	return -1
}

// rawInt is a JSON number as an int64 (-1 when it is none).
func rawInt(raw json.RawMessage) int64 {
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return -1
	}
	return int64(f)
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
