package contracts

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/internal/model"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
)

// wop is a walk op (model.Op): abstract enough to be replayed on a fresh queue.
type wop = model.Op

// walkRule is the rule an op's step evaluates: a divergence at that step breaks it.
func walkRule(kind string) Rule {
	if r, ok := walkRules[kind]; ok {
		return r
	}
	return ruleWalkModel
}

var walkRules = map[string]Rule{"enqueue": ruleEnqueue, "claim": ruleClaim, "lane_claim": ruleLanes, "lane_pause": ruleLanes,
	"lane_resume": ruleLanes, "extend": ruleExtend, "complete": ruleComplete, "retry": ruleRetry, "fail": ruleFail,
	"checkpoint": ruleCheckpoint, "reap": ruleReap, "promote": rulePromote, "morgue": ruleMorgue, "purge": ruleMorgue,
	"revive": ruleWalkRevive, "pause": ruleQueuePause, "resume": ruleQueuePause, "lane_ceiling": ruleCeiling}

// walkFailure is where a run left the model.
type walkFailure struct {
	step          int
	rule          Rule
	expected, got string
}

// walkSession is what outlives one run on the port's session: its minter's last id.
type walkSession struct {
	lastMinted string
	queues     int
}

// walker runs one sequence of ops on a fresh queue, the model beside it.
type walker struct {
	t    *T
	s    *walkSession
	q    string
	m    *model.Model
	ids  []string
	done []wop
	last string // the job claimed last: a worker settles what it just claimed
	hi   int64  // server TIME after the last step
}

func (t *T) newWalker(s *walkSession) *walker {
	s.queues++
	q := fmt.Sprintf("walk.%d", s.queues)
	return &walker{t: t, s: s, q: q, m: model.New(t.q(q))}
}

// givenID is the kit's n-th given id: odd ones sort before any minted id, even ones after.
func givenID(n int) string {
	if n%2 == 1 {
		return jobID(1<<40 + uint64(n))
	}
	return jobID(1<<62 + uint64(n))
}

func (w *walker) fa(o wop) (protocol.FenceArgs, string, bool) {
	if o.Job >= len(w.ids) {
		return protocol.FenceArgs{}, "", false
	}
	id := w.ids[o.Job]
	tok := o.Tok
	if j := w.m.Jobs[id]; j != nil {
		tok += j.Attempts
	}
	return protocol.FenceArgs{Queue: w.q, ID: id, Token: max(tok, 1)}, id, true
}

// answer renders a port's error the way the model renders its refusals.
func answer(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, emqerr.Stale):
		return "EMQSTALE"
	default:
		return "error: " + err.Error()
	}
}

func portClaim(c *protocol.ClaimResult) *model.Claim {
	if c == nil {
		return nil
	}
	r := &model.Claim{ID: c.ID, Payload: unb64(c.PayloadB64), Token: c.Token, Lane: c.Lane}
	if c.CheckpointB64 != nil {
		s := unb64(*c.CheckpointB64)
		r.Ckpt = &s
	}
	return r
}

// call runs op on the port and renders its reply; apply runs it on a model at decision time
// cut and renders the reply the canon demands. Minted ids are learnt from the port's reply.
func (w *walker) call(o wop) (got string, id string, skip bool, fail *walkFailure) {
	t, ctx := w.t, w.t.ctx
	switch o.Kind {
	case "enqueue":
		return w.callEnqueue(o)
	case "claim", "lane_claim":
		f := t.D.Claim
		if o.Kind == "lane_claim" {
			f = t.D.LaneClaim
		}
		c, err := f(ctx, protocol.ClaimArgs{Queue: w.q, LeaseMS: o.Lease})
		if err != nil {
			return answer(err), "", false, nil
		}
		return model.RenderClaim(portClaim(c)), "", false, nil
	case "extend", "complete", "retry", "fail", "checkpoint":
		return w.callFenced(o)
	case "reap":
		r, err := t.D.Reap(ctx, protocol.ReapArgs{Queue: w.q, MaxAttempts: o.Max})
		if err != nil {
			return answer(err), "", false, nil
		}
		return fmt.Sprintf("count %d", r.Count), "", false, nil
	case "promote":
		r, err := t.D.Promote(ctx, protocol.PromoteArgs{Queue: w.q})
		if err != nil {
			return answer(err), "", false, nil
		}
		return fmt.Sprintf("count %d", r.Count), "", false, nil
	case "morgue":
		r, err := t.D.Morgue(ctx, protocol.MorgueArgs{Queue: w.q, Limit: o.N})
		if err != nil {
			return answer(err), "", false, nil
		}
		var js []model.Dead
		for _, j := range r.Jobs {
			js = append(js, model.Dead{ID: j.ID, Payload: unb64(j.PayloadB64), Err: j.Error, Attempts: j.Attempts, Died: model.Span{Lo: j.DiedMS, Hi: j.DiedMS}})
		}
		return model.RenderMorgue(js), "", false, nil
	case "revive", "purge":
		if o.Job >= len(w.ids) {
			return "", "", true, nil
		}
		f := t.D.Revive
		if o.Kind == "purge" {
			f = t.D.Purge
		}
		r, err := f(ctx, protocol.JobArgs{Queue: w.q, ID: w.ids[o.Job]})
		if err != nil {
			return answer(err), "", false, nil
		}
		return fmt.Sprintf("changed %v", r.Changed), w.ids[o.Job], false, nil
	case "pause":
		return answer(t.D.Pause(ctx, protocol.QueueArgs{Queue: w.q})), "", false, nil
	case "resume":
		return answer(t.D.Resume(ctx, protocol.QueueArgs{Queue: w.q})), "", false, nil
	case "lane_pause":
		return answer(t.D.LanePause(ctx, protocol.QueueArgs{Queue: w.q, Lane: o.Lane})), "", false, nil
	case "lane_resume":
		return answer(t.D.LaneResume(ctx, protocol.QueueArgs{Queue: w.q, Lane: o.Lane})), "", false, nil
	case "lane_ceiling":
		return answer(t.D.LaneCeiling(ctx, protocol.QueueArgs{Queue: w.q, Lane: o.Lane, Ceiling: o.N})), "", false, nil
	case "wait":
		t.waitPast(t.now() + o.N)
		return "ok", "", false, nil
	case "drain":
		// a parked consumer's pop, done by the harness: the next arming duty must show
		t.do("LPOP", t.q(w.q).Wake())
		return "ok", "", false, nil
	}
	panic("walk: unknown op " + o.Kind)
}

// callEnqueue runs an enqueue op: a minted id must be a valid JOB id above every id minted
// before, a given one must come back as given.
func (w *walker) callEnqueue(o wop) (got string, id string, skip bool, fail *walkFailure) {
	t, ctx := w.t, w.t.ctx
	a := protocol.EnqueueArgs{Queue: w.q, PayloadB64: b64(o.Data), DelayMS: o.Delay, Lane: o.Lane}
	switch {
	case o.Given > 0:
		a.ID = givenID(o.Given)
	case o.Given < 0:
		if o.Job >= len(w.ids) {
			return "", "", true, nil
		}
		a.ID = w.ids[o.Job]
	}
	r, err := t.D.Enqueue(ctx, a)
	if err != nil {
		return answer(err), "", false, nil
	}
	if a.ID == "" {
		if _, perr := ids.ParseJob(r.ID); perr != nil || len(r.ID) != 14 {
			return "", "", false, &walkFailure{rule: ruleIDs, expected: "a minted 14-byte JOB id", got: fmt.Sprintf("%q (%v)", r.ID, perr)}
		}
		if r.ID <= w.s.lastMinted {
			return "", "", false, &walkFailure{rule: ruleMintOrder, expected: "a minted id above every id the minter minted before (" + w.s.lastMinted + ")", got: r.ID}
		}
		w.s.lastMinted = r.ID
		a.ID = r.ID
	} else if r.ID != a.ID {
		return "", "", false, &walkFailure{rule: ruleEnqueue, expected: "enqueue answers the given id " + a.ID, got: r.ID}
	}
	return fmt.Sprintf("created %v", r.Created), a.ID, false, nil
}

// callFenced runs an op that names a job and its token.
func (w *walker) callFenced(o wop) (got string, id string, skip bool, fail *walkFailure) {
	t, ctx := w.t, w.t.ctx
	f, id, ok := w.fa(o)
	if !ok {
		return "", "", true, nil
	}
	switch o.Kind {
	case "extend":
		r, err := t.D.Extend(ctx, protocol.ExtendArgs{FenceArgs: f, LeaseMS: o.Lease})
		if err != nil {
			return answer(err), id, false, nil
		}
		return fmt.Sprintf("deadline %d", r.DeadlineMS), id, false, nil
	case "complete":
		return answer(t.D.Complete(ctx, f)), id, false, nil
	case "retry":
		r, err := t.D.Retry(ctx, protocol.RetryArgs{FenceArgs: f, MaxAttempts: o.Max, DelayMS: o.Delay, Error: o.Text})
		if err != nil {
			return answer(err), id, false, nil
		}
		return r.Outcome, id, false, nil
	case "fail":
		return answer(t.D.Fail(ctx, protocol.FailArgs{FenceArgs: f, Error: o.Text})), id, false, nil
	default:
		return answer(t.D.Checkpoint(ctx, protocol.CheckpointArgs{FenceArgs: f, DataB64: b64(o.Data)})), id, false, nil
	}
}

// step runs one op on the port and checks its reply and the queue's keyspace against the
// model, trying every decision time the TIME window leaves open.
func (w *walker) step(o wop) *walkFailure {
	t := w.t
	lo := t.now()
	got, id, skip, f := w.call(o)
	if f != nil || skip {
		return f
	}
	hi := t.now()
	w.hi = hi
	actual := t.walkKeyspace(w.m.Q.Prefix())
	if o.Kind == "extend" && strings.HasPrefix(got, "deadline ") {
		var d int64
		fmt.Sscanf(got, "deadline %d", &d)
		if s, ok := actual[w.m.Q.Prefix()+"active"].Zset[id]; !ok || s.Lo != d || !(model.Span{Lo: lo, Hi: hi}).Plus(o.Lease).Has(d) {
			return &walkFailure{rule: ruleExtend, expected: fmt.Sprintf("deadline_ms = TIME + %d within [%d, %d], the score in active", o.Lease, lo+o.Lease, hi+o.Lease),
				got: fmt.Sprintf("deadline %d, active score %v", d, s.Lo)}
		}
		got = "extend"
	}
	var first *walkFailure
	for _, cut := range w.m.Cuts(lo, hi) {
		m := w.m.Clone()
		want := m.Apply(o, id, cut, model.Span{Lo: lo, Hi: hi})
		rule := walkRule(o.Kind)
		if want == "EMQSTALE" || got == "EMQSTALE" {
			rule = ruleFenced
		}
		var fl *walkFailure
		if want != got {
			fl = &walkFailure{rule: rule, expected: "reply " + want, got: "reply " + got}
		} else if d := model.KeyspaceDiff(m.Keyspace(), actual); d != "" {
			fl = &walkFailure{rule: rule, expected: "the queue's keyspace as the state table leaves it", got: d}
		}
		if fl == nil {
			m.Adopt(actual)
			w.m = m
			if c := portClaimID(got); c != "" {
				w.last = c
			}
			if o.Kind == "enqueue" && !slices.Contains(w.ids, id) {
				w.ids = append(w.ids, id)
			}
			return nil
		}
		if first == nil {
			first = fl
		}
	}
	return first
}

// walkKeyspace reads every key under prefix with exact scores.
func (t *T) walkKeyspace(prefix string) map[string]model.Val {
	ks := t.keysUnder(prefix)
	types, vals := t.readKeys(ks)
	out := make(map[string]model.Val, len(ks))
	for i, k := range ks {
		v, r := model.Val{Typ: types[i]}, vals[i]
		switch v.Typ {
		case "hash":
			v.Hash = map[string]string{}
			for j := 0; j+1 < len(r.Elems); j += 2 {
				v.Hash[string(r.Elems[j].Str)] = string(r.Elems[j+1].Str)
			}
		case "zset":
			v.Zset = map[string]model.Span{}
			for j := 0; j+1 < len(r.Elems); j += 2 {
				f, _ := strconv.ParseFloat(string(r.Elems[j+1].Str), 64)
				v.Zset[string(r.Elems[j].Str)] = model.Span{Lo: int64(f), Hi: int64(f)}
			}
		case "list":
			for _, e := range r.Elems {
				v.List = append(v.List, string(e.Str))
			}
		case "string":
			v.List = []string{r.Text()}
		}
		out[k] = v
	}
	return out
}

// keysUnder lists the keys that start with prefix (a queue's: no glob characters in it).
func (t *T) keysUnder(prefix string) []string {
	out, err := t.admin.scan(t.ctx, prefix+"*")
	if err != nil {
		t.harness("%v", err)
	}
	return out
}

// runWalk plays ops from next on a fresh queue until next runs out or the model and the port part.
func (t *T) runWalk(s *walkSession, next func(w *walker) (wop, bool)) ([]wop, *walkFailure) {
	w := t.newWalker(s)
	for {
		o, ok := next(w)
		if !ok {
			return w.done, nil
		}
		w.done = append(w.done, o)
		if f := w.step(o); f != nil {
			f.step = len(w.done)
			return w.done, f
		}
	}
}

func (t *T) replay(s *walkSession, ops []wop) *walkFailure {
	i := 0
	_, f := t.runWalk(s, func(*walker) (wop, bool) {
		if i == len(ops) {
			return wop{}, false
		}
		i++
		return ops[i-1], true
	})
	return f
}

// shrink removes ops from a failing sequence while it still fails (delta debugging, greedy),
// within a time budget: the report shows the shortest sequence found.
func (t *T) shrink(s *walkSession, ops []wop, f *walkFailure) ([]wop, *walkFailure) {
	deadline := time.Now().Add(12 * time.Second)
	for n := len(ops) / 2; n >= 1; n /= 2 {
		for i := 0; i+n <= len(ops) && time.Now().Before(deadline); {
			cand := slices.Concat(ops[:i], ops[i+n:])
			if g := t.replay(s, cand); g != nil {
				ops, f = cand[:g.step], g
				continue
			}
			i += n
		}
	}
	return ops, f
}

// walkSpec says what one walk clause explores.
type walkSpec struct {
	seed  int64 // the default seed of its first run
	runs  int
	steps int
	mix   model.Mix
	rules []Rule
}

func (ws walkSpec) body(t *T) {
	t.cover(ws.rules...)
	base := ws.seed
	if t.cfg.Seed != 0 {
		base = t.cfg.Seed
	}
	s := &walkSession{}
	for i := 0; i < ws.runs; i++ {
		seed := base + int64(i)
		r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		n := 0
		ops, f := t.runWalk(s, func(w *walker) (wop, bool) {
			if n == ws.steps {
				return wop{}, false
			}
			n++
			return ws.mix.Next(r, model.Position{Model: w.m, IDs: w.ids, Last: w.last, Hi: w.hi}), true
		})
		if f == nil {
			continue
		}
		ops, f = t.shrink(s, ops, f)
		var b strings.Builder
		fmt.Fprintf(&b, "%s\n  at step %d of the shortest failing sequence (seed %d; replay with emq-conform -seed %d):", f.got, f.step, seed, seed)
		for k, o := range ops {
			fmt.Fprintf(&b, "\n  %2d. %s", k+1, o)
		}
		t.fail(f.rule, f.expected, b.String())
	}
}

// portClaimID is the id of a rendered claim reply, "" for anything else.
func portClaimID(reply string) string {
	if id, ok := strings.CutPrefix(reply, "{id "); ok && len(id) > 14 {
		return id[:14]
	}
	return ""
}
