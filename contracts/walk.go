package contracts

import (
	"strconv"

	"github.com/echomq/kit/contracts/internal/model"
	"github.com/echomq/kit/contracts/internal/walk"
	"github.com/echomq/kit/contracts/rules"
)

// The model-checked walks (contracts/internal/walk), each the last clause of the contract that
// owns its ops. Each runs a few seeded runs of 40–50 steps on fresh queues, its op table weighted
// toward the ops its contract owns; Config.Seed replays a failing run.
var (
	walkPlain  = walkSpec{walk.Spec{Seed: 6001, Runs: 3, Steps: 50, Mix: model.PlainMix, Rules: walkPlainRules}}
	walkMorgue = walkSpec{walk.Spec{Seed: 10001, Runs: 3, Steps: 50, Mix: model.MorgueMix, Rules: walkLaneRules}}
	walkRetry  = walkSpec{walk.Spec{Seed: 9001, Runs: 2, Steps: 40, Mix: model.RetryMix, Rules: walkLaneRules}}
	walkReap   = walkSpec{walk.Spec{Seed: 11001, Runs: 2, Steps: 40, Mix: model.ReapMix, Rules: walkLaneRules}}
	walkLimits = walkSpec{walk.Spec{Seed: 13001, Runs: 2, Steps: 40, Mix: model.LimitMix, Rules: walkLaneRules}}
	walkLanes  = walkSpec{walk.Spec{Seed: 12001, Runs: 4, Steps: 50, Mix: model.LaneMix, Rules: walkLaneRules}}
)

// The rules a walk evaluates: every op's, and with lanes the lanes' too.
var (
	walkPlainRules = []rules.Rule{rules.WalkModel, rules.Enqueue, rules.Claim, rules.Extend, rules.Complete, rules.Retry, rules.Fail,
		rules.Checkpoint, rules.Reap, rules.Promote, rules.Morgue, rules.WalkRevive, rules.QueuePause, rules.Fenced, rules.Wake, rules.IDs, rules.MintOrder}
	walkLaneRules = append([]rules.Rule{rules.Lanes, rules.Ceiling, rules.WalkLaneReturn, rules.WalkLaneCount}, walkPlainRules...)
)

// walkSpec is a walk clause: what it explores.
type walkSpec struct{ walk.Spec }

// body runs the walk on the clause's port session and fails the clause at the first divergence.
func (ws walkSpec) body(t *T) {
	t.cover(ws.Rules...)
	if f := walk.Run(t.ctx, t.D, walkWorld{t}, ws.Spec, t.cfg.Seed); f != nil {
		t.fail(f.Rule, f.Expected, f.Got)
	}
}

// walkWorld is the clause's world as a walk sees it (walk.World).
type walkWorld struct{ t *T }

func (w walkWorld) Now() int64              { return w.t.now() }
func (w walkWorld) WaitPast(deadline int64) { w.t.waitPast(deadline) }
func (w walkWorld) Pop(key string)          { w.t.do("LPOP", key) }

// Keyspace reads every key under prefix with exact scores.
func (w walkWorld) Keyspace(prefix string) map[string]model.Val {
	t := w.t
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
