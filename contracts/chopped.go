package contracts

import (
	"fmt"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/internal/chop"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/protocol"
)

// Replies cut anywhere (contracts/PROTOCOL.md B-283): on loopback Valkey writes a small reply in
// one segment, so a port's reader never meets a reply split inside a bulk string or its CRLF in
// any other clause. Here the port dials a relay that hands the server's bytes on one to three at
// a time, and works through the handshake and jobs whose payloads cross every cut position.

// choppedPayload holds RESP's own markers, so a reader that parses inside a bulk trips on them.
const choppedPayload = "\r\n$*:-+\x00\r\n$-1\r\n*2\r\n:7\r\n"

// repliesCutAtEveryByte is C01's, on a standalone server only: in cluster mode the port dials
// every primary from the slot map, past a relay in front of one node.
func repliesCutAtEveryByte(t *T) {
	t.throughRelay(100*time.Microsecond, rules.Chopped, "hello through the relay succeeds (the handshake's replies cut too)", func(r *chop.Relay) {
		t.check(r.Dials() > 0, rules.Chopped, "the port dials the address hello gives it", "no connection reached the relay at %s", r.Addr())
		for n := range len(choppedPayload) + 1 {
			payload := choppedPayload[:n]
			what := fmt.Sprintf("with a %d-byte payload, every reply cut in pieces of 1–3 bytes", n)
			e, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64(payload)})
			t.ok(err, rules.Chopped, "enqueue "+what)
			c, err := t.D.Claim(t.ctx, protocol.ClaimArgs{Queue: "orders", LeaseMS: workLease})
			t.ok(err, rules.Chopped, "claim "+what)
			t.check(c != nil && c.ID == e.ID && c.PayloadB64 == b64(payload), rules.Chopped,
				fmt.Sprintf("claim %s answers %s and its payload %q", what, e.ID, payload), "%s, payload %q", claimText(c), payloadOf(c))
			t.ok(t.D.Complete(t.ctx, protocol.FenceArgs{Queue: "orders", ID: e.ID, Token: c.Token}), rules.Chopped, "complete "+what)
		}
		// A bulk longer than a reader's buffer, its CRLF split CR first (the relay cuts after a CR
		// that ends a long run): a reader that meets the CR at the end of one read and takes the
		// LF for read already loses a byte of the stream.
		big := strings.Repeat("long bulk ", 32<<10)
		e, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64(big)})
		t.ok(err, rules.Chopped, "enqueue of a 320 KiB payload")
		c, err := t.D.Claim(t.ctx, protocol.ClaimArgs{Queue: "orders", LeaseMS: workLease})
		t.ok(err, rules.Chopped, "claim of a 320 KiB payload, its bulk's CRLF cut between CR and LF")
		t.check(c != nil && c.ID == e.ID && c.PayloadB64 == b64(big), rules.Chopped,
			fmt.Sprintf("claim of a 320 KiB payload, its bulk's CRLF cut between CR and LF, answers %s and its payload", e.ID), "%s, %d payload bytes", claimText(c), len(payloadOf(c)))
		t.ok(t.D.Complete(t.ctx, protocol.FenceArgs{Queue: "orders", ID: e.ID, Token: c.Token}), rules.Chopped, "complete of the 320 KiB job")
		m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 3})
		t.ok(err, rules.Chopped, "mint n=3 through the relay")
		t.check(len(m.IDs) == 1 && len(m.IDs[0]) == 3, rules.Chopped, "mint n=3 answers one list of 3 ids", "%v", m.IDs)
	})
}

// helloOverIPv6 is C01's, on a standalone server only (a cluster port dials the primaries the
// slot map names, past a relay in front of its seed). B-291: every other clause says hello with
// 127.0.0.1:<port>, so a port that kept the brackets of an IPv6 host, or split host and port at
// the first colon, certified. Here hello names a relay on the IPv6 loopback, [::1]:<port>.
func helloOverIPv6(t *T) {
	r, err := chop.StartOn("::1", t.cfg.Valkey, 0)
	if err != nil {
		t.skip(verdict.StatusNotRun, fmt.Sprintf("this clause needs the IPv6 loopback, which this machine does not offer: %v", err))
	}
	t.sessionVia(r, rules.ValkeyIPv6, fmt.Sprintf("hello with valkey %s (the IPv6 loopback, in brackets) succeeds", r.Addr()), func(r *chop.Relay) {
		id := t.enqueue("orders", "over IPv6")
		t.check(r.Dials() > 0, rules.ValkeyIPv6, "the port dials the IPv6 address hello gives it", "no connection reached the relay at %s", r.Addr())
		c, err := t.D.Claim(t.ctx, protocol.ClaimArgs{Queue: "orders", LeaseMS: workLease})
		t.ok(err, rules.ValkeyIPv6, "claim over IPv6")
		t.check(c != nil && c.ID == id, rules.ValkeyIPv6, "claim answers the job enqueued over IPv6", "%s", claimText(c))
	})
}

// throughRelay runs body in a session opened through a relay in front of the server (failures
// of its hello under rule).
func (t *T) throughRelay(pause time.Duration, rule rules.Rule, expected string, body func(r *chop.Relay)) {
	t.throughRelayWith(pause, protocol.HelloArgs{}, rule, expected, body)
}

// throughRelayWith is throughRelay with hello's other fields a.
func (t *T) throughRelayWith(pause time.Duration, a protocol.HelloArgs, rule rules.Rule, expected string, body func(r *chop.Relay)) {
	r, err := chop.Start(t.cfg.Valkey, pause)
	if err != nil {
		t.harness("%v", err)
	}
	t.sessionViaWith(r, a, rule, expected, body)
}

// sessionVia runs body in a session opened through r, then closes the session before the relay
// (which it closes too): a port that still had a connection through it would see the relay's
// close as a loss.
func (t *T) sessionVia(r *chop.Relay, rule rules.Rule, expected string, body func(r *chop.Relay)) {
	t.sessionViaWith(r, protocol.HelloArgs{}, rule, expected, body)
}

// sessionViaWith is sessionVia with hello's other fields a.
func (t *T) sessionViaWith(r *chop.Relay, a protocol.HelloArgs, rule rules.Rule, expected string, body func(r *chop.Relay)) {
	defer r.Close()
	a.Valkey = r.Addr()
	t.helloUnder(a, rule, expected)
	body(r)
	d := t.D
	t.D = nil // closed here, not again at the end of the clause
	t.ok(d.Close(t.ctx), rules.Close, "close")
}

func payloadOf(c *protocol.ClaimResult) string {
	if c == nil {
		return ""
	}
	return unb64(c.PayloadB64)
}
