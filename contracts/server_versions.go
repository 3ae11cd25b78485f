package contracts

import (
	"slices"

	"github.com/echomq/kit/contracts/internal/wire"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// presentedServer is a server identity the kit presents to a port, and whether canon §5.1
// admits it.
type presentedServer struct {
	server, version string
	admitted        bool
	dangling        bool // HELLO's reply ends in a field name with no value (wire.StartDanglingHelloProxy)
}

// presentedServers tell a version compared as the canon says (component by component, as
// integers) from the plausible wrong ones: as strings ("10.0.0" < "8.1.0"), by the major alone
// (8.0.99 passes), by "major is 8" (9.0.0 fails), by a float of major.minor (8.10 = 8.1), or by
// the version while the server is not Valkey. The last is a Valkey 8.1.1 whose HELLO reply is
// no field/value map (one field name too many, with no value): "anything else" (A12).
var presentedServers = []presentedServer{
	{"valkey", "8.0.99", false, false}, {"valkey", "8.0.10", false, false}, {"valkey", "7.10.0", false, false}, {"redis", "8.2.0", false, false},
	{"valkey", "8.1.0", true, false}, {"valkey", "8.1.10", true, false}, {"valkey", "8.10.0", true, false}, {"valkey", "9.0.0", true, false}, {"valkey", "10.0.0", true, false},
	{"valkey", "8.1.1", false, true},
}

// serverVersionsCompared presents each identity through a proxy in front of the run's own
// Valkey (the server behind it is the real one): a refused one answers EMQSERVER with nothing
// but HELLO sent, an admitted one completes the hello and serves an enqueue. A refused hello
// opens no session (B-19), so the next identity is presented to the same process; an admitted
// one leaves its session open, and the next identity gets a fresh process.
func serverVersionsCompared(t *T) {
	t.cover(rules.ServerVersion)
	d := t.D // the clause's process, no hello said yet
	type presented struct {
		p    *wire.VersionProxy
		what string
	}
	var refused []presented
	for _, ps := range presentedServers {
		start, what := wire.StartVersionProxy, "a "+ps.server+" "+ps.version+" (a Valkey 8.1 behind a proxy that says so)"
		if ps.dangling {
			start, what = wire.StartDanglingHelloProxy, "a "+ps.server+" "+ps.version+" whose HELLO reply ends in a field name with no value, an array of odd length (a Valkey 8.1 behind a proxy that says so)"
		}
		p, err := start(t.cfg.Valkey, ps.server, ps.version)
		if err != nil {
			t.harness("%v", err)
		}
		t.stops = append(t.stops, p.Close)
		if d == nil {
			d = t.start()
		}
		_, err = d.Hello(t.ctx, protocol.HelloArgs{Valkey: p.Addr()})
		if !ps.admitted {
			t.refused(err, emqerr.Server, rules.ServerVersion, "hello against "+what)
			refused = append(refused, presented{p, what})
			continue
		}
		t.ok(err, rules.ServerVersion, "hello against "+what)
		_, err = d.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "versions", PayloadB64: b64(ps.version)})
		t.ok(err, rules.ServerVersion, "enqueue on a session opened against "+what)
		d = nil
	}
	// Over the whole clause, so that a later hello of the same process is held to it too.
	for _, l := range t.portLines(0) {
		for _, r := range refused {
			if slices.Contains(r.p.Clients(), l.Client) && l.Cmd() != "HELLO" {
				t.fail(rules.ServerVersion, "nothing but HELLO reaches "+r.what, "the port sent "+l.String())
			}
		}
	}
}
