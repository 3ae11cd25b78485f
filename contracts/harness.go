package contracts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/internal/wire"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
)

// Config is what the specs run against.
type Config struct {
	// Factory starts a fresh port session per clause.
	Factory drivers.Factory
	// Valkey is the address of a Valkey 8.1 the harness may FLUSHALL at will (dedicated). In a
	// cluster run it is the seed node the port's hello names.
	Valkey string
	// Cluster, when set, runs the contracts against a Valkey Cluster (dedicated, FLUSHALLed):
	// the address of every node (Valkey is one of them). The harness reads the slot map, routes
	// its own commands to the owning primary, captures MONITOR on every primary, says hello with
	// cluster: true, and adds the cluster rules to the wire law. A port that does not declare
	// protocol.CapCluster has every clause NOT CLAIMED.
	Cluster []string
	// Bundle is the kit's script bundle: the SHA1s the wire law admits and the digest of the fence.
	Bundle *lua.Bundle
	// WrongKind starts a server of the wrong kind (a Redis 7) for C01 and returns its address and
	// a stop function. Nil: the clause is NOT RUN, saying how to give one.
	WrongKind Starter
	// OldValkey starts a real Valkey older than the canon admits (8.0.1), and ClusterValkey a
	// Valkey 8.1 started with --cluster-enabled yes, for C01's server checks beyond the name
	// (A12). Nil: the clause is NOT RUN, saying how to give one.
	OldValkey, ClusterValkey Starter
	// NoHello starts a Valkey 8.1 that rejects HELLO, for C01 (A12). Nil: that clause is NOT RUN.
	NoHello Starter
	// StandaloneValkey starts a standalone Valkey 8.1 for a cluster run's C01 (a port in cluster
	// mode refuses it). Nil: that clause is NOT RUN.
	StandaloneValkey Starter
	// ClauseTimeout bounds one clause (default 5 min): a safety net for the harness, since every
	// request to a port is bounded by its own deadline, which grows with the work it names.
	ClauseTimeout time.Duration
	// Admit names extra script SHA1s (sha1 → script name) the wire law accepts as the bundle's.
	// It is a self-test aid of the kit, never for certification: with a mutant's edited scripts
	// admitted, the mutant table shows what the behavioural checks catch on their own.
	Admit map[string]string
	// AdmitDigest is the digest of the bundle with the admitted scripts (a port's edited copy),
	// which C01 then accepts beside the kit's: a self-test aid like Admit, never certification.
	AdmitDigest string
	// Seed replays the model-checked walks (walk.go) from this seed; 0 is the fixed default,
	// so a certification's transcript is deterministic.
	Seed int64
	// lastFailure is set by Run under FailFast: a failing clause is the run's last, so its close
	// need not wait out a park still running (nothing runs after it to be disturbed).
	lastFailure bool
}

// T is one clause's world: a flushed keyspace, a MONITOR capture, and a port session.
type T struct {
	ctx   context.Context
	cfg   *Config
	cid   string
	admin *admin
	mon   *wire.Monitor
	law   *law
	own   []string
	D     drivers.Driver    // the port session opened for the clause
	wall  drivers.WallClock // the wall clock of D's port (a wallClock clause)
	Hello protocol.HelloResult
	more  []drivers.Driver // further sessions a clause opened
	syncs int
	stops []func()
	// parking is closed when a background park op has returned: the session is not closed
	// under it.
	parking chan struct{}
	// parked is that park's arguments and the wire's mark when it was sent: waitBlocked counts
	// its claims while it waits.
	parked parkCall
	// covered holds the ids of the rules the clause evaluated, pass or fail (TRACEABILITY.md).
	covered map[string]bool
	// rec is the clause's verdict, typed, as the runner reads it.
	rec *verdict.Record
}

// open makes the clause's world: the harness's connections, a flushed keyspace, the MONITOR
// capture, the wire law, and a port session that has said hello (unless noHello: the clause says
// it itself).
func (t *T) open(c clause) {
	var err error
	if t.cluster() {
		if t.admin, err = dialClusterAdmin(t.ctx, t.cfg.Cluster); err != nil {
			t.harness("connect to the Valkey Cluster at %v: %v", t.cfg.Cluster, err)
		}
	} else if t.admin, err = dialAdmin(t.ctx, t.cfg.Valkey); err != nil {
		t.harness("connect to Valkey at %s: %v", t.cfg.Valkey, err)
	}
	t.ownConnections(t.admin)
	if _, err := t.admin.do(t.ctx, "FLUSHALL"); err != nil {
		t.harness("FLUSHALL: %v", err)
	}
	if t.cluster() {
		// INFO errorstats then counts this clause's redirects and CROSSSLOT replies only.
		if _, err := t.admin.do(t.ctx, "CONFIG", "RESETSTAT"); err != nil {
			t.harness("CONFIG RESETSTAT: %v", err)
		}
	}
	if t.mon, err = wire.StartMonitors(t.ctx, t.admin.Addrs(), t.admin.PrimaryLabels()); err != nil {
		t.harness("MONITOR: %v", err)
	}
	t.own = append(t.own, t.mon.Own()...)
	t.law = newLaw(t.cfg.Bundle, t.cfg.Admit, t.isOwn, t.getkeys)
	if t.cluster() {
		t.law.OnCluster(t.admin.OwnerOf)
	}
	t.cover(rules.Session()...)
	if c.wallClock {
		t.D, t.wall = t.startWallClocked(-wallStep)
	} else {
		t.D = t.start()
	}
	if c.noHello {
		return
	}
	h, err := t.D.Hello(t.ctx, t.helloArgs())
	if err != nil {
		t.notClusterPort(err)
		t.failErr(rules.HelloOp,
			"hello against Valkey 8.1 succeeds", "hello", err)
	}
	t.Hello = h
	t.rec.Update(func(c *verdict.Clause) { c.Hello = &h })
	t.clusterDeclared(h)
	t.claimed(h)
}

// claimed ends the clause NOT CLAIMED when the port's hello does not claim its contract.
func (t *T) claimed(h protocol.HelloResult) {
	if !slices.Contains(h.Claims, t.cid) {
		t.skip(verdict.StatusNotClaimed, "the port's hello does not claim "+t.cid)
	}
}

// cluster tells a run against a Valkey Cluster.
func (t *T) cluster() bool { return len(t.cfg.Cluster) > 0 }

// helloArgs are the hello of the run's server: in a cluster run, cluster mode from the seed.
func (t *T) helloArgs() protocol.HelloArgs {
	return protocol.HelloArgs{Valkey: t.cfg.Valkey, Cluster: t.cluster()}
}

// clusterDeclared ends a cluster run's clause NOT CLAIMED when the port's hello does not
// declare cluster mode.
func (t *T) clusterDeclared(h protocol.HelloResult) {
	if t.cluster() && !slices.Contains(h.Capabilities, protocol.CapCluster) {
		t.skip(verdict.StatusNotClaimed, "the port does not declare cluster mode (hello capability \"cluster\"): a cluster run certifies only ports that do")
	}
}

// notClusterPort ends a cluster run's clause NOT CLAIMED when the port refused cluster mode
// (UNSUPPORTED, or EMQSERVER: it checked the cluster node as the standalone server it wants): a
// port that does not support cluster mode is not certified on a cluster, and is not failed
// either. Any other hello error is the clause's failure.
func (t *T) notClusterPort(err error) {
	var ue *drivers.UnsupportedError
	if t.cluster() && (errors.As(err, &ue) || errors.Is(err, emqerr.Server)) {
		t.skip(verdict.StatusNotClaimed, "the port does not support cluster mode: hello with cluster: true answered "+err.Error()+
			" (a port in cluster mode declares the hello capability \"cluster\")")
	}
}

// start opens a port session (the clause's first, or another one).
func (t *T) start() drivers.Driver {
	d, err := t.cfg.Factory.Start(t.ctx)
	if err != nil {
		t.failErr(rules.PortProtocol, "the port starts", "start", err)
	}
	if t.D != nil {
		t.more = append(t.more, d)
	}
	return d
}

// startWallClocked opens the clause's session with its port's wall clock offset from the real
// one (drivers.WallClockFactory), or ends the clause NOT RUN (not offered) where the kit cannot.
func (t *T) startWallClocked(offset time.Duration) (drivers.Driver, drivers.WallClock) {
	wf, ok := t.cfg.Factory.(drivers.WallClockFactory)
	if !ok {
		t.notRun("%s", wallClockUnset)
	}
	d, wc, err := wf.StartWallClocked(t.ctx, offset)
	if errors.Is(err, drivers.ErrNoWallClock) {
		t.notRun("%v", err)
	}
	if err != nil {
		t.failErr(rules.PortProtocol, "the port starts", "start", err)
	}
	return d, wc
}

// close ends the clause's world: the port sessions (a session that does not close cleanly fails
// a clause that had not failed yet), the servers it started, the capture and the connections.
// A failed clause keeps the port's wire trace.
func (t *T) close(ctx context.Context, failed bool) {
	if t.parking != nil && !(failed && t.cfg.lastFailure) {
		select {
		case <-t.parking:
		case <-time.After(20 * time.Second):
		}
	}
	covered := slices.Sorted(maps.Keys(t.covered))
	t.rec.Update(func(c *verdict.Clause) { c.Rules = covered })
	if failed && t.mon != nil && t.admin != nil {
		_ = t.mon.Sync(ctx, t.admin.Admin, 1<<30)
		trace := t.trace(t.mon.Snapshot(), 200)
		t.rec.Update(func(c *verdict.Clause) { c.Wire = trace })
	}
	for _, d := range append(t.more, t.D) {
		if d == nil {
			continue
		}
		if err := d.Close(ctx); err != nil && !failed {
			failed = true // the first unclean close is the clause's failure; the rest still close
			t.record(rules.Close, "close ends the session cleanly", t.errText("close", err))
		}
	}
	for _, stop := range t.stops {
		stop()
	}
	if t.mon != nil {
		t.mon.Close()
	}
	if t.admin != nil {
		t.admin.Close()
	}
}

// isOwn tells the harness's own lines (its admin and MONITOR connections) from the port's. On
// a cluster a client address is only unique per node: the host may reuse a local port towards
// another node.
func (t *T) isOwn(l Line) bool { return t.isOwnAt(l.Node, l.Client) }

// isOwnAt is isOwn for a client address seen on node (a MONITOR label; "" standalone).
// ownConnections records a's connections as the harness's own (not the port's, in MONITOR and
// CLIENT LIST).
func (t *T) ownConnections(a *admin) {
	for _, n := range a.Nodes {
		t.own = append(t.own, n.Label+"|"+n.C.Local())
	}
}

func (t *T) isOwnAt(node, client string) bool { return slices.Contains(t.own, node+"|"+client) }

func (t *T) getkeys(args []string) ([]string, error) {
	cmd := []any{"COMMAND", "GETKEYS"}
	for _, a := range args {
		cmd = append(cmd, a)
	}
	v, err := t.admin.do(t.ctx, cmd...)
	if err != nil {
		if strings.Contains(err.Error(), "no key arguments") {
			return nil, nil
		}
		return nil, err
	}
	var ks []string
	for _, e := range v.Elems {
		ks = append(ks, string(e.Str))
	}
	return ks, nil
}

// sync waits until the capture holds everything the server ran so far.
func (t *T) sync() {
	t.syncs++
	if err := t.mon.Sync(t.ctx, t.admin.Admin, t.syncs); err != nil {
		t.harness("%v", err)
	}
}

// pause waits d, a span of the situation the clause makes (an outage, a quiet spell, a lease
// left to run out); a run that ends meanwhile (the clause's deadline, an interrupt, a fail-fast
// stop) ends the clause there rather than when the span is over.
func (t *T) pause(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.ctx.Done():
		panic(stopClause{})
	}
}

// mark is a position in the capture: lines after it are newer.
func (t *T) mark() int {
	t.sync()
	return t.mon.Len()
}

// portLines are the port's lines (its own commands and its scripts' lua lines) after mark.
func (t *T) portLines(from int) []Line {
	t.sync()
	all := t.mon.Snapshot()
	var out []Line
	for _, l := range all[from:] {
		if l.Client == "lua" {
			if l.Script >= 0 && !t.isOwn(all[l.Script]) {
				out = append(out, l)
			}
			continue
		}
		if !t.isOwn(l) {
			out = append(out, l)
		}
	}
	return out
}

func (t *T) checkWireLaw() {
	t.cover(rules.Wire()...)
	t.sync()
	lines := t.mon.Snapshot()
	vs := t.law.Check(lines)
	if t.cluster() {
		t.cover(rules.ClusterLaw()...)
		stats, err := t.admin.Errorstats(t.ctx)
		if err != nil {
			t.harness("%v", err)
		}
		vs = append(vs, t.law.RedirectsLeft(lines, stats)...)
		t.recordQueues(lines)
	}
	if len(vs) > 0 {
		var b strings.Builder
		for i, v := range vs {
			if i == 8 {
				fmt.Fprintf(&b, "\n… and %d more", len(vs)-i)
				break
			}
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(violationText(v))
		}
		t.fail(rules.WireLaw, "every command the port sent obeys the wire law", fmt.Sprintf("%d violation(s):\n%s", len(vs), b.String()))
	}
}

// trace renders the port's lines of a capture, the last max of them.
func (t *T) trace(all []Line, max int) string {
	var ls []string
	for _, l := range all {
		if l.Client == "lua" {
			if l.Script >= 0 && t.isOwn(all[l.Script]) {
				continue
			}
			ls = append(ls, "    "+l.String())
			continue
		}
		if t.isOwn(l) {
			continue
		}
		ls = append(ls, l.String())
	}
	if len(ls) > max {
		ls = append([]string{fmt.Sprintf("… %d earlier lines", len(ls)-max)}, ls[len(ls)-max:]...)
	}
	return strings.Join(ls, "\n")
}

// fail ends the clause with an h2spec-style message: the rule, what was expected, what the
// port did.
func (t *T) fail(rule rules.Rule, expected, got string, wire ...Line) {
	t.record(rule, expected, got, wire...)
	panic(stopClause{})
}

// record records a failed check without ending the clause.
func (t *T) record(rule rules.Rule, expected, got string, wire ...Line) {
	rule, expected, got = t.faultFirst(rule, expected, got)
	t.cover(rule)
	f := verdict.Failure{Rule: rule.ID, Quote: rule.Quote, Expected: expected, Got: got}
	for _, l := range wire {
		f.Wire = append(f.Wire, l.String())
	}
	t.rec.Decide(verdict.StatusFail, "", &f)
}

// faultFirst names the rule a failure breaks when a session of the clause broke the conversation
// (drivers.Faulter): the port protocol's (B-21), not the op's — what the op's check saw follows
// from the fault. A session's close keeps its own rule (B-24).
func (t *T) faultFirst(rule rules.Rule, expected, got string) (rules.Rule, string, string) {
	if rule.ID == rules.PortProtocol.ID || rule.ID == rules.Close.ID {
		return rule, expected, got
	}
	for _, d := range append([]drivers.Driver{t.D}, t.more...) {
		f, ok := d.(drivers.Faulter)
		if !ok {
			continue
		}
		if pe := f.Fault(); pe != nil {
			if !strings.Contains(got, pe.Reason) {
				got = fmt.Sprintf("the port broke the conversation on %s: %s; then: %s", pe.Op, pe.Reason, got)
			}
			return rules.PortProtocol, fmt.Sprintf("every request answered in sequence, within its deadline, by one reply line (the check under way: %s, rule %s)", expected, rule.ID), got
		}
	}
	return rule, expected, got
}

// cover records that the clause evaluates these rules. Checks record their rule themselves; a
// clause calls cover before a loop that fails only on a violation, so that a passing run still
// shows what the clause checks.
func (t *T) cover(rs ...rules.Rule) {
	for _, r := range rs {
		t.covered[r.ID] = true
	}
}

// check fails the clause unless cond holds.
func (t *T) check(cond bool, rule rules.Rule, expected, gotFormat string, a ...any) {
	t.cover(rule)
	if !cond {
		t.fail(rule, expected, fmt.Sprintf(gotFormat, a...))
	}
}

// failErr reports an unexpected error from the port.
func (t *T) failErr(rule rules.Rule, expected, op string, err error) {
	t.fail(rule, expected, t.errText(op, err))
}

// errText is what a failure says of an unexpected error from the port.
func (t *T) errText(op string, err error) string {
	var pe *drivers.PortError
	var ue *drivers.UnsupportedError
	switch {
	case errors.As(err, &pe):
		return fmt.Sprintf("the port misbehaved on %s: %v", op, err)
	case errors.As(err, &ue):
		return fmt.Sprintf("the port answered UNSUPPORTED to %s (%s) in a contract it claims", op, ue.Message)
	}
	return fmt.Sprintf("%s answered an error: %v", op, err)
}

// harness ends the clause as a harness error: the kit could not do its part.
func (t *T) harness(format string, a ...any) {
	t.rec.Decide(verdict.StatusHarnessError, fmt.Sprintf(format, a...), nil)
	panic(stopClause{})
}

// skip ends the clause with a status that is neither a pass nor a failure (not claimed, not
// run, not offered) and the reason a reader is shown.
func (t *T) skip(st verdict.Status, reason string) {
	t.rec.Decide(st, reason, nil)
	panic(stopClause{})
}

// ok fails the clause when a port op that must succeed did not.
func (t *T) ok(err error, rule rules.Rule, op string) {
	t.cover(rule)
	if err != nil {
		t.failErr(rule, op+" succeeds", op, err)
	}
}

// refused checks that err is the canon error want.
func (t *T) refused(err error, want *emqerr.Error, rule rules.Rule, what string) {
	t.cover(rule)
	if errors.Is(err, want) {
		return
	}
	got := "it succeeded"
	if err != nil {
		got = "it answered " + err.Error()
	}
	t.fail(rule, fmt.Sprintf("%s is refused %s", what, want.Type), got)
}
