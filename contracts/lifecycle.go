package contracts

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/resp"
)

// Bytes a port must carry untouched through every read path: NUL, the high half, and invalid
// UTF-8 (a lone continuation byte, an overlong '/', a UTF-16 surrogate, a truncated sequence).
// rawPayload also holds every byte value once, so no range can be mangled unseen.
var rawPayload = "p\x00\x80\xff\xc0\xaf\xed\xa0\x80" + everyByte(false) + "\xe2\x82"

const (
	rawCkpt  = "\x00ck\xfe\x80\xc3(\x00"
	rawCkpt2 = "\xff\xfe\x00v2\xa0"
)

// everyByte is the 256 byte values in ascending (or descending) order.
func everyByte(down bool) string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
		if down {
			b[i] = byte(255 - i)
		}
	}
	return string(b)
}

// lcRow is a job row exactly: the canon's three fields and nothing else.
type lcRow struct {
	state    string
	attempts int64
	payload  string
}

// lcWant is what a rule implies for a plain queue's keyspace after an op: the exact members
// of pending, scheduled, active and dead, the exact errors and ckpt hashes (nil: the rule says
// nothing about them), and every row of the queue exactly.
type lcWant struct {
	pending, scheduled, active, dead []string
	errors, ckpt                     map[string]string
	rows                             map[string]lcRow
}

// lcQueueIs compares the queue's whole job keyspace with w; pending scores must all be 0 (canon §2).
func (t *T) lcQueueIs(qn string, w lcWant, rule rules.Rule) {
	q := t.q(qn)
	t.cover(rule)
	var bad []string
	for _, s := range []struct {
		key  string
		want []string
	}{{q.Pending(), w.pending}, {q.Scheduled(), w.scheduled}, {q.Active(), w.active}, {q.Dead(), w.dead}} {
		got, scores := t.zset(s.key)
		if !lcSameSet(got, s.want) {
			bad = append(bad, fmt.Sprintf("%s holds %q, want exactly %q", s.key, got, s.want))
		}
		if s.key == q.Pending() {
			for _, m := range got {
				if scores[m] != 0 {
					bad = append(bad, fmt.Sprintf("%s holds %s at score %d, want 0", s.key, m, scores[m]))
				}
			}
		}
	}
	for _, h := range []struct {
		key  string
		want map[string]string
	}{{q.Errors(), w.errors}, {q.Ckpt(), w.ckpt}} {
		if h.want == nil {
			continue
		}
		if got := t.hash(h.key); !maps.Equal(got, h.want) {
			bad = append(bad, fmt.Sprintf("%s is %s, want %s", h.key, lcQuoteMap(got), lcQuoteMap(h.want)))
		}
	}
	bad = append(bad, t.lcRowsAre(jobKey(q, ""), w.rows)...)
	if len(bad) > 0 {
		t.fail(rule, "the queue's keyspace exactly as the rule implies", strings.Join(bad, "; "))
	}
}

// lcRowsAre lists how the rows under prefix differ from want (exact set of rows, exact fields).
func (t *T) lcRowsAre(prefix string, want map[string]lcRow) []string {
	var bad []string
	var got []string
	for _, k := range t.allKeys() {
		if strings.HasPrefix(k, prefix) {
			got = append(got, strings.TrimPrefix(k, prefix))
		}
	}
	if !lcSameSet(got, slices.Collect(maps.Keys(want))) {
		bad = append(bad, fmt.Sprintf("rows of %q, want exactly %q", got, slices.Sorted(maps.Keys(want))))
	}
	for id, r := range want {
		row := t.hash(prefix + id)
		exp := map[string]string{"state": r.state, "attempts": fmt.Sprint(r.attempts), "payload": r.payload}
		if !maps.Equal(row, exp) {
			bad = append(bad, fmt.Sprintf("row %s is %s, want %s", id, lcQuoteMap(row), lcQuoteMap(exp)))
		}
	}
	return bad
}

func lcSameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func lcQuoteMap(m map[string]string) string {
	var fs []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fs = append(fs, fmt.Sprintf("%q:%q", k, m[k]))
	}
	return "{" + strings.Join(fs, " ") + "}"
}

// lcClearWake empties the queue's wake list, so that the next op's arming shows.
func (t *T) lcClearWake(qn string) { t.do("DEL", t.q(qn).Wake()) }

// lcWakeIs checks the wake list's length after an op that must (1) or must not (0) arm it.
func (t *T) lcWakeIs(qn string, want int64, rule rules.Rule, what string) {
	n := t.llen(t.q(qn).Wake())
	t.check(n == want, rule, fmt.Sprintf("%s: the wake list holds %d token(s)", what, want), "wake length %d", n)
}

// lcCkptOf is the checkpoint a claim returned, or "<none>".
func lcCkptOf(c *protocol.ClaimResult) string {
	if c == nil || c.CheckpointB64 == nil {
		return "<none>"
	}
	return unb64(*c.CheckpointB64)
}

// lcRedelivered claims and checks the job, token, payload and checkpoint bytes it returns.
func (t *T) lcRedelivered(qn, id string, token int64, payload, ckpt string, rule rules.Rule) *protocol.ClaimResult {
	c := t.mustClaim(qn, workLease)
	t.check(c.ID == id && c.Token == token, rules.Tokens, fmt.Sprintf("the claim returns %s with token %d", id, token), "%s token %d", c.ID, c.Token)
	t.check(unb64(c.PayloadB64) == payload, rules.Claim, fmt.Sprintf("the payload bytes %q exactly", payload), "%q", unb64(c.PayloadB64))
	t.check(lcCkptOf(c) == ckpt, rule, fmt.Sprintf("the claim returns the checkpoint %q exactly", ckpt), "%q", lcCkptOf(c))
	return c
}

func (t *T) lcCheckpoint(qn, id string, token int64, data string) {
	t.ok(t.D.Checkpoint(t.ctx, protocol.CheckpointArgs{FenceArgs: fa(qn, id, token), DataB64: b64(data)}), rules.Checkpoint, "checkpoint")
}

func (t *T) lcRetry(qn, id string, token, max, delay int64, why string, rule rules.Rule) string {
	r, err := t.D.Retry(t.ctx, protocol.RetryArgs{FenceArgs: fa(qn, id, token), MaxAttempts: max, DelayMS: delay, Error: why})
	t.ok(err, rule, "retry")
	return r.Outcome
}

func (t *T) lcPromote(qn string, limit int64) int64 {
	p, err := t.D.Promote(t.ctx, protocol.PromoteArgs{Queue: qn, Limit: limit})
	t.ok(err, rules.Promote, "promote")
	return p.Count
}

func (t *T) lcReap(qn string, max, limit int64) int64 {
	r, err := t.D.Reap(t.ctx, protocol.ReapArgs{Queue: qn, MaxAttempts: max, Limit: limit})
	t.ok(err, rules.Reap, "reap")
	return r.Count
}

func (t *T) lcMorgue(qn string, limit int64) []protocol.DeadJob {
	m, err := t.D.Morgue(t.ctx, protocol.MorgueArgs{Queue: qn, Limit: limit})
	t.ok(err, rules.Morgue, "morgue")
	return m.Jobs
}

// lcDeadJob is the morgue entry the keyspace implies for id.
func (t *T) lcDeadJob(qn, id string, attempts int64, payload, why string) protocol.DeadJob {
	died, _ := t.zscore(t.q(qn).Dead(), id)
	return protocol.DeadJob{ID: id, Attempts: attempts, PayloadB64: b64(payload), Error: why, DiedMS: died}
}

// lcUnchanged runs op and checks that the keyspace is exactly as before.
func (t *T) lcUnchanged(rule rules.Rule, what string, op func()) {
	before := t.snapshot()
	op()
	d := diff(before, t.snapshot())
	t.check(d == "", rule, what+": nothing changes", "%s", d)
}

// lcB64Field renders an optional *_b64 field as the JSON would show it.
func lcB64Field(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// stateZset is the zset that holds a job in state (scheduled, active, dead) by its score.
func stateZset(q keys.Q, state string) string {
	return map[string]string{"scheduled": q.Scheduled(), "active": q.Active(), "dead": q.Dead()}[state]
}

// lcPlant writes n plain rows straight into the keyspace from the harness's own connection
// (never the port's): state and attempts, each id in the state's zset at from+i, a last error
// for dead ones. It builds the bulk a default limit needs without n round trips through the port.
func (t *T) lcPlant(qn, state string, attempts, from int64, n int, payload func(i int) string) []string {
	q := t.q(qn)
	zkey := stateZset(q, state)
	ids := kitIDs(n, 1<<41)
	var cmds [][]any
	for i, id := range ids {
		cmds = append(cmds, []any{"HSET", jobKey(q, id), "state", state, "attempts", attempts, "payload", payload(i)},
			[]any{"ZADD", zkey, from + int64(i), id})
		if state == "dead" {
			cmds = append(cmds, []any{"HSET", q.Errors(), id, fmt.Sprintf("error %d", i)})
		}
	}
	vs, err := t.admin.pipeline(t.ctx, cmds...)
	if err != nil {
		t.harness("plant %d %s rows: %v", n, state, err)
	}
	for _, v := range vs {
		if e := v.Err(); e != nil {
			t.harness("plant %d %s rows: %v", n, state, e)
		}
	}
	return ids
}

// lcZcard is the number of members of a zset.
func (t *T) lcZcard(key string) int64 {
	_, n, _ := t.do("ZCARD", key)
	return n
}

// plantNowScript writes one plain row and puts its id in a zset at the server's TIME plus ARGV[4]
// ms, in one step, so that the port's next script reads a TIME equal to the score as often as the
// clock allows (the boundary of "due ≤ TIME" and "lease ≤ TIME"), or a known span before it.
const plantNowScript = `local t = redis.call('TIME')
local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'attempts', ARGV[3], 'payload', 'p')
redis.call('ZADD', KEYS[2], at, ARGV[1])
return at`

// lcPlantAfter plants id in state at score TIME+after (harness connection) and returns that score.
func (t *T) lcPlantAfter(qn, state, id string, attempts, after int64) int64 {
	q := t.q(qn)
	zkey := stateZset(q, state)
	v, err := t.admin.do(t.ctx, "EVAL", plantNowScript, "2", jobKey(q, id), zkey, id, state, attempts, after)
	if err != nil {
		t.harness("plant %s at TIME+%d: %v", id, after, err)
	}
	return v.Int
}

// boundaryHits is how many times the port's script must read TIME in the very millisecond the
// clause planted as a deadline or a due time (A2: a deadline equal to TIME has passed; a job due
// at TIME is due): once shows a port comparing with < instead of ≤, twice leaves no doubt that one
// landing was placed right. boundaryTries bounds the trials that takes.
const (
	boundaryHits  = 2
	boundaryTries = 60
)

// holdScript keeps the server busy for ARGV[1] turns of an empty loop (no command, so nothing
// reaches MONITOR); KEYS[1] only routes it to the queue's server. A script reads the TIME of its
// own start, so the row is planted by the scripts the server runs right after it from the same
// connection (clearScript, then plantNowScript): a request the port sent meanwhile waits in its
// socket and runs next, in the planted millisecond as a rule, however long the port took to
// send it.
const holdScript = `for _ = 1, tonumber(ARGV[1]) do end
return 1`

// clearScript takes ARGV[1] out of every state's zset (KEYS[2..5]), its error and checkpoint out
// of their hashes (KEYS[6..7]) and deletes its row (KEYS[1]), whatever the port did to it last.
const clearScript = `for i = 2, 5 do redis.call('ZREM', KEYS[i], ARGV[1]) end
redis.call('HDEL', KEYS[6], ARGV[1])
redis.call('HDEL', KEYS[7], ARGV[1])
return redis.call('DEL', KEYS[1])`

// atTime is a clause's trial at the boundary of a comparison with the server's TIME: the hold
// plants id in state's zset at TIME (attempts as given), and the port's op, sent while the
// server is held, runs right after. mark is what the op's script line carries (the id, or the
// key a scan reads), so MONITOR tells which line was the op. run sends the op and returns its
// judgment, called with the planted score and whether the op ran in that millisecond.
type atTime struct {
	qn, id, state string
	attempts      int64
	mark, op      string
	rule          rules.Rule
	run           func() (judge func(at int64, why string))
}

// The hold's turns: from about 2.5 ms of the server's time to about 150 ms (quiet machine). A
// miss is an op that came after the hold, or a server taken off its CPU between the plant and
// the op; a long hold makes the second likelier on a busy machine (the scheduler owes the other
// processes the time the loop took), so the hold doubles on a miss and starts again from the
// shortest past the longest instead of staying there. However many turns, a hold that kept the
// harness waiting longer than holdWall halves (down to floorHold): on a loaded machine a long
// hold is seconds of a silent server, which a port may take for a lost connection (no document
// sets how long a port waits on a silent server before it gives up).
const (
	minHold   = int64(1 << 19)
	maxHold   = int64(1 << 25)
	floorHold = int64(1 << 14)
	holdWall  = 250 * time.Millisecond
)

// lcAtTime runs a's trials: a port comparing with < instead of ≤ goes wrong only when its script
// reads TIME in the planted millisecond, so the trials go on, the hold changing after every miss,
// until MONITOR shows boundaryHits that did. Every trial whose op ran after the plant is judged.
// A port that never gets there has not been shown the situation: a harness error.
func (t *T) lcAtTime(a atTime) {
	q := t.q(a.qn)
	zkey := stateZset(q, a.state)
	keys := []any{jobKey(q, a.id), q.Active(), q.Pending(), q.Scheduled(), q.Dead(), q.Errors(), q.Ckpt()}
	spins := minHold
	hits := 0
	for n := 1; n <= boundaryTries && hits < boundaryHits; n++ {
		from := t.mon.Len()
		type plant struct {
			vs   []resp.Value
			err  error
			took time.Duration
		}
		planted := make(chan plant, 1)
		go func() {
			// t.admin: nothing else uses it until the hold has ended.
			start := time.Now()
			vs, err := t.admin.pipeline(t.ctx, []any{"EVAL", holdScript, 1, q.Meta(), spins},
				append(append([]any{"EVAL", clearScript, len(keys)}, keys...), a.id),
				[]any{"EVAL", plantNowScript, 2, jobKey(q, a.id), zkey, a.id, a.state, a.attempts, 0})
			planted <- plant{vs, err, time.Since(start)}
		}()
		time.Sleep(time.Millisecond) // the hold reaches the server first as a rule; MONITOR says
		judge := a.run()
		p := <-planted
		for _, v := range p.vs {
			if p.err == nil && v.Type == resp.ErrorReply {
				p.err = fmt.Errorf("%s", v.Str)
			}
		}
		if p.err != nil || len(p.vs) != 3 {
			t.harness("hold the server and plant %s: %v (%d replies)", a.id, p.err, len(p.vs))
		}
		at := p.vs[2].Int
		ran, ok := t.ranAfterHold(from, a.mark)
		hit := ok && ran == at
		switch {
		case p.took > holdWall:
			spins = max(spins/2, floorHold)
		case ok && !hit:
			if spins *= 2; spins > maxHold {
				spins = minHold
			}
		}
		if !ok { // the op ran before the hold: it met the last trial's state, and proves nothing
			continue
		}
		why := fmt.Sprintf("before the op's millisecond (trial %d)", n)
		if hit {
			why, hits = fmt.Sprintf("the server's TIME when the op ran (trial %d)", n), hits+1
		}
		judge(at, why)
	}
	if hits < boundaryHits {
		t.harness("%s (%s): in %d trials the port's script read TIME in the planted millisecond %d times, fewer than %d",
			a.op, a.rule, boundaryTries, hits, boundaryHits)
	}
}

// lcLeaseEndingUnder has the port run op (run) on id, holding token, while the server is held
// busy; the hold ends by setting the lease's deadline to the server's TIME, so the op, queued
// behind it, meets a lease that has just passed and must be refused EMQSTALE.
func (t *T) lcLeaseEndingUnder(qn, id string, token int64, op string, run func() error) {
	t.lcAtTime(atTime{qn: qn, id: id, state: "active", attempts: token, mark: id, op: op, rule: rules.FencedLease,
		run: func() func(int64, string) {
			err := run()
			return func(at int64, why string) {
				t.refused(err, emqerr.Stale, rules.FencedLease,
					fmt.Sprintf("%s with the live token on a lease whose deadline %d is %s", op, at, why))
			}
		}})
}

// ranAfterHold is the server's millisecond in which the port's last script carrying mark after
// the harness's plant (plantNowScript) started, which is the TIME the script reads (a script
// reads the TIME of its start; MONITOR shows a script's line as it starts). The last: a script
// refused NOSCRIPT is sent again once loaded, and only that one ran.
func (t *T) ranAfterHold(from int, mark string) (int64, bool) {
	t.sync()
	held, ran := false, int64(-1)
	for _, l := range t.mon.Snapshot()[from:] {
		switch {
		case l.Client == "lua":
		case l.Cmd() == "EVAL" && l.Arg(1) == plantNowScript:
			held, ran = true, -1
		case held && !t.isOwn(l) && strings.HasPrefix(l.Cmd(), "EVAL") &&
			slices.ContainsFunc(l.Args, func(a string) bool { return strings.Contains(a, mark) }):
			ran = l.At / 1000
		}
	}
	return ran, ran >= 0
}

// lcExpire shortens a held lease to 1 ms (extend) and waits until it has passed on the server's
// clock: the clause can act under a long lease first (checkpoint) however slow the machine.
func (t *T) lcExpire(qn, id string, token int64) {
	e, err := t.D.Extend(t.ctx, protocol.ExtendArgs{FenceArgs: fa(qn, id, token), LeaseMS: 1})
	t.ok(err, rules.Extend, "extend")
	t.waitPast(e.DeadlineMS)
}
