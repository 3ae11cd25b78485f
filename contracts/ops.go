package contracts

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/echomq/kit/contracts/internal/wire"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
)

// Port ops that a clause needs to succeed; a failure fails the clause quoting the rule.

func (t *T) enqueue(q, payload string) string {
	return t.enqueueWith(protocol.EnqueueArgs{Queue: q, PayloadB64: b64(payload)})
}

func (t *T) enqueueWith(a protocol.EnqueueArgs) string {
	r, err := t.D.Enqueue(t.ctx, a)
	t.ok(err, rules.Enqueue, "enqueue")
	t.check(r.Created, rules.Enqueue, "a new job's enqueue answers created: true", "created: false for %s", r.ID)
	return r.ID
}

func (t *T) laneEnqueue(q, lane, payload string) string {
	return t.enqueueWith(protocol.EnqueueArgs{Queue: q, Lane: lane, PayloadB64: b64(payload)})
}

func (t *T) claim(q string, lease int64) *protocol.ClaimResult {
	c, err := t.D.Claim(t.ctx, protocol.ClaimArgs{Queue: q, LeaseMS: lease})
	t.ok(err, rules.Claim, "claim")
	return c
}

// whileLeaseLives runs try, which claims a job of queue qn under lease ms and at once runs on it
// an op that needs the lease live, returning the lease's deadline and the op's error. A short
// lease keeps a clause's later wait for it to pass short, but a busy machine may let it pass
// before the op runs: when the op was refused EMQSTALE and the server's clock has reached the
// deadline, the queue is emptied and try runs again under a lease four times longer (three
// times at most). A refusal while the lease lived is the port's and is returned at any scale.
// whileLeaseLives returns the error of the last try.
func (t *T) whileLeaseLives(qn string, lease int64, try func(lease int64) (int64, error)) error {
	for i := 0; ; i, lease = i+1, lease*4 {
		deadline, err := try(lease)
		if i == 3 || !errors.Is(err, emqerr.Stale) || t.now() < deadline {
			return err
		}
		t.forgetQueue(qn)
	}
}

// forgetQueue deletes every key of queue qn (the harness's own DELs).
func (t *T) forgetQueue(qn string) {
	for _, k := range t.allKeys() {
		if p, err := keys.Parse(k); err == nil && p.Queue == qn {
			t.do("DEL", k)
		}
	}
}

func (t *T) mustClaim(q string, lease int64) *protocol.ClaimResult {
	c := t.claim(q, lease)
	t.cover(rules.Claim)
	if c == nil {
		t.fail(rules.Claim, "claim on a queue with pending work returns a job", "an empty reply")
	}
	return c
}

func (t *T) laneClaim(q string, lease int64) *protocol.ClaimResult {
	c, err := t.D.LaneClaim(t.ctx, protocol.ClaimArgs{Queue: q, LeaseMS: lease})
	t.ok(err, rules.Lanes, "lane_claim")
	return c
}

func fa(q, id string, token int64) protocol.FenceArgs {
	return protocol.FenceArgs{Queue: q, ID: id, Token: token}
}

func (t *T) complete(q, id string, token int64) {
	t.ok(t.D.Complete(t.ctx, fa(q, id, token)), rules.Complete, "complete with the live token")
}

// portCommands are the port's own commands after from, without its background upkeep — the
// minter lease traffic (a minter renews in the background, A9) and PING (a connection's health
// check, A4) — and without lua lines.
func (t *T) portCommands(from int) []Line {
	var out []Line
	for _, l := range t.portLines(from) {
		if l.Client == "lua" || l.Cmd() == "PING" {
			continue
		}
		if len(l.Args) > 1 && strings.HasPrefix(l.Args[1], "{emq}:minter:") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// byClient groups port command lines by connection, in order of first appearance.
func byClient(lines []Line) ([]string, map[string][]Line) {
	var order []string
	m := map[string][]Line{}
	for _, l := range lines {
		if l.Client == "lua" {
			continue
		}
		c := l.Client
		if l.Node != "" {
			c += "@" + l.Node // a client address is unique per node only
		}
		if _, ok := m[c]; !ok {
			order = append(order, c)
		}
		m[c] = append(m[c], l)
	}
	return order, m
}

// fenceShown says whether a port connection's fence shows in its own node's MONITOR stream:
// always on a standalone server. On a cluster, only on the {emq} slot's owner (any other node
// answers the fence MOVED and the port runs it at the owner; the wire law matches those runs
// to the connections), and not on a connection that only read the slot map.
func (t *T) fenceShown(ls []Line) bool {
	if !t.cluster() {
		return true
	}
	if len(ls) == 0 || ls[0].Node != t.admin.OwnerOf(keys.Slot(keys.Bundle())) {
		return false
	}
	for _, l := range ls {
		if c := l.Cmd(); c != "HELLO" && c != "CLUSTER" {
			return true
		}
	}
	return false
}

// keyspaceParses checks the whole keyspace against the grammar: every key parses and the keys
// of one queue answer one slot.
func (t *T) keyspaceParses() {
	slot := map[string]uint16{}
	t.cover(rules.Grammar, rules.PendingZero, rules.IntegerMS) // whatever keys the clause left
	for _, k := range t.allKeys() {
		p, err := keys.Parse(k)
		if err != nil {
			t.fail(rules.Grammar, "every key in the keyspace parses", "key "+k+": "+err.Error())
		}
		if p.Queue == "" {
			continue
		}
		s := keys.Slot(k)
		if prev, ok := slot[p.Queue]; ok && prev != s {
			t.fail(rules.Grammar, "all keys of queue "+p.Queue+" answer one slot", "key "+k+" answers another slot")
		}
		slot[p.Queue] = s
		t.scoresShaped(k, p.Kind)
	}
}

// scoresShaped holds a queue zset's scores to their shape: pending and lane ids all at 0 (so
// lex order is mint order); leases, due times and death times whole server milliseconds.
func (t *T) scoresShaped(k string, kind keys.Kind) {
	var rule rules.Rule
	switch kind {
	case keys.KindPending, keys.KindLane:
		rule = rules.PendingZero
	case keys.KindActive, keys.KindScheduled, keys.KindDead:
		rule = rules.IntegerMS
	default:
		return
	}
	v, err := t.admin.do(t.ctx, "ZRANGE", k, 0, -1, "WITHSCORES")
	if err != nil {
		t.harness("ZRANGE %s: %v", k, err)
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		id, score := string(v.Elems[i].Str), string(v.Elems[i+1].Str)
		f, err := strconv.ParseFloat(score, 64)
		switch {
		case err != nil:
			t.fail(rule, k+" holds numeric scores", fmt.Sprintf("%s has score %q", id, score))
		case rule == rules.PendingZero && f != 0:
			t.fail(rule, k+": every id at score 0", fmt.Sprintf("%s at score %s", id, score))
		case rule == rules.IntegerMS && (f != math.Trunc(f) || f < 0):
			t.fail(rule, k+": every score a whole number of server milliseconds", fmt.Sprintf("%s at score %s", id, score))
		}
	}
}

// evalshaOf names the bundle script an EVALSHA line of the port runs, by the law's table of the
// scripts admitted (an edited script has its own SHA1, and a run that admits edited scripts has
// the port send theirs); "" for any other line.
func (t *T) evalshaOf(l Line) string {
	if l.Cmd() != "EVALSHA" {
		return ""
	}
	return t.law.scripts[strings.ToLower(argAt(l, 1))].Name
}

// durationOnWire checks canon law 4 on the port's wire after from: every run of the script
// carries the duration the harness asked for in its ARGV (never an instant), and the run that
// executed (an EVALSHA answered NOSCRIPT shows no lua lines) read the server's TIME.
func (t *T) durationOnWire(from int, script string, ms int64) {
	all := t.portLines(from)
	ran := false
	t.cover(rules.Clock)
	for i, l := range all {
		if l.Client == "lua" || t.evalshaOf(l) != script {
			continue
		}
		_, argv, _ := wire.EvalKeys(l.Args)
		executed, timed := false, false
		for _, x := range all[i+1:] {
			if x.Client != "lua" {
				break
			}
			executed = true
			timed = timed || x.Cmd() == "TIME"
		}
		ran = ran || executed
		if !slices.Contains(argv, strconv.FormatInt(ms, 10)) || (executed && !timed) {
			t.fail(rules.Clock, fmt.Sprintf("%s carries the duration %d in ARGV and takes the time from TIME inside the script", script, ms),
				fmt.Sprintf("ARGV %q, TIME read in the script: %v", argv, timed), all[i:min(len(all), i+12)]...)
		}
	}
	t.cover(rules.Clock)
	if !ran {
		t.fail(rules.Clock, "the "+script+" script on the wire", "no run of "+script+" from the port")
	}
}
