package model

import (
	"math/rand/v2"
	"slices"
)

// The walks' generator: what op comes next, drawn from a walk's op table and weighted by the
// model's state, so that a walk spends its steps where there is something to do.

// Mix is a walk's op table: each op kind with its weight, and the lanes its lane ops name.
type Mix struct {
	Kinds []Weighted
	Lanes []string
}

// Weighted is an op kind and its weight in a walk.
type Weighted struct {
	Kind   string
	Weight int
}

// Position is where a walk stands: the model, the ids the walk knows (Op.Job indexes them), the
// job claimed last (a worker settles what it just claimed) and server TIME after the last step.
type Position struct {
	Model *Model
	IDs   []string
	Last  string
	Hi    int64
}

var walkBytes = []string{"", "\x00", "\x80\xff\xfe", "\xc3\x28", "h\u00e9llo", "a\x00b\r\n", "\xed\xa0\x80", "job"}

func pick[E any](r *rand.Rand, xs []E) E { return xs[r.IntN(len(xs))] }

func randBytes(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	return pick(r, walkBytes)
}

// jobIn picks a job index, preferring the job claimed last (half the time, while it is in
// state want), then ids in state want.
func (p Position) jobIn(r *rand.Rand, want string) int {
	if len(p.IDs) == 0 {
		return 0
	}
	// an active job is worth settling while its lease is live
	live := func(id string) bool {
		j := p.Model.Jobs[id]
		if j == nil || j.State != want {
			return false
		}
		d, ok := p.Model.Active[id]
		return want != "active" || ok && d.Lo > p.Hi+5
	}
	if want == "active" && r.IntN(6) == 0 {
		// a zombie: its lease passed and no reap has run yet (A2: it must be refused)
		var gone []int
		for i, id := range p.IDs {
			if d, ok := p.Model.Active[id]; ok && d.Hi <= p.Hi {
				gone = append(gone, i)
			}
		}
		if len(gone) > 0 {
			return pick(r, gone)
		}
	}
	if live(p.Last) && r.IntN(2) == 0 {
		return slices.Index(p.IDs, p.Last)
	}
	var in []int
	for i, id := range p.IDs {
		if live(id) {
			in = append(in, i)
		}
	}
	if len(in) > 0 && r.IntN(5) > 0 {
		return pick(r, in)
	}
	return r.IntN(len(p.IDs))
}

// weight scales an op's weight by whether the model's state gives it something to do, so that
// most steps move a job rather than answer empty or stale (those still happen, less often).
func (k Weighted) weight(m *Model) int {
	busy := func(n int) int {
		if n > 0 {
			return 10 * k.Weight
		}
		return 2 * k.Weight
	}
	switch k.Kind {
	case "extend", "complete", "retry", "fail", "checkpoint", "reap":
		return busy(len(m.Active))
	case "revive", "purge", "morgue":
		return busy(len(m.Dead))
	case "promote":
		return busy(len(m.Scheduled))
	case "claim":
		if m.Paused {
			return busy(0)
		}
		return busy(len(m.Pending))
	case "enqueue", "lane_enqueue":
		// a short backlog lets a retried job come round again to the claims
		return busy(max(0, 6-len(m.Pending)-len(m.Scheduled)-len(m.Ring)))
	case "lane_claim":
		if m.Paused {
			return busy(0)
		}
		return busy(len(m.Ring))
	case "drain":
		if m.Wake {
			return busy(1)
		}
		return busy(0)
	case "resume":
		if m.Paused {
			return busy(1)
		}
		return busy(0)
	case "lane_resume":
		return busy(len(m.LanePaused))
	}
	return 10 * k.Weight
}

// Next is the walk's next op from where it stands: a kind drawn by weight, its arguments drawn
// at random (a wrong token now and then, bytes that are not UTF-8, a given id).
func (x Mix) Next(r *rand.Rand, p Position) Op {
	total := 0
	for _, k := range x.Kinds {
		total += k.weight(p.Model)
	}
	n, kind := r.IntN(total), ""
	for _, k := range x.Kinds {
		if n < k.weight(p.Model) {
			kind = k.Kind
			break
		}
		n -= k.weight(p.Model)
	}
	o := Op{Kind: kind, Lease: pick(r, []int64{30, 60, 150, 150, 150, 1000}), Max: pick(r, []int64{1, 2, 3, 5}),
		Text: pick(r, []string{"boom", "timeout: d\u00e9j\u00e0 vu", ""}), Data: randBytes(r)}
	if r.IntN(8) == 0 {
		o.Tok = pick(r, []int64{-1, 1})
	}
	switch kind {
	case "enqueue", "lane_enqueue":
		o.Kind = "enqueue"
		if kind == "lane_enqueue" {
			o.Lane = pick(r, x.Lanes)
		}
		o.Delay = pick(r, []int64{0, 0, 0, 30, 80, 150})
		switch d := r.IntN(10); {
		case d < 3:
			o.Given = 1 + r.IntN(1000)
		case d < 4 && len(p.IDs) > 0:
			o.Given, o.Job = -1, r.IntN(len(p.IDs))
		}
	case "extend", "complete", "retry", "fail", "checkpoint":
		o.Job = p.jobIn(r, "active")
		o.Delay = pick(r, []int64{0, 0, 0, 40, 100})
	case "revive", "purge":
		o.Job = p.jobIn(r, "dead")
	case "lane_pause", "lane_resume", "lane_ceiling":
		o.Lane = pick(r, x.Lanes)
		o.N = int64(r.IntN(4))
	case "wait":
		o.N = pick(r, []int64{30, 60, 100, 150})
	case "morgue":
		o.N = pick(r, []int64{1, 2, 100})
	}
	return o
}

// The op tables of the contracts' walks (package contracts, walk.go): each op kind with its
// weight, and the lanes the lane ops name.
var (
	PlainMix = Mix{Kinds: []Weighted{{"enqueue", 5}, {"claim", 5}, {"extend", 1}, {"complete", 3}, {"retry", 3},
		{"fail", 1}, {"checkpoint", 3}, {"reap", 1}, {"promote", 2}, {"morgue", 1}, {"revive", 1},
		{"purge", 1}, {"pause", 1}, {"resume", 3}, {"wait", 1}, {"drain", 2}}}
	MorgueMix = Mix{Kinds: []Weighted{{"enqueue", 2}, {"lane_enqueue", 4}, {"claim", 2}, {"lane_claim", 4},
		{"complete", 1}, {"retry", 3}, {"fail", 3}, {"checkpoint", 1}, {"reap", 2}, {"promote", 1},
		{"morgue", 2}, {"revive", 3}, {"purge", 2}, {"wait", 2}, {"lane_ceiling", 1}, {"lane_resume", 1}, {"drain", 2}}, Lanes: laneNames[:2]}
	LaneMix = Mix{Kinds: []Weighted{{"lane_enqueue", 6}, {"lane_claim", 7}, {"enqueue", 1}, {"claim", 1},
		{"extend", 1}, {"complete", 3}, {"retry", 3}, {"fail", 2}, {"checkpoint", 1}, {"reap", 1},
		{"promote", 2}, {"morgue", 1}, {"revive", 2}, {"purge", 1}, {"lane_pause", 2},
		{"lane_resume", 3}, {"lane_ceiling", 1}, {"pause", 1}, {"resume", 3}, {"wait", 1}, {"drain", 3}}, Lanes: laneNames}
	RetryMix = Mix{Kinds: []Weighted{{"enqueue", 3}, {"lane_enqueue", 2}, {"claim", 3}, {"lane_claim", 2},
		{"retry", 6}, {"checkpoint", 2}, {"complete", 1}, {"promote", 4}, {"wait", 2}, {"drain", 2}}, Lanes: laneNames[:2]}
	ReapMix = Mix{Kinds: []Weighted{{"enqueue", 3}, {"lane_enqueue", 2}, {"claim", 4}, {"lane_claim", 2},
		{"checkpoint", 2}, {"extend", 1}, {"complete", 1}, {"reap", 5}, {"wait", 2}, {"revive", 1},
		{"lane_ceiling", 1}, {"drain", 2}}, Lanes: laneNames[:2]}
	LimitMix = Mix{Kinds: []Weighted{{"lane_enqueue", 5}, {"enqueue", 1}, {"lane_claim", 6}, {"claim", 1},
		{"complete", 2}, {"retry", 2}, {"fail", 1}, {"reap", 1}, {"wait", 1}, {"pause", 2},
		{"resume", 3}, {"lane_pause", 3}, {"lane_resume", 3}, {"lane_ceiling", 4}, {"drain", 3}}, Lanes: laneNames}
	laneNames = []string{"a", "b", "c"}
)
