// Package walk is the model-checked walk: seeded sequences of ops played on a port and on the
// model of one queue (contracts/internal/model) side by side, each step's reply and the queue's
// whole keyspace held to the state table at every decision time the server's clock leaves open,
// and a divergence shrunk to the shortest sequence that still fails. The contracts run it as a
// clause (contracts/walk.go) over the clause's port session and its World.
package walk

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/internal/model"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// wop is a walk op (model.Op): abstract enough to be replayed on a fresh queue.
type wop = model.Op

// World is what a walk needs of the clause's world besides the port session: the server's
// clock, a pop from the harness's own connection, and a queue's keyspace read with exact
// scores. A harness failure ends the clause inside these calls.
type World interface {
	Now() int64
	WaitPast(deadline int64)
	Pop(key string)
	Keyspace(prefix string) map[string]model.Val
}

// Spec says what one walk clause explores.
type Spec struct {
	Seed  int64 // the default seed of its first run
	Runs  int
	Steps int
	Mix   model.Mix
	Rules []rules.Rule // the rules it evaluates
}

// walkRule is the rule an op's step evaluates: a divergence at that step breaks it.
func walkRule(kind string) rules.Rule {
	if r, ok := walkRules[kind]; ok {
		return r
	}
	return rules.WalkModel
}

var walkRules = map[string]rules.Rule{"enqueue": rules.Enqueue, "claim": rules.Claim, "lane_claim": rules.Lanes, "lane_pause": rules.Lanes,
	"lane_resume": rules.Lanes, "extend": rules.Extend, "complete": rules.Complete, "retry": rules.Retry, "fail": rules.Fail,
	"checkpoint": rules.Checkpoint, "reap": rules.Reap, "promote": rules.Promote, "morgue": rules.Morgue, "purge": rules.Morgue,
	"revive": rules.WalkRevive, "pause": rules.QueuePause, "resume": rules.QueuePause, "lane_ceiling": rules.Ceiling}

// Failure is where a run left the model: the rule it breaks, what the state table expected and
// what the port did (Run adds the shortest failing sequence).
type Failure struct {
	step          int
	Rule          rules.Rule
	Expected, Got string
}

// walkSession is what outlives one run on the port's session: its minter's last id.
type walkSession struct {
	lastMinted string
	queues     int
}

// walker runs one sequence of ops on a fresh queue, the model beside it.
type walker struct {
	ctx  context.Context
	d    drivers.Driver
	w    World
	s    *walkSession
	q    string
	m    *model.Model
	ids  []string
	done []wop
	last string // the job claimed last: a worker settles what it just claimed
	hi   int64  // server TIME after the last step
}

func (r *runner) newWalker(s *walkSession) *walker {
	s.queues++
	q := fmt.Sprintf("walk.%d", s.queues)
	kq, err := keys.Queue(q)
	if err != nil {
		panic(err) // walk.<n> is a valid name: a harness error, should it ever happen
	}
	return &walker{ctx: r.ctx, d: r.d, w: r.w, s: s, q: q, m: model.New(kq)}
}

// givenID is the kit's n-th given id: odd ones sort before any minted id, even ones after.
func givenID(n int) string {
	if n%2 == 1 {
		return ids.Encode(ids.BrandJob, 1<<40+uint64(n))
	}
	return ids.Encode(ids.BrandJob, 1<<62+uint64(n))
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
	r := &model.Claim{ID: c.ID, Payload: text(c.PayloadB64), Token: c.Token, Lane: c.Lane}
	if c.CheckpointB64 != nil {
		s := text(*c.CheckpointB64)
		r.Ckpt = &s
	}
	return r
}

// call runs op on the port and renders its reply; apply runs it on a model at decision time
// cut and renders the reply the canon demands. Minted ids are learnt from the port's reply.
func (w *walker) call(o wop) (got string, id string, skip bool, fail *Failure) {
	ctx := w.ctx
	switch o.Kind {
	case "enqueue":
		return w.callEnqueue(o)
	case "claim", "lane_claim":
		f := w.d.Claim
		if o.Kind == "lane_claim" {
			f = w.d.LaneClaim
		}
		c, err := f(ctx, protocol.ClaimArgs{Queue: w.q, LeaseMS: o.Lease})
		if err != nil {
			return answer(err), "", false, nil
		}
		return model.RenderClaim(portClaim(c)), "", false, nil
	case "extend", "complete", "retry", "fail", "checkpoint":
		return w.callFenced(o)
	case "reap":
		r, err := w.d.Reap(ctx, protocol.ReapArgs{Queue: w.q, MaxAttempts: o.Max})
		if err != nil {
			return answer(err), "", false, nil
		}
		return fmt.Sprintf("count %d", r.Count), "", false, nil
	case "promote":
		r, err := w.d.Promote(ctx, protocol.PromoteArgs{Queue: w.q})
		if err != nil {
			return answer(err), "", false, nil
		}
		return fmt.Sprintf("count %d", r.Count), "", false, nil
	case "morgue":
		r, err := w.d.Morgue(ctx, protocol.MorgueArgs{Queue: w.q, Limit: o.N})
		if err != nil {
			return answer(err), "", false, nil
		}
		var js []model.Dead
		for _, j := range r.Jobs {
			js = append(js, model.Dead{ID: j.ID, Payload: text(j.PayloadB64), Err: j.Error, Attempts: j.Attempts, Died: model.Span{Lo: j.DiedMS, Hi: j.DiedMS}})
		}
		return model.RenderMorgue(js), "", false, nil
	case "revive", "purge":
		if o.Job >= len(w.ids) {
			return "", "", true, nil
		}
		f := w.d.Revive
		if o.Kind == "purge" {
			f = w.d.Purge
		}
		r, err := f(ctx, protocol.JobArgs{Queue: w.q, ID: w.ids[o.Job]})
		if err != nil {
			return answer(err), "", false, nil
		}
		return fmt.Sprintf("changed %v", r.Changed), w.ids[o.Job], false, nil
	case "pause":
		return answer(w.d.Pause(ctx, protocol.QueueArgs{Queue: w.q})), "", false, nil
	case "resume":
		return answer(w.d.Resume(ctx, protocol.QueueArgs{Queue: w.q})), "", false, nil
	case "lane_pause":
		return answer(w.d.LanePause(ctx, protocol.QueueArgs{Queue: w.q, Lane: o.Lane})), "", false, nil
	case "lane_resume":
		return answer(w.d.LaneResume(ctx, protocol.QueueArgs{Queue: w.q, Lane: o.Lane})), "", false, nil
	case "lane_ceiling":
		return answer(w.d.LaneCeiling(ctx, protocol.QueueArgs{Queue: w.q, Lane: o.Lane, Ceiling: o.N})), "", false, nil
	case "wait":
		w.w.WaitPast(w.w.Now() + o.N)
		return "ok", "", false, nil
	case "drain":
		// a parked consumer's pop, done by the harness: the next arming duty must show
		w.w.Pop(w.m.Q.Wake())
		return "ok", "", false, nil
	}
	panic("walk: unknown op " + o.Kind)
}

// callEnqueue runs an enqueue op: a minted id must be a valid JOB id above every id minted
// before, a given one must come back as given.
func (w *walker) callEnqueue(o wop) (got string, id string, skip bool, fail *Failure) {
	ctx := w.ctx
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
	r, err := w.d.Enqueue(ctx, a)
	if err != nil {
		return answer(err), "", false, nil
	}
	if a.ID == "" {
		if _, perr := ids.ParseJob(r.ID); perr != nil || len(r.ID) != 14 {
			return "", "", false, &Failure{Rule: rules.IDs, Expected: "a minted 14-byte JOB id", Got: fmt.Sprintf("%q (%v)", r.ID, perr)}
		}
		if r.ID <= w.s.lastMinted {
			return "", "", false, &Failure{Rule: rules.MintOrder, Expected: "a minted id above every id the minter minted before (" + w.s.lastMinted + ")", Got: r.ID}
		}
		w.s.lastMinted = r.ID
		a.ID = r.ID
	} else if r.ID != a.ID {
		return "", "", false, &Failure{Rule: rules.Enqueue, Expected: "enqueue answers the given id " + a.ID, Got: r.ID}
	}
	return fmt.Sprintf("created %v", r.Created), a.ID, false, nil
}

// callFenced runs an op that names a job and its token.
func (w *walker) callFenced(o wop) (got string, id string, skip bool, fail *Failure) {
	ctx := w.ctx
	f, id, ok := w.fa(o)
	if !ok {
		return "", "", true, nil
	}
	switch o.Kind {
	case "extend":
		r, err := w.d.Extend(ctx, protocol.ExtendArgs{FenceArgs: f, LeaseMS: o.Lease})
		if err != nil {
			return answer(err), id, false, nil
		}
		return fmt.Sprintf("deadline %d", r.DeadlineMS), id, false, nil
	case "complete":
		return answer(w.d.Complete(ctx, f)), id, false, nil
	case "retry":
		r, err := w.d.Retry(ctx, protocol.RetryArgs{FenceArgs: f, MaxAttempts: o.Max, DelayMS: o.Delay, Error: o.Text})
		if err != nil {
			return answer(err), id, false, nil
		}
		return r.Outcome, id, false, nil
	case "fail":
		return answer(w.d.Fail(ctx, protocol.FailArgs{FenceArgs: f, Error: o.Text})), id, false, nil
	default:
		return answer(w.d.Checkpoint(ctx, protocol.CheckpointArgs{FenceArgs: f, DataB64: b64(o.Data)})), id, false, nil
	}
}

// step runs one op on the port and checks its reply and the queue's keyspace against the
// model, trying every decision time the TIME window leaves open.
func (w *walker) step(o wop) *Failure {
	lo := w.w.Now()
	got, id, skip, f := w.call(o)
	if f != nil || skip {
		return f
	}
	hi := w.w.Now()
	w.hi = hi
	actual := w.w.Keyspace(w.m.Q.Prefix())
	if o.Kind == "extend" && strings.HasPrefix(got, "deadline ") {
		var d int64
		fmt.Sscanf(got, "deadline %d", &d)
		if s, ok := actual[w.m.Q.Prefix()+"active"].Zset[id]; !ok || s.Lo != d || !(model.Span{Lo: lo, Hi: hi}).Plus(o.Lease).Has(d) {
			return &Failure{Rule: rules.Extend, Expected: fmt.Sprintf("deadline_ms = TIME + %d within [%d, %d], the score in active", o.Lease, lo+o.Lease, hi+o.Lease),
				Got: fmt.Sprintf("deadline %d, active score %v", d, s.Lo)}
		}
		got = "extend"
	}
	var first *Failure
	for _, cut := range w.m.Cuts(lo, hi) {
		m := w.m.Clone()
		want := m.Apply(o, id, cut, model.Span{Lo: lo, Hi: hi})
		rule := walkRule(o.Kind)
		if want == "EMQSTALE" || got == "EMQSTALE" {
			rule = rules.Fenced
		}
		var fl *Failure
		if want != got {
			fl = &Failure{Rule: rule, Expected: "reply " + want, Got: "reply " + got}
		} else if d := model.KeyspaceDiff(m.Keyspace(), actual); d != "" {
			fl = &Failure{Rule: rule, Expected: "the queue's keyspace as the state table leaves it", Got: d}
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

// runWalk plays ops from next on a fresh queue until next runs out or the model and the port part.
func (r *runner) runWalk(s *walkSession, next func(w *walker) (wop, bool)) ([]wop, *Failure) {
	w := r.newWalker(s)
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

func (r *runner) replay(s *walkSession, ops []wop) *Failure {
	i := 0
	_, f := r.runWalk(s, func(*walker) (wop, bool) {
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
func (r *runner) shrink(s *walkSession, ops []wop, f *Failure) ([]wop, *Failure) {
	deadline := time.Now().Add(12 * time.Second)
	for n := len(ops) / 2; n >= 1; n /= 2 {
		for i := 0; i+n <= len(ops) && time.Now().Before(deadline); {
			cand := slices.Concat(ops[:i], ops[i+n:])
			if g := r.replay(s, cand); g != nil {
				ops, f = cand[:g.step], g
				continue
			}
			i += n
		}
	}
	return ops, f
}

// runner plays a walk's runs on one port session.
type runner struct {
	ctx context.Context
	d   drivers.Driver
	w   World
}

// Run plays spec's runs on the port session d, from seed (0: the spec's own), and returns the
// first divergence, shrunk, with the shortest failing sequence and how to replay it; nil when
// every run kept to the model.
func Run(ctx context.Context, d drivers.Driver, w World, spec Spec, seed int64) *Failure {
	r := &runner{ctx: ctx, d: d, w: w}
	base := spec.Seed
	if seed != 0 {
		base = seed
	}
	s := &walkSession{}
	for i := 0; i < spec.Runs; i++ {
		seed := base + int64(i)
		rnd := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		n := 0
		ops, f := r.runWalk(s, func(w *walker) (wop, bool) {
			if n == spec.Steps {
				return wop{}, false
			}
			n++
			return spec.Mix.Next(rnd, model.Position{Model: w.m, IDs: w.ids, Last: w.last, Hi: w.hi}), true
		})
		if f == nil {
			continue
		}
		ops, f = r.shrink(s, ops, f)
		var b strings.Builder
		fmt.Fprintf(&b, "%s\n  at step %d of the shortest failing sequence (seed %d; replay with emq-conform -seed %d):", f.Got, f.step, seed, seed)
		for k, o := range ops {
			fmt.Fprintf(&b, "\n  %2d. %s", k+1, o)
		}
		return &Failure{Rule: f.Rule, Expected: f.Expected, Got: b.String()}
	}
	return nil
}

// portClaimID is the id of a rendered claim reply, "" for anything else.
func portClaimID(reply string) string {
	if id, ok := strings.CutPrefix(reply, "{id "); ok && len(id) > 14 {
		return id[:14]
	}
	return ""
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// text is base64 bytes as the model holds them: decoded, or marked when not base64.
func text(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "<not base64: " + s + ">"
	}
	return string(b)
}
