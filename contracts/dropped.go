package contracts

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/internal/chop"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

// Connections the server drops (contracts/PROTOCOL.md B-282): every other clause loses a port's
// connection only by the port's own reconnect op. Here the server closes them under the port,
// as a restart or a failover does, twice: once to be redialled with the handshake, once after
// the deployment changed, so that the redial's fence fails and the session must be refused with
// the fence's typed error (§1.2-2, §5.2-2), never carry on or answer INTERNAL for ever.

// connectionsDroppedByTheServer is C01's clause of the port's connections killed by the server.
func connectionsDroppedByTheServer(t *T) {
	t.enqueue("orders", "before")
	before, _ := byClient(t.portLines(0))
	m := t.mark()
	t.killPortConnections()
	err := t.afterDrop(nil)
	t.ok(err, rules.Dropped, "an enqueue after the server dropped every connection of the port (retried while it answers INTERNAL, up to 30 s)")
	fresh := t.freshConnectionsFenced(m, before, rules.Dropped, "drop")
	t.check(fresh > 0, rules.Dropped, "a new connection after the drop, with the handshake first", "no new connection showed on the wire")
	// The deployment changes while the port is cut off: its redial's fence must refuse.
	deployed, _ := t.hget(keys.Bundle(), "digest")
	sum := sha1.Sum([]byte("a bundle deployed during the drop"))
	t.do("HSET", keys.Bundle(), "digest", hex.EncodeToString(sum[:]))
	t.killPortConnections()
	err = t.afterDrop(emqerr.Version)
	t.refused(err, emqerr.Version, rules.Dropped, "an enqueue after the server dropped the port's connections and another bundle was deployed")
	// An enqueue mints first; a claim mints nothing, so the refusal must be the session's, not
	// only its minter's.
	_, err = t.D.Claim(t.ctx, protocol.ClaimArgs{Queue: "orders", LeaseMS: workLease})
	t.refused(err, emqerr.Version, rules.Dropped, "a claim, which mints nothing, after the session answered the redial's refusal: the same typed refusal")
	// A morgue runs no script, so only the session's refusal can answer it so.
	_, err = t.D.Morgue(t.ctx, protocol.MorgueArgs{Queue: "orders"})
	t.refused(err, emqerr.Version, rules.Dropped, "a morgue, which runs no script, after the session answered the redial's refusal: the same typed refusal")
	left := t.openBeside(nil)
	t.check(len(left) == 0, rules.RefusedClosed, "once the redial's fence was refused, the port keeps no connection to the server: the refused one is closed at once", "still open: %v", left)
	// The deployment is put back, and the kit sends reconnect: its handshake runs again and
	// passes (B-76), so the session serves again; a refusal is the handshake's answer, not the
	// session's for good.
	t.do("HSET", keys.Bundle(), "digest", deployed)
	t.ok(t.D.Reconnect(t.ctx), rules.Reconnect, "reconnect once the deployment the port fences with is back, after its redial was refused")
	t.enqueue("orders", "after the reconnect")
}

// reconnectDuringARedial is C01's, on a standalone server only: the server drops the port's
// connections and, in the same write, holds every write for a while (CLIENT PAUSE WRITE), so a
// port that redials by itself is caught inside its redial's handshake (the fence is a write);
// then the kit sends reconnect. B-76: reconnect drops every connection and opens new ones, so
// none of the connections the port had when it was sent outlives its reply (the kit waits up to
// 5 s for the server to see them closed), the redial's included. A port that redials only when
// asked has nothing open then, which passes.
func reconnectDuringARedial(t *T) {
	t.enqueue("orders", "before")
	old := map[string]bool{}
	cmds := [][]any{}
	for _, c := range t.portClients() {
		old[c["id"]] = true
		cmds = append(cmds, []any{"CLIENT", "KILL", "ID", c["id"]})
	}
	cmds = append(cmds, []any{"CLIENT", "PAUSE", 1000, "WRITE"})
	if _, err := t.admin.pipeline(t.ctx, cmds...); err != nil {
		t.harness("CLIENT KILL and PAUSE: %v", err)
	}
	// The redial shows in CLIENT LIST once it connects (HELLO is not a write); a port that
	// redials only when asked never shows one, and the pause ends the wait.
	var open []map[string]string
	for until := time.Now().Add(time.Second); len(open) == 0 && time.Now().Before(until); time.Sleep(10 * time.Millisecond) {
		open = slices.DeleteFunc(t.portClients(), func(c map[string]string) bool { return old[c["id"]] })
	}
	t.ok(t.D.Reconnect(t.ctx), rules.Reconnect, "reconnect while a redial is in its handshake")
	t.cover(rules.Reconnect)
	left := func() []string {
		var ids []string
		for _, c := range t.portClients() {
			for _, o := range open {
				if c["id"] == o["id"] {
					ids = append(ids, fmt.Sprintf("id=%s cmd=%s", c["id"], c["cmd"]))
				}
			}
		}
		return ids
	}
	still := left()
	for until := time.Now().Add(5 * time.Second); len(still) > 0 && time.Now().Before(until); still = left() {
		time.Sleep(20 * time.Millisecond)
	}
	t.check(len(still) == 0, rules.Reconnect,
		fmt.Sprintf("reconnect drops every connection: none of the %d the port had open when it was sent (its redial's) is left 5 s after its reply", len(open)),
		"still open: %s", strings.Join(still, ", "))
	t.enqueue("orders", "after")
}

// droppedAfterAReconnectMidRedial is C01's, on a standalone server only (the relay stands in
// front of one server): a redial that a reconnect overtook must not deafen the port to the next
// loss. The redial stops in its fence (withARedialHeldInItsFence), and the kit sends reconnect,
// whose new connection stops there too. The server closes the redial's connection — its attempt
// fails, the connection it was to replace already replaced by the reconnect, whose own is not
// open yet: a port that exits there fails (B-21) — and, once the port has closed its side of it
// (the relay tells), lifts the pause, so the reconnect is answered; then it drops the
// reconnect's connection. That is a loss like any other: within 30 s the session serves again
// (B-282). A port whose overtaken redial backs off once more before it sees it is over, and
// takes no notice of a loss meanwhile, never redials the reconnect's connection and answers
// INTERNAL for ever; one whose overtaken redial dials once more after its backoff opens a
// connection beside the reconnect's, which the kit looks for over 2 s of requests first (B-300).
// Every step waits on what the server shows (CLIENT LIST), the relay or the reconnect's reply, so
// a slow machine cannot fail a correct port; a port that redials only when asked shows no redial,
// and the clause then checks only the drop after its reconnect.
func droppedAfterAReconnectMidRedial(t *T) {
	t.withARedialHeldInItsFence(func(r *chop.Relay, h heldRedial) {
		replied := make(chan error, 1)
		go func() { replied <- t.D.Reconnect(t.ctx) }()
		if len(h.redial) > 0 {
			// The reconnect's connection shows once the port has taken the reconnect (it dropped
			// its connections first); then the redial's attempt is made to fail. A port that holds
			// its reconnect until the redial ends (the reference) shows none: the 2 s bound the
			// wait for it costs only what the clause can see on a very slow machine, never a
			// verdict.
			var answered bool
			var err error
			for until := time.Now().Add(2 * time.Second); !answered && len(h.fresh()) == 0 && time.Now().Before(until); {
				select {
				case err = <-replied:
					answered = true
				case <-time.After(10 * time.Millisecond):
				}
			}
			// The relay hands the server's close on as a FIN and tells when the port closed its
			// side, so the pause is lifted only once the port has taken the loss in: a port whose
			// redial then ends must be sure to meet the reconnect still in flight, whatever
			// order its event loop would have met the two in had they come together.
			redialAt := map[string]bool{}
			for _, c := range h.redial {
				redialAt[c["addr"]] = true
			}
			atRedial := func(serverSide string) bool { return redialAt[serverSide] }
			r.HalfClose(atRedial)
			for _, c := range h.redial {
				t.killClient(c)
			}
			gone := func() bool {
				for _, c := range t.portClients() {
					for _, d := range h.redial {
						if c["id"] == d["id"] {
							return false
						}
					}
				}
				return !slices.ContainsFunc(r.ClientClosed(atRedial), time.Time.IsZero)
			}
			for until := time.Now().Add(5 * time.Second); !gone() && time.Now().Before(until); {
				time.Sleep(10 * time.Millisecond)
			}
			if answered {
				replied <- err
			}
		}
		h.unpause()
		t.ok(<-replied, rules.Reconnect, "reconnect while a redial is in its handshake (the redial's connection then closed by the server)")
		// The overtaken redial is over: it dials nothing more beside the reconnect's (B-300).
		t.heldStill(t.portClientIDs(), 2*time.Second, true, "busy after a reconnect overtook a redial")
		t.killPortConnections()
		t.ok(t.afterDrop(nil), rules.Dropped, fmt.Sprintf("an enqueue after the server dropped the connection a reconnect opened while a redial was in its handshake, the redial's connection closed by the server (%d redial(s) seen): retried while it answers INTERNAL, up to 30 s", len(h.redial)))
	})
}

// droppedWhileAnOvertakenRedialIsInFlight is C01's, on a standalone server only: as
// droppedAfterAReconnectMidRedial, but the reconnect's connection is lost while the overtaken
// redial's attempt is still in flight. The redial held in its fence falls silent in the relay
// (nothing handed on either way; the relay closes nothing) instead of being closed; the kit sends
// reconnect and, once the reconnect's connection shows, lifts the pause, so the reconnect is
// answered while the redial still waits for its fence's reply. The server drops the reconnect's
// connection; once the port has met that loss (a request answered) the silent connection closes,
// as the server's side does when the route is back, so the redial's attempt fails, the
// connection it was to replace already replaced. A port that took no notice of the loss because
// its redial was busy, and does not pick it up once the redial ends, answers INTERNAL for ever;
// within 30 s the session serves again (B-282). A port that holds its reconnect until its redial
// ends (the reference) shows no connection of the reconnect's and no answer while the redial is
// silent: after 2 s the silent connection closes first, then the reconnect is answered and its
// connection dropped. Every wait ends on CLIENT LIST, a reply or the relay; its bound only limits
// what the clause can see on a slow machine, never a verdict.
func droppedWhileAnOvertakenRedialIsInFlight(t *T) {
	t.withARedialHeldInItsFence(func(r *chop.Relay, h heldRedial) {
		silenced := map[string]bool{}
		for _, c := range h.redial {
			silenced[c["addr"]] = true
		}
		silent := r.Silence(func(serverSide string) bool { return silenced[serverSide] }) > 0
		defer r.EndSilence()
		endSilence := func() {
			if silent {
				r.EndSilence()
				silent = false
			}
		}
		replied := make(chan error, 1)
		go func() { replied <- t.D.Reconnect(t.ctx) }()
		var answer error
		answered := false
		// await waits up to d for the reconnect's answer, or until done holds.
		await := func(d time.Duration, done func() bool) {
			for until := time.Now().Add(d); !answered && !done() && time.Now().Before(until); {
				select {
				case answer = <-replied:
					answered = true
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
		// The reconnect's connection shows once the port has taken the reconnect, held in its
		// fence; lifting the pause lets its fence run and the reconnect be answered.
		await(2*time.Second, func() bool { return len(h.fresh()) > 0 })
		if answered || len(h.fresh()) > 0 {
			h.unpause()
			await(2*time.Second, func() bool { return false })
		}
		whileSilent := answered && silent
		if !answered {
			// A port that holds its reconnect until its redial ends: the redial's attempt fails
			// first, then the reconnect's fence runs.
			endSilence()
			h.unpause()
			answer = <-replied
		}
		t.ok(answer, rules.Reconnect, "reconnect while a redial is in its handshake, the redial's connection fallen silent")
		for _, c := range h.fresh() {
			t.killClient(c)
		}
		if silent {
			// The port meets the loss before the redial's attempt fails: a request answered shows
			// it has (INTERNAL, or served on a connection it opened since).
			probe := make(chan error, 1)
			go func() {
				_, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("after the drop")})
				probe <- err
			}()
			var err error
			met := false
			select {
			case err = <-probe:
				met = true
			case <-time.After(2 * time.Second):
			}
			endSilence()
			if !met {
				err = <-probe
			}
			var canon *emqerr.Error
			t.check(!errors.As(err, &canon), rules.Dropped, "an enqueue sent once the reconnect's connection was dropped, the overtaken redial still in flight, answers its id or INTERNAL (B-282)", "%v", err)
		}
		t.ok(t.afterDrop(nil), rules.Dropped, fmt.Sprintf("an enqueue after the server dropped the connection a reconnect opened while a redial was in its handshake, the redial's connection silent until then (%d redial(s) seen, the reconnect answered while the redial was in flight: %t): retried while it answers INTERNAL, up to 30 s", len(h.redial), whileSilent))
	})
}

// heldRedial is what withARedialHeldInItsFence hands its body.
type heldRedial struct {
	redial  []map[string]string        // the redial's connections (CLIENT LIST): none from a port that redials only when asked
	fresh   func() []map[string]string // the port's connections opened since the redial's
	unpause func()                     // lifts the pause (it lifts by itself 8 s after it began, and after the body)
}

// withARedialHeldInItsFence runs body through a relay in front of the server, with a redial of
// the port's held in its fence. The server drops the port's connections and closes every new one
// at once until a port that redials by itself has backed off to its longest pauses (eight
// attempts closed, or 5 s); then it holds every write (CLIENT PAUSE WRITE) and lets connections
// in, so the next redial stops in its fence (a write). The next redial comes within the longest
// pause (1 s for the reference) and shows in CLIENT LIST once it connects (HELLO is not a
// write); a port that redials only when asked shows none, and the wait for it ends after 3 s.
func (t *T) withARedialHeldInItsFence(body func(r *chop.Relay, h heldRedial)) {
	t.throughRelay(0, rules.Dropped, relayHello, func(r *chop.Relay) {
		t.enqueue("orders", "before")
		seen := map[string]bool{}
		for _, c := range t.portClients() {
			seen[c["id"]] = true
		}
		fresh := func() []map[string]string {
			return slices.DeleteFunc(t.portClients(), func(c map[string]string) bool { return seen[c["id"]] })
		}
		r.Refuse(true)
		from := r.Refused()
		t.killPortConnections()
		for until := time.Now().Add(5 * time.Second); r.Refused()-from < 8 && time.Now().Before(until); {
			time.Sleep(10 * time.Millisecond)
		}
		unpause := func() {
			if _, err := t.admin.do(t.ctx, "CLIENT", "UNPAUSE"); err != nil {
				t.harness("CLIENT UNPAUSE: %v", err)
			}
		}
		if _, err := t.admin.do(t.ctx, "CLIENT", "PAUSE", 8000, "WRITE"); err != nil {
			t.harness("CLIENT PAUSE: %v", err)
		}
		defer unpause()
		r.Refuse(false)
		var redial []map[string]string
		for until := time.Now().Add(3 * time.Second); len(redial) == 0 && time.Now().Before(until); time.Sleep(10 * time.Millisecond) {
			redial = fresh()
		}
		for _, c := range redial {
			seen[c["id"]] = true
		}
		body(r, heldRedial{redial: redial, fresh: fresh, unpause: unpause})
	})
}

// redialsMeetALoadingServer is C01's, on a standalone server only: the server reloads its
// dataset slowly (DEBUG RELOAD with a per-key delay), answering LOADING to every command but
// HELLO and the like, and the port's connections are dropped meanwhile, so its redials meet
// LOADING at the fence, as after a restart from an RDB. LOADING is neither the handshake's
// refusal nor a loss of the server's making that ends: once the load is over, within 30 s the
// session serves again (B-282).
func redialsMeetALoadingServer(t *T) {
	t.enqueue("orders", "before")
	if _, err := t.admin.do(t.ctx, "DEBUG", "POPULATE", 4000, strings.TrimSuffix(ballast, ":")); err != nil {
		// NOT RUN, never a pass, as for a server the run was not given.
		t.skip(verdict.StatusNotRun, fmt.Sprintf("this clause reloads the server's dataset under the port with DEBUG RELOAD, which the server refuses (%v): start the Valkey under test with --enable-debug-command local, as emq-engines does", err))
	}
	t.do("CONFIG", "SET", "loading-process-events-interval-bytes", "1024")
	t.do("CONFIG", "SET", "key-load-delay", "300") // µs per key: about a second and a half
	defer t.do("CONFIG", "SET", "key-load-delay", "0")
	// DEBUG RELOAD holds its connection until the load is over: a harness connection of its own.
	rl := t.ownAdmin()
	defer rl.Close()
	reloaded := make(chan error, 1)
	go func() {
		_, err := rl.do(t.ctx, "DEBUG", "RELOAD")
		reloaded <- err
	}()
	t.waitLoading(reloaded)
	before := map[string]bool{}
	for _, c := range t.portClients() {
		before[c["addr"]] = true
	}
	t.killPortConnections()
	met := 0 // requests answered while the server loads: INTERNAL is allowed then
	for loading := true; loading; {
		select {
		case err := <-reloaded:
			if err != nil {
				t.harness("DEBUG RELOAD: %v", err)
			}
			loading = false
		default:
			if _, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("while loading")}); err != nil {
				met++
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// A connection opened while the server loaded said HELLO unseen: MONITOR is fed nothing then.
	for _, c := range t.portClients() {
		if !before[c["addr"]] {
			t.law.HelloUnseen(c["node"], c["addr"])
		}
	}
	t.dropBallast()
	t.ok(t.afterDrop(nil), rules.Dropped, fmt.Sprintf("an enqueue after the server, reloading its dataset, answered LOADING to the port's redials (%d requests failed meanwhile): retried while it answers INTERNAL, up to 30 s", met))
}

// redialsMeetABusyServer is C01's, on a standalone server only: a script of the harness runs on
// the server past busy-reply-threshold (lowered to 100 ms here), so that the server answers BUSY
// to every command but HELLO and the like, and the port's connections are dropped meanwhile (by
// the relay in front of the server: a busy server runs no CLIENT KILL), so its redials meet BUSY
// at the fence, as while any long script runs. BUSY, like LOADING, is neither the handshake's
// refusal nor a loss of the server's making that ends: once the script is killed, within 30 s
// the session serves again (B-282).
func redialsMeetABusyServer(t *T) {
	t.throughRelay(0, rules.Dropped, relayHello, func(r *chop.Relay) {
		t.enqueue("orders", "before")
		was, _, _ := t.do("CONFIG", "GET", "busy-reply-threshold")
		if len(was) != 2 {
			t.harness("CONFIG GET busy-reply-threshold answered %v", was)
		}
		t.do("CONFIG", "SET", "busy-reply-threshold", "100")
		defer t.do("CONFIG", "SET", "busy-reply-threshold", was[1])
		// The script holds its connection until it is killed: a harness connection of its own.
		bz := t.ownAdmin()
		defer bz.Close()
		ran := make(chan error, 1)
		go func() {
			// Read-only, so SCRIPT KILL ends it; a minute at most should the harness never kill it.
			_, err := bz.do(t.ctx, "EVAL", "local e = tonumber(redis.call('TIME')[1]) + 60 "+
				"while tonumber(redis.call('TIME')[1]) < e do end return 0", 0)
			ran <- err
		}()
		killed := false
		kill := func() {
			if _, err := t.admin.do(t.ctx, "SCRIPT", "KILL"); err != nil && !strings.Contains(err.Error(), "NOTBUSY") {
				t.harness("SCRIPT KILL: %v", err)
			}
			killed = true
			<-ran
		}
		defer func() {
			if !killed {
				kill()
			}
		}()
		// The server answers nothing until the threshold has passed, then BUSY to a PING.
		for {
			_, err := t.admin.do(t.ctx, "PING")
			if err != nil && strings.Contains(err.Error(), "BUSY") {
				break
			}
			select {
			case err := <-ran:
				ran <- err // for the deferred kill
				t.harness("the busy script ended before the server answered BUSY: %v", err)
			default:
			}
			time.Sleep(5 * time.Millisecond)
		}
		dials := r.Dials()
		r.Drop()
		// A port that redials by itself dials again only after its first redial was answered,
		// BUSY at the fence; one that redials when it is sent a request dials nothing meanwhile.
		// Up to 3 s for that second dial: the clause's check does not rest on it.
		for until := time.Now().Add(3 * time.Second); r.Dials() < dials+2 && time.Now().Before(until); {
			time.Sleep(10 * time.Millisecond)
		}
		redials := r.Dials() - dials
		kill()
		t.ok(t.afterDrop(nil), rules.Dropped, fmt.Sprintf("an enqueue after the server, busy running a script, answered BUSY to the port's redials (%d of them dialled) until the script was killed: retried while it answers INTERNAL, up to 30 s", redials))
	})
}

// dropBallast removes the keys DEBUG POPULATE made for the reload (not EchoMQ keys).
func (t *T) dropBallast() {
	ks, err := t.admin.scan(t.ctx, ballast+"*")
	if err != nil {
		t.harness("SCAN %s*: %v", ballast, err)
	}
	for len(ks) > 0 {
		n := min(len(ks), 500)
		args := []any{"UNLINK"}
		for _, k := range ks[:n] {
			args = append(args, k)
		}
		if _, err := t.admin.do(t.ctx, args...); err != nil {
			t.harness("UNLINK: %v", err)
		}
		ks = ks[n:]
	}
}

const ballast = "kit-reload-ballast:"

// waitLoading waits until the server says it is loading (INFO persistence), or the reload ended
// first (a machine so slow the kit never saw it load: the redials then meet no LOADING, and the
// clause checks only that the session serves).
func (t *T) waitLoading(reloaded chan error) {
	for {
		v, err := t.admin.do(t.ctx, "INFO", "persistence")
		if err != nil {
			t.harness("INFO persistence: %v", err)
		}
		if strings.Contains(v.Text(), "loading:1") {
			return
		}
		select {
		case err := <-reloaded:
			reloaded <- err // the caller reads it again
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// connectionsCutDuringTheirHandshake is C01's, on a standalone server only: the server drops the
// port's connections and its next two connections die during their own handshake (HELLO answered,
// then closed, as a server restarting twice does). Those are losses, not the handshake's refusal:
// within 30 s the session serves again (B-282).
func connectionsCutDuringTheirHandshake(t *T) {
	t.throughRelay(0, rules.Dropped, relayHello, func(r *chop.Relay) {
		t.enqueue("orders", "before")
		r.CutAfterFirstReply(2)
		t.killPortConnections()
		err := t.afterDrop(nil)
		t.ok(err, rules.Dropped, fmt.Sprintf("an enqueue after the server dropped the port's connections and %d of its redials died during their handshake, HELLO answered: losses, not a refusal (retried while it answers INTERNAL, up to 30 s)", r.Cut()))
		t.check(r.Cut() > 0, rules.Dropped, "the port's redial met a connection cut during its handshake", "no redial reached the relay")
	})
}

// redialsRefusedWhileTheServerIsDown is C01's, on a standalone server only: the server drops
// the port's connections and is down for a while — a redial is refused at connect
// (ECONNREFUSED), as a stopped server's is, not accepted and then closed. Those refusals are
// losses too: once the server listens again, within 30 s the session serves again (B-282).
func redialsRefusedWhileTheServerIsDown(t *T) {
	t.throughRelay(0, rules.Dropped, relayHello, func(r *chop.Relay) {
		t.enqueue("orders", "before")
		if err := r.Down(true); err != nil {
			t.harness("%v", err)
		}
		t.killPortConnections()
		met := t.whileDown(r)
		err := t.afterDrop(nil)
		t.ok(err, rules.Dropped, fmt.Sprintf("an enqueue after the server dropped the port's connections and refused its redials at connect for a while (%d requests failed meanwhile): retried while it answers INTERNAL, up to 30 s", met))
	})
}

// redialsPacedWhileRefused is C01's, on a standalone server only: the server drops the port's
// connections and, for longOutage, closes every new one at once (accepted, so the relay counts
// each attempt, then closed). A port that redials by itself pauses between its attempts
// (B-289); one that redials only when it is sent a request makes none meanwhile, which the
// bound admits. The bound scales with the outage as measured, so a slow machine, which only
// spaces the attempts further, cannot fail a correct port.
func redialsPacedWhileRefused(t *T) {
	t.throughRelay(0, rules.RedialPaced, relayHello, func(r *chop.Relay) {
		t.enqueue("orders", "before")
		lost := int64(len(t.portClients()))
		r.Refuse(true)
		from, start := r.Refused(), time.Now()
		t.killPortConnections()
		t.pause(longOutage) // the outage's length: the bound below is computed from what it took
		n := r.Refused() - from
		took := time.Since(start)
		r.Refuse(false)
		bound := lost * (5 + int64(10*took.Seconds()))
		t.check(n <= bound, rules.RedialPaced,
			fmt.Sprintf("while every new connection is closed at once, the port's redials pause between attempts: at most 5 + 10·t for each of its %d lost connections", lost),
			"%d connection attempts in %s (at most %d)", n, took.Round(time.Millisecond), bound)
		t.ok(t.afterDrop(nil), rules.Dropped, fmt.Sprintf("an enqueue after an outage of %s: the port still redials (retried while it answers INTERNAL, up to 30 s)", longOutage))
	})
}

// redialsOvertakenInTheirBackoff is C01's, on a standalone server only: a reconnect that comes
// while a redial sleeps between two refused attempts ends that redial, which dials nothing more
// (B-300). The server drops the port's connections and closes every new one at once until the
// port's attempts come at least backoffSeen apart; just after the next refused attempt (the port
// starts a sleep at least about as long) it accepts again and the kit sends reconnect. Over the
// next 1.5 s of requests the relay must hand on no connection: a redial that wakes from its sleep
// and dials without seeing that the reconnect replaced what it was redialling opens one beside
// the session's connections, which a port may close again at once, so CLIENT LIST alone would
// not show it. On a slow machine the redial may wake first and replace the lost connection
// itself, before the reconnect replaces it again, and a port that redials only when asked makes
// no attempt: both are correct, and the clause then sees no overtaken sleep, never a verdict.
func redialsOvertakenInTheirBackoff(t *T) {
	t.throughRelay(0, rules.RedialOnce, relayHello, func(r *chop.Relay) {
		t.enqueue("orders", "before")
		r.Refuse(true)
		t.killPortConnections()
		asleep := afterAPacedRefusal(r, backoffSeen, refusedFor)
		r.Refuse(false)
		t.ok(t.D.Reconnect(t.ctx), rules.Reconnect, fmt.Sprintf("reconnect while a redial sleeps between refused attempts (a pause of %s seen: %v)", backoffSeen, asleep))
		dials := r.Dials()
		t.heldStill(t.portClientIDs(), 1500*time.Millisecond, true, "busy after a reconnect overtook a redial in its backoff")
		n := r.Dials() - dials
		t.check(n == 0, rules.RedialOnce,
			"after a reconnect overtook a redial in its backoff, the redial dials nothing more (while the server answers, no connection beside the session's)",
			"%d connection(s) dialled in the 1.5 s after reconnect's reply", n)
	})
}

// backoffSeen is the pause between two refused attempts after which redialsOvertakenInTheirBackoff
// sends its reconnect: a backoff that doubles (the reference's, from 10 ms to 1 s) has reached
// it within about a second, and the sleep after it is as long again, ample for a reconnect.
const backoffSeen = 300 * time.Millisecond

// afterAPacedRefusal waits while r refuses until an attempt comes at least gap after the one
// before it, and reports whether one did within limit (a port that redials only when asked, or
// that stopped, makes none).
func afterAPacedRefusal(r *chop.Relay, gap, limit time.Duration) bool {
	last, at := r.Refused(), time.Now()
	for end := at.Add(limit); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		n := r.Refused()
		if n == last {
			continue
		}
		if time.Since(at) >= gap {
			// The port may take the refusal in after the relay counted it: a reconnect that
			// came first would end the redial before its sleep. A quarter of the pause lets it
			// begin the sleep, no longer than the pause it slept before.
			time.Sleep(gap / 4)
			return true
		}
		last, at = n, time.Now()
	}
	return false
}

// refusedFor is how long redialsOvertakenInTheirBackoff refuses at most: long enough for a
// backoff doubling from 10 ms to reach its 1 s cap.
const refusedFor = 5 * time.Second

// longOutage is how long redialsPacedWhileRefused refuses: past B-282's 30 s, so that a port
// that reads "within 30 s the session serves again" as a budget of redials, and gives up when
// it is spent, has given up (as has one that gives up after a handful of attempts), when B-282
// wants the session to serve again after an outage of any length. The longest clause of a
// certification, and the only one past 30 s.
const longOutage = 32 * time.Second

// linesPacedOver is the least outage parkThroughOutage judges the park lines' redials over: the
// reference's backoff (20 ms, doubling) makes 4 attempts per line in it, where B-289 allows 7;
// redials without a pause make dozens in its first tens of ms.
const linesPacedOver = 250 * time.Millisecond

// whileDown keeps the server down, sending enqueues meanwhile from a goroutine of their own (a
// port may hold a request until it has reconnected), and brings it back up a second after the
// first of them failed (the port knows the connection is lost, and has redialled into the
// refusal), or 3 s after the drop. It returns how many failed once the last has answered. The
// outage's length only ends the situation: no check rests on it.
func (t *T) whileDown(r *chop.Relay) int {
	failed, stop, done := make(chan struct{}, 1), make(chan struct{}), make(chan int)
	go func() {
		met := 0
		for {
			select {
			case <-stop:
				done <- met
				return
			default:
			}
			if _, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("while the server is down")}); err != nil {
				met++
				select {
				case failed <- struct{}{}:
				default:
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	select {
	case <-failed:
		time.Sleep(time.Second)
	case <-time.After(3 * time.Second):
	}
	err := r.Down(false)
	close(stop)
	met := <-done
	if err != nil {
		t.harness("%v", err)
	}
	return met
}

// killPortConnections closes every connection of the port on the server that lists it (CLIENT
// KILL ID: ids are a node's own).
func (t *T) killPortConnections() {
	for _, c := range t.portClients() {
		t.killClient(c)
	}
}

// afterDrop sends enqueues until one is answered other than INTERNAL (a request that met the
// loss, or one sent while the port redials with its backoff) or want, and returns that answer;
// after 30 s it returns the last one. A session whose conversation failed is not retried.
func (t *T) afterDrop(want *emqerr.Error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := t.D.Enqueue(t.ctx, protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("after the drop")})
		var canon *emqerr.Error
		f, ok := t.D.(drivers.Faulter)
		if err == nil || errors.As(err, &canon) || (want != nil && errors.Is(err, want)) || (ok && f.Fault() != nil) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// parkLinesRedialledUntilTheyConnect is C14's, on a standalone server only (the relay stands in
// front of one server): the server drops the parked consumers' connections and, for a while, every
// new connection is refused, while the port's other connections keep working. A consumer redials
// its park line until it can, pausing between its attempts (B-289: at most 5 + 10·t over an
// outage of t seconds for each line lost): within 30 s of the outage's end the session serves
// again (B-282), so a park whose timeout outlasts that completes the jobs enqueued after it — or
// answers INTERNAL, for the loss it met.
func parkLinesRedialledUntilTheyConnect(t *T) {
	t.throughRelay(0, rules.Dropped, relayHello, t.parkThroughOutage)
}

// parkThroughOutage parks two consumers, drops their lines and refuses every new connection
// for a while, then enqueues two jobs the park must complete (or answer INTERNAL).
func (t *T) parkThroughOutage(r *chop.Relay) {
	a := protocol.ParkArgs{Queue: "orders", Consumers: 2, Jobs: 2, LeaseMS: workLease, ParkMS: 5000, TimeoutMS: 45000}
	start := time.Now()
	done := t.park(a)
	t.waitBlocked(a.Consumers)
	r.Refuse(true)
	from, lost, outage := r.Refused(), int64(0), time.Now()
	for _, c := range t.portClients() {
		if c["cmd"] == "blpop" {
			t.killClient(c)
			lost++
		}
	}
	// paced counts the dials refused since the lines were dropped against B-289's bound for them.
	paced := func() (n, bound int64, took time.Duration) {
		took = time.Since(outage)
		return r.Refused() - from, lost * (5 + int64(10*took.Seconds())), took
	}
	// The outage lasts until each consumer's new line was refused twice and it has lasted
	// linesPacedOver (long enough for redials without a pause to outrun B-289's bound), the
	// refusals outran the bound, the park gave up, or 10 s passed.
	var res parked
	over, until := false, outage.Add(10*time.Second)
	for !over && time.Now().Before(until) {
		if n, bound, took := paced(); n > bound || n >= int64(2*a.Consumers) && took >= linesPacedOver {
			break
		}
		select {
		case res = <-done:
			over = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	n, bound, took := paced()
	r.Refuse(false)
	ids := kitIDs(a.Jobs, 1<<50)
	t.kitEnqueue("orders", ids)
	if !over {
		res = <-done
	}
	t.check(n <= bound, rules.RedialPaced,
		fmt.Sprintf("while every new connection is closed at once, the park's consumers pause between the redials of their lines: at most 5 + 10·t for each of the %d lines dropped", lost),
		"%d connection attempts in %s (at most %d)", n, took.Round(time.Millisecond), bound)
	var canon *emqerr.Error
	f, faulted := t.D.(drivers.Faulter)
	if res.err != nil && !errors.As(res.err, &canon) && !(faulted && f.Fault() != nil) {
		t.cover(rules.Dropped) // INTERNAL: the park met the loss, as B-282 allows
	} else {
		t.ok(res.err, rules.Park, "park with its lines dropped and redials refused for a while")
		took := res.at.Sub(start)
		t.check(len(res.res.Jobs) == a.Jobs, rules.Dropped,
			fmt.Sprintf("within 30 s of the outage's end the session serves again: the park, whose %d ms outlast that, redials its lines and completes the %d jobs enqueued (%d dials refused during the outage)", a.TimeoutMS, a.Jobs, r.Refused()),
			"it answered after %s with %d jobs: %+v", took.Round(time.Millisecond), len(res.res.Jobs), res.res.Jobs)
	}
	t.ok(t.afterDrop(nil), rules.Dropped, "an enqueue after the park (retried while it answers INTERNAL, up to 30 s)")
}

// parkAnswersTheRefusal is C14's: the server drops a parked session's connections while another
// bundle is deployed, so every redial's fence refuses (EMQVERSION, the fence script's reply).
// B-282: within 30 s the session serves again or answers the handshake's typed refusal, so a park
// whose timeout_ms is far past that answers within it — the refusal, or INTERNAL for the loss it
// met — rather than wait its timeout out; the session's next request answers the refusal.
func parkAnswersTheRefusal(t *T) {
	t.parkThroughRefusal(emqerr.Version, t.redeploy, everyConnection)
	t.refused(t.afterDrop(emqerr.Version), emqerr.Version, rules.Dropped, "an enqueue after the park met the refusal")
}

// parkLinesRefused is C14's: as parkAnswersTheRefusal, but only the parked consumers' lines are
// dropped; the command connection, fenced before the deployment changed, keeps working. A line's
// redial runs the handshake first and its fence refuses: the park answers that refusal (or
// INTERNAL) within 30 s rather than redial for its whole timeout. The command connection, still
// fenced, serves on.
func parkLinesRefused(t *T) {
	t.parkThroughRefusal(emqerr.Version, t.redeploy, func(c map[string]string) bool { return c["cmd"] == "blpop" })
}

// parkOneLineRefused is C14's: as parkLinesRefused, but only one of the two
// parked lines is dropped; the other stays healthy, blocked in its pop. The park met a loss its
// redial cannot mend (the fence refuses): within 30 s it answers that refusal or INTERNAL (B-282),
// rather than park on with the consumer left until its timeout_ms.
func parkOneLineRefused(t *T) {
	dropped := false
	t.parkThroughRefusal(emqerr.Version, t.redeploy, func(c map[string]string) bool {
		if c["cmd"] == "blpop" && !dropped {
			dropped = true
			return true
		}
		return false
	})
}

// redeploy records another bundle's digest, as a deployment of another bundle would.
func (t *T) redeploy() {
	sum := sha1.Sum([]byte("a bundle deployed while the port was parked"))
	t.do("HSET", keys.Bundle(), "digest", hex.EncodeToString(sum[:]))
}

// everyConnection matches every connection of the port (CLIENT LIST).
func everyConnection(map[string]string) bool { return true }

// parkAnswersTheServerCheck is C14's, on a standalone server only: as parkAnswersTheRefusal, but
// the redials reach a server of the wrong kind (the relay in front of the server moves to a
// Redis 7, as a failover onto a wrong server would), so the refusal is the port's own server
// check (EMQSERVER), raised before any script runs.
func parkAnswersTheServerCheck(t *T) {
	t.parkOntoAnotherServer(t.needServer(ServerWrongKind, t.cfg.WrongKind))
}

// parkAnswersAHelloRefusal is C14's, on a standalone server only: as parkAnswersTheServerCheck,
// but the redials reach a Valkey that rejects HELLO, whose error reply refuses every new
// connection before any check of the port's own (EMQSERVER, A12).
func parkAnswersAHelloRefusal(t *T) {
	t.parkOntoAnotherServer(t.needServer(ServerNoHello, t.cfg.NoHello))
}

// parkOntoAnotherServer parks through a relay, moves the relay onto addr and drops the port's
// connections: the park and the next request answer EMQSERVER (or the park INTERNAL).
func (t *T) parkOntoAnotherServer(addr string) {
	t.throughRelay(0, rules.Dropped, relayHello, func(r *chop.Relay) {
		t.parkThroughRefusal(emqerr.Server, func() { r.Retarget(addr) }, everyConnection)
		t.refused(t.afterDrop(emqerr.Server), emqerr.Server, rules.Dropped, "an enqueue after the park met the refusal")
	})
}

// parkThroughRefusal parks two consumers, makes every redial refused (deploy), drops the port's
// connections that drop matches, and holds the park to want. The kit waits 10 s past B-282's
// 30 for the machine's sake; a correct port answers at its first redial.
func (t *T) parkThroughRefusal(want *emqerr.Error, deploy func(), drop func(client map[string]string) bool) {
	a := protocol.ParkArgs{Queue: "orders", Consumers: 2, Jobs: 2, LeaseMS: workLease, ParkMS: 5000, TimeoutMS: 120000}
	done := t.park(a)
	t.waitBlocked(a.Consumers)
	deploy()
	start := time.Now()
	for _, c := range t.portClients() {
		if drop(c) {
			t.killClient(c)
		}
	}
	select {
	case res := <-done:
		var canon *emqerr.Error
		refusal := errors.Is(res.err, want) || (res.err != nil && !errors.As(res.err, &canon))
		t.check(refusal, rules.Dropped, fmt.Sprintf("the park, its connections dropped and every redial refused, answers %s (or INTERNAL for the loss it met)", want.Type),
			"after %s: %v, %d jobs", res.at.Sub(start).Round(time.Millisecond), res.err, len(res.res.Jobs))
	case <-time.After(40 * time.Second):
		t.fail(rules.Dropped, fmt.Sprintf("within 30 s of the drop the park answers the handshake's refusal %s (its timeout_ms is %d)", want.Type, a.TimeoutMS), "no answer after 40 s")
	}
}

// parkLinesFallSilent is C14's, on a standalone server only: the parked consumers' connections
// fall silent (no reply, no close: a stopped server, a dropped route) while the port's other
// connections keep working, and the kit enqueues two jobs. B-290 and B-282: each line is found
// lost within 10 s of its pop falling due (park_ms 1 s), and within 30 s the session serves
// again, so the park, whose timeout_ms is far past that, completes the jobs — or answers
// INTERNAL for the loss it met — well before its timeout.
func parkLinesFallSilent(t *T) {
	t.throughRelay(0, rules.Silent, relayHello, func(r *chop.Relay) {
		t.parkThroughSilence(r, func(c map[string]string) bool { return c["cmd"] == "blpop" })
	})
}

// serverFallsSilentUnderAPark is C14's, on a standalone server only: as parkLinesFallSilent, but
// every connection of the port falls silent, its command connection too.
func serverFallsSilentUnderAPark(t *T) {
	t.throughRelay(0, rules.Silent, relayHello, func(r *chop.Relay) {
		t.parkThroughSilence(r, everyConnection)
	})
}

// serverSlowThenSilentUnderAPark is C14's, on a standalone server only: the server grows slow on
// the port's connections that are not parked (every reply handed on 1.5 s late, in order: a
// loaded server, a congested route — late, still live) while one consumer, woken by an enqueue,
// claims under a 1 s lease; 3 s later those connections fall silent and the kit enqueues again.
// A slow spell is no excuse: B-290, the port still finds a silent connection lost, and closes
// it, within 10 s of a reply falling due (silentBound), so a health check that a
// slow reply outran, or that a late answer ended, must leave the connection checkable. B-282:
// the park then answers its job or INTERNAL (or EMQSTALE: the lag can outlast its 1 s lease
// before a completion lands), and once the silent connections close the session serves again. (A park that answers first — its job done before the silence, or on a connection
// that did not fall silent — leaves no reply due: a promote is sent then, as in
// server-falls-silent-under-a-request, and B-290's bound runs from it.)
func serverSlowThenSilentUnderAPark(t *T) {
	t.throughRelay(0, rules.Silent, relayHello, func(r *chop.Relay) {
		// The rule is checked on every path below, the one a fast park takes (a promote) too.
		t.cover(rules.Silent)
		const lag, spell = 1500 * time.Millisecond, 3 * time.Second
		a := protocol.ParkArgs{Queue: "orders", Consumers: 1, Jobs: 1, LeaseMS: 1000, ParkMS: 1000, TimeoutMS: 20000}
		done := t.park(a)
		t.waitBlocked(a.Consumers)
		notParked := func() map[string]bool {
			m := map[string]bool{}
			for _, c := range t.portClients() {
				if c["cmd"] != "blpop" {
					m[c["addr"]] = true
				}
			}
			return m
		}
		slow := notParked()
		r.Lag(func(addr string) bool { return slow[addr] }, lag)
		t.kitEnqueue("orders", kitIDs(1, 1<<50))
		t.pause(spell) // the slow spell: the scenario's length, no bound on the port
		silenced := notParked()
		isSilenced := func(addr string) bool { return silenced[addr] }
		n := r.Silence(isSilenced)
		defer r.EndSilence()
		from := time.Now() // B-290's bound runs from a reply falling due, and not before this
		t.kitEnqueue("orders", kitIDs(1, 1<<50+1))
		var res parked
		var due time.Time
		answered, promoted, found := false, false, false
		var answer error
		var prom chan error
		for {
			if !answered {
				select {
				case res = <-done:
					answered = true
				default:
				}
			}
			if answered && !promoted {
				// The park answered with no silent connection closed: a request makes a
				// reply fall due, on a silent connection or on one that serves it.
				promoted, from, prom = true, time.Now(), make(chan error, 1)
				go func() {
					_, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: "orders", Limit: 10000})
					prom <- err
				}()
			}
			if promoted && prom != nil {
				select {
				case answer = <-prom:
					prom = nil
				default:
				}
			}
			found = slices.ContainsFunc(r.SilentGone(isSilenced), func(at time.Time) bool { return !at.IsZero() })
			due = replyDue(r, isSilenced, from)
			if found || (promoted && prom == nil && answer == nil) || !due.IsZero() && time.Since(due) > silentBound {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !found && !(promoted && prom == nil && answer == nil) {
			t.fail(rules.Silent, fmt.Sprintf("%d connection(s) were slow (replies %s late) for %s, then fell silent: within %s of a reply falling due (B-290's 10 s, 1 s for the machine) the port finds a silent connection lost and closes it, or serves on another", n, lag, spell, silentBound),
				fmt.Sprintf("after %s no silent connection was closed (the park answered: %t)", time.Since(due).Round(time.Millisecond), answered))
		}
		r.EndSilence()
		if !answered {
			select {
			case res = <-done:
			case <-time.After(45 * time.Second):
				t.fail(rules.Silent, fmt.Sprintf("the park that met the silence answers once the silent connections are closed (its timeout_ms is %d)", a.TimeoutMS), "no answer 45 s later")
				return
			}
		}
		var canon *emqerr.Error
		f, faulted := t.D.(drivers.Faulter)
		// EMQSTALE is an answer too: the park's lease (1 s) is shorter than the slow spell's lag,
		// so a completion may reach the server after it (seen from the Node port on a busy machine).
		stale := errors.As(res.err, &canon) && canon.Type == emqerr.TypeStale
		if res.err == nil || (errors.As(res.err, &canon) && !stale) || (faulted && f.Fault() != nil) {
			t.ok(res.err, rules.Park, "park through a slow spell and a silence")
		}
		if promoted {
			if prom != nil {
				select {
				case answer = <-prom:
				case <-time.After(30 * time.Second):
					t.fail(rules.Silent, "the promote that met the silence is answered once the silent connections are closed", "no answer 30 s later")
				}
			}
			t.check(!errors.As(answer, &canon), rules.Silent, "the promote that met the silence answers its count or INTERNAL (B-282)", "%v", answer)
		}
		t.ok(t.afterDrop(nil), rules.Dropped, "an enqueue after the silent connections closed (retried while it answers INTERNAL, up to 30 s)")
	})
}

// serverFallsSilentUnderARequest is C01's, on a standalone server only: every connection of the
// port falls silent (no reply, no close: a stopped server, a dropped route) while the port is
// idle, and the kit sends one promote, a request that carries no timeout of its own and whose
// reply falls due at once. B-290: within 10 s (silentBound) the port finds the
// connection lost and closes it — or the request was served on a connection that did not fall
// silent; B-282: the request answers its count or INTERNAL, and once the silent connections
// close, as the server's side does when the route is back, the session serves again.
func serverFallsSilentUnderARequest(t *T) {
	t.throughRelay(0, rules.Silent, relayHello, func(r *chop.Relay) {
		t.enqueue("orders", "before")
		silenced := map[string]bool{}
		for _, c := range t.portClients() {
			silenced[c["addr"]] = true
		}
		isSilenced := func(addr string) bool { return silenced[addr] }
		n := r.Silence(isSilenced)
		defer r.EndSilence()
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			// limit 10000: the kit's deadline for this request is 30 s (B-20), past B-290's 10.
			_, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: "orders", Limit: 10000})
			done <- err
		}()
		var answer error
		var due time.Time
		wait, answered, found := done, false, false
		// B-290's 10 s run from the reply falling due: when the port's promote reached a silent
		// connection, later than start.
		for !found && !(answered && answer == nil) && (due.IsZero() || time.Since(due) <= silentBound) {
			select {
			case answer = <-wait:
				answered, wait = true, nil
			case <-time.After(50 * time.Millisecond):
			}
			found = slices.ContainsFunc(r.SilentGone(isSilenced), func(at time.Time) bool { return !at.IsZero() })
			due = replyDue(r, isSilenced, start)
		}
		if !found && !(answered && answer == nil) {
			t.fail(rules.Silent, fmt.Sprintf("%d connection(s) fell silent and a promote was sent: within %s (B-290's 10 s of its reply falling due, 1 s for the machine) the port finds the connection lost and closes it, or serves the request on another", n, silentBound),
				fmt.Sprintf("after %s no silent connection was closed (the promote sent %s before, answered: %t, %v)", time.Since(due).Round(time.Millisecond), time.Since(start).Round(time.Millisecond), answered, answer))
		}
		r.EndSilence()
		if !answered {
			select {
			case answer = <-done:
			case <-time.After(30 * time.Second):
				t.fail(rules.Silent, "the promote that met the silence is answered once the silent connections are closed", "no answer 30 s later")
			}
		}
		var canon *emqerr.Error
		t.check(!errors.As(answer, &canon), rules.Silent, "the promote that met the silence answers its count or INTERNAL (B-282)", "%v", answer)
		t.ok(t.afterDrop(nil), rules.Dropped, "an enqueue after the silent connections closed (retried while it answers INTERNAL, up to 30 s)")
	})
}

// unansweredConnectRefused is C01's, on a standalone server only. Every other clause's server
// answers a port's connect at once, with its SYN-ACK or, while it is down, a reset, so a port
// that puts no bound of its own on a dial certified; behind a dropped route nothing answers, and
// such a dial waits out the kernel's retries (about two minutes on Linux). Here hello names an
// address whose connects go unanswered (chop.StartUnanswered), as the session's second request:
// the first is a hello refused at once (valkey "", EMQARG), so that its deadline is a request's
// (B-20: 10 s), not the start-up's, under which a port idle on its first request is named mute.
// The hello is answered within it (B-21), refused, opening no session, and the same process then
// opens its session with the run's server.
func unansweredConnectRefused(t *T) {
	u, err := chop.StartUnanswered(time.Second)
	if errors.Is(err, chop.ErrAnswered) {
		t.skip(verdict.StatusNotRun, fmt.Sprintf("this clause needs an address whose connects go unanswered, which this machine's kernel does not give: %v", err))
	}
	if err != nil {
		t.harness("%v", err)
	}
	defer u.Close()
	_, err = drivers.Raw(t.ctx, t.D, "hello", request("hello", "valkey", "").Fields)
	t.refused(err, emqerr.Arg, rules.FieldType, `hello with valkey "" (the session's first request, answered at once)`)
	expected := fmt.Sprintf("hello naming %s, whose connects nothing answers (a dropped route), is answered within its deadline (B-20, B-21), refused, opening no session", u.Addr())
	start := time.Now()
	_, err = t.D.Hello(t.ctx, protocol.HelloArgs{Valkey: u.Addr()})
	if f, ok := t.D.(drivers.Faulter); ok && f.Fault() != nil {
		t.failErr(rules.PortProtocol, expected, "hello", err) // the deadline missed, or another fault (an INTERNAL answer is none)
	}
	t.check(err != nil, rules.PortProtocol, expected, "it opened a session (after %s)", time.Since(start).Round(time.Millisecond))
	t.helloUnder(t.helloArgs(), rules.HelloOp, "hello against Valkey 8.1, after a hello to an unanswered address was refused in the same process")
	t.enqueue("orders", "after an unanswered connect")
}

// parkThroughSilence parks two consumers (long leases, so that a call no silence ends waits a
// lease out), silences the port's connections which, by CLIENT LIST, match, and enqueues two
// jobs. The park must answer within 45 s (10 s to find a loss, 30 s to serve again, 5 s for the
// machine): the jobs completed, or INTERNAL. Then the silent connections close, as the server's
// side does once the route is back, and the session must serve again.
func (t *T) parkThroughSilence(r *chop.Relay, match func(client map[string]string) bool) {
	a := protocol.ParkArgs{Queue: "orders", Consumers: 2, Jobs: 2, LeaseMS: 120000, ParkMS: 1000, TimeoutMS: 120000}
	done := t.park(a)
	t.waitBlocked(a.Consumers)
	silenced, lines := map[string]bool{}, map[string]bool{}
	for _, c := range t.portClients() {
		if match(c) {
			silenced[c["addr"]] = true
			lines[c["addr"]] = c["cmd"] == "blpop"
		}
	}
	n := r.Silence(func(serverSide string) bool { return silenced[serverSide] })
	defer r.EndSilence()
	start := time.Now()
	t.kitEnqueue("orders", kitIDs(a.Jobs, 1<<50))
	select {
	case res := <-done:
		took := res.at.Sub(start).Round(time.Millisecond)
		var canon *emqerr.Error
		f, faulted := t.D.(drivers.Faulter)
		if res.err != nil && !errors.As(res.err, &canon) && !(faulted && f.Fault() != nil) {
			t.cover(rules.Silent) // INTERNAL: the park met the loss, as B-282 allows
			break
		}
		t.ok(res.err, rules.Park, "park with its connections fallen silent")
		t.check(len(res.res.Jobs) == a.Jobs, rules.Silent,
			fmt.Sprintf("%d connections fell silent: the port finds them lost and serves again, so the park completes the %d jobs enqueued", n, a.Jobs),
			"it answered after %s with %d jobs", took, len(res.res.Jobs))
	case <-time.After(45 * time.Second):
		t.fail(rules.Silent, fmt.Sprintf("%d connections fell silent: within 45 s the park completes the jobs or answers INTERNAL (its timeout_ms is %d)", n, a.TimeoutMS), "no answer 45 s after the silence")
		return
	}
	t.linesClosedInTime(r, lines, start, time.Duration(a.ParkMS)*time.Millisecond)
	r.EndSilence()
	t.ok(t.afterDrop(nil), rules.Dropped, "an enqueue after the silent connections closed (retried while it answers INTERNAL, up to 30 s)")
}

// linesClosedInTime checks that the port closed each parked line that fell silent at start
// within its pop's timeout and silentBound: a lost connection is found
// by then, and the port's own end of it closed. It waits for the closes, or until that bound.
func (t *T) linesClosedInTime(r *chop.Relay, lines map[string]bool, start time.Time, pop time.Duration) {
	due := pop + silentBound
	isLine := func(addr string) bool { return lines[addr] }
	for time.Since(start) < due && slices.Contains(r.SilentGone(isLine), time.Time{}) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, at := range r.SilentGone(isLine) {
		took := "still open"
		if !at.IsZero() {
			took = "closed after " + at.Sub(start).Round(time.Millisecond).String()
		}
		t.check(!at.IsZero() && at.Sub(start) <= due, rules.Silent,
			fmt.Sprintf("a parked line that fell silent is found lost and closed within %s (its pop's %s, B-290's 10 s, 1 s for the machine)", due, pop), "%s", took)
	}
}

const relayHello = "hello through a relay in front of the server succeeds"

// replyDue is when a reply first fell due on a connection match names since it fell silent, as
// the relay saw it (the port's request swallowed, or the server's answer to one), and not before
// from: a port starved of the CPU on a busy machine may send the request it owes seconds after
// the kit asked for it, and B-290's bound runs from the reply falling due. Zero while none has,
// until silentBound after from: a port that sends nothing at all is judged from from.
func replyDue(r *chop.Relay, match func(serverSide string) bool, from time.Time) time.Time {
	var due time.Time
	for _, at := range r.Owed(match) {
		if !at.IsZero() && (due.IsZero() || at.Before(due)) {
			due = at
		}
	}
	switch {
	case due.IsZero() && time.Since(from) > silentBound:
		return from
	case !due.IsZero() && due.Before(from):
		return from
	}
	return due
}

// silentBound is B-290's 10 s from a reply falling due to the port closing the silent
// connection, and one second for the machine. It was three: a port that waited 12 s
// certified (an outside red-team port).
const silentBound = 10*time.Second + time.Second

// killClient closes one connection of the port on the server that lists it.
func (t *T) killClient(c map[string]string) {
	for _, nd := range t.admin.Nodes {
		if c["node"] == nd.Label {
			if _, err := nd.C.Do(t.ctx, "CLIENT", "KILL", "ID", c["id"]); err != nil {
				t.harness("CLIENT KILL ID %s on %s: %v", c["id"], nd.Addr, err)
			}
		}
	}
}

// ownAdmin dials a harness connection of its own to the run's Valkey, for a command that holds
// its connection (DEBUG RELOAD, a long script); its commands are the kit's on the wire. Its
// calls may take heldWait, not the harness's 10 s: the server answers them when the held work
// ends, later still on a loaded machine (C01's reload of 4000 keys at 300 µs, 1.2 s quiet, ran
// past 10 s in CI beside the mutant table, each of its short sleeps overrunning).
func (t *T) ownAdmin() *admin {
	a, err := dialAdmin(t.ctx, t.cfg.Valkey)
	if err != nil {
		t.harness("connect to Valkey at %s: %v", t.cfg.Valkey, err)
	}
	t.ownConnections(a)
	a.SetWait(heldWait)
	return a
}

// heldWait bounds a call the server holds by design: past the busy script's own minute.
const heldWait = 2 * time.Minute

// atEveryByte measures the server's bytes one uncut call (uncut, with its own checks) reads
// through r; then, for every byte position n of them, it has the relay drop the port's
// connections after n more and calls cut, which checks an answer it got and returns the error
// it got instead. That error must be INTERNAL (B-282: a request that meets the loss may answer
// it), and the session must serve again within 30 s. Nothing waits on a clock: the port's
// other traffic (a lease renewal's reply) only moves where the replies are cut.
func (t *T) atEveryByte(r *chop.Relay, what string, uncut func(), cut func(n int64) error) {
	from := r.Taken()
	uncut()
	size := r.Taken() - from
	t.cover(rules.Dropped)
	for n := range size {
		r.DropAfter(n)
		err := cut(n)
		r.DropAfter(-1) // a call that read fewer bytes leaves the drop unspent
		if err != nil && !t.answeredInternal(err) {
			t.fail(rules.Dropped, fmt.Sprintf("%s whose connection the server dropped after %d bytes of its replies answers INTERNAL, or as documented", what, n), err.Error())
		}
		t.ok(t.afterDrop(nil), rules.Dropped, fmt.Sprintf("an enqueue after the server dropped the port's connections %d bytes into %s's replies (retried while it answers INTERNAL, up to 30 s)", n, what))
	}
}
