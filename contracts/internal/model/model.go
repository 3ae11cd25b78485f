// Package model holds the suite's oracles, pure (no server, no port): the model of one queue
// under the canon's state table that the model-checked walks of contracts/ run beside the port
// (model.go), the ops a walk explores (gen.go), and the lane clauses' model of a queue's lanes
// (lanes.go).
package model

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/echomq/kit/reference/keys"
)

// The walk's oracle: a model of one queue under the canon's state table (§4) and the kit's
// Part A choices (A3, A6, A7, A13, A14, A15). It holds the keyspace's content as the scripts
// must leave it; times it cannot know exactly (a score set at TIME inside a script) it holds
// as the window [lo, hi] of server TIME taken around the op, narrowed to the port's value once
// that value was found inside the window.

// Span is a server time in ms known to lie in [lo, hi].
type Span struct{ Lo, Hi int64 }

// Plus is the span ms later.
func (s Span) Plus(ms int64) Span { return Span{Lo: s.Lo + ms, Hi: s.Hi + ms} }

// Has tells whether v lies in the span.
func (s Span) Has(v int64) bool { return v >= s.Lo && v <= s.Hi }

// Job is a job row: exactly state, attempts, payload (canon §2).
type Job struct {
	State    string
	Attempts int64
	Payload  string
}

// Model is one queue's keyspace as the scripts must leave it.
type Model struct {
	Q                       keys.Q
	Jobs                    map[string]*Job
	Pending                 map[string]bool
	Active, Scheduled, Dead map[string]Span
	Errors, Ckpt, Laneof    map[string]string
	LanePend                map[string]map[string]bool
	LaneActive, Ceiling     map[string]int64
	LanePaused              map[string]bool
	Ring                    []string
	Paused, Wake            bool
}

// New is the model of the empty queue q.
func New(q keys.Q) *Model {
	return &Model{Q: q, Jobs: map[string]*Job{}, Pending: map[string]bool{},
		Active: map[string]Span{}, Scheduled: map[string]Span{}, Dead: map[string]Span{},
		Errors: map[string]string{}, Ckpt: map[string]string{}, Laneof: map[string]string{},
		LanePend: map[string]map[string]bool{}, LaneActive: map[string]int64{}, Ceiling: map[string]int64{},
		LanePaused: map[string]bool{}}
}

// Clone is a deep copy: a step tries each decision time on its own copy.
func (m *Model) Clone() *Model {
	c := *m
	c.Jobs = map[string]*Job{}
	for id, j := range m.Jobs {
		jj := *j
		c.Jobs[id] = &jj
	}
	c.Pending, c.Active, c.Scheduled, c.Dead = maps.Clone(m.Pending), maps.Clone(m.Active), maps.Clone(m.Scheduled), maps.Clone(m.Dead)
	c.Errors, c.Ckpt, c.Laneof = maps.Clone(m.Errors), maps.Clone(m.Ckpt), maps.Clone(m.Laneof)
	c.LanePend = map[string]map[string]bool{}
	for g, s := range m.LanePend {
		c.LanePend[g] = maps.Clone(s)
	}
	c.LaneActive, c.Ceiling, c.LanePaused = maps.Clone(m.LaneActive), maps.Clone(m.Ceiling), maps.Clone(m.LanePaused)
	c.Ring = slices.Clone(m.Ring)
	return &c
}

// popMin takes the least id of a score-0 set (lex order = mint order).
func popMin(s map[string]bool) string {
	if len(s) == 0 {
		return ""
	}
	id := slices.Min(slices.Collect(maps.Keys(s)))
	delete(s, id)
	return id
}

func (m *Model) arm() { m.Wake = true }

func (m *Model) serviceable(g string) bool {
	c, has := m.Ceiling[g]
	return !m.LanePaused[g] && (!has || m.LaneActive[g] < c) && len(m.LanePend[g]) > 0
}

// ringFix keeps lane g in the ring iff serviceable, keeping its place or joining at the tail
// (A14); true when it joined.
func (m *Model) ringFix(g string) bool {
	ok, at := m.serviceable(g), slices.Index(m.Ring, g)
	if ok && at < 0 {
		m.Ring = append(m.Ring, g)
		return true
	}
	if !ok && at >= 0 {
		m.Ring = slices.Delete(m.Ring, at, at+1)
	}
	return false
}

func (m *Model) release(g string) {
	m.LaneActive[g]--
	if m.LaneActive[g] <= 0 {
		delete(m.LaneActive, g)
	}
}

func (m *Model) toPending(id string) {
	if g, ok := m.Laneof[id]; ok {
		if m.LanePend[g] == nil {
			m.LanePend[g] = map[string]bool{}
		}
		m.LanePend[g][id] = true
		return
	}
	m.Pending[id] = true
}

func (m *Model) enqueue(id, lane, payload string, delay int64, now Span) bool {
	if m.Jobs[id] != nil {
		return false
	}
	j := &Job{State: "pending", Payload: payload}
	m.Jobs[id] = j
	if lane != "" {
		m.Laneof[id] = lane
	}
	if delay == 0 {
		m.toPending(id)
		if lane != "" {
			m.ringFix(lane)
		}
	} else {
		j.State = "scheduled"
		m.Scheduled[id] = now.Plus(delay)
	}
	m.arm()
	return true
}

// Claim is a claim's reply as the model predicts it.
type Claim struct {
	ID, Payload string
	Token       int64
	Ckpt        *string
	Lane        string
}

func (m *Model) take(id string, lease int64, now Span) *Claim {
	j := m.Jobs[id]
	j.Attempts++
	j.State = "active"
	m.Active[id] = now.Plus(lease)
	r := &Claim{ID: id, Payload: j.Payload, Token: j.Attempts}
	if c, ok := m.Ckpt[id]; ok && j.Attempts > 1 {
		r.Ckpt = &c
	}
	return r
}

func (m *Model) rearm() {
	if len(m.Pending) > 0 || len(m.Ring) > 0 {
		m.arm()
	}
}

func (m *Model) claim(lease int64, now Span) *Claim {
	if m.Paused || len(m.Pending) == 0 {
		return nil
	}
	r := m.take(popMin(m.Pending), lease, now)
	m.rearm()
	return r
}

func (m *Model) laneClaim(lease int64, now Span) *Claim {
	if m.Paused || len(m.Ring) == 0 {
		return nil
	}
	g := m.Ring[0]
	m.Ring = append(m.Ring[1:], g)
	r := m.take(popMin(m.LanePend[g]), lease, now)
	r.Lane = g
	m.LaneActive[g]++
	if !m.serviceable(g) {
		m.Ring = slices.DeleteFunc(m.Ring, func(x string) bool { return x == g })
	}
	m.rearm()
	return r
}

// stale is the token fence at the decision time cut (A2: a lease whose deadline ≤ TIME has
// passed).
func (m *Model) stale(id string, token, cut int64) bool {
	j := m.Jobs[id]
	if j == nil || j.State != "active" || j.Attempts != token {
		return true
	}
	d, ok := m.Active[id]
	return !ok || d.Hi <= cut
}

func (m *Model) settleLane(id string) (string, bool) {
	g, ok := m.Laneof[id]
	if ok {
		m.release(g)
	}
	return g, ok
}

func (m *Model) complete(id string) {
	delete(m.Jobs, id)
	delete(m.Active, id)
	delete(m.Ckpt, id)
	delete(m.Errors, id)
	if g, ok := m.settleLane(id); ok {
		delete(m.Laneof, id)
		if m.ringFix(g) {
			m.arm()
		}
	}
}

func (m *Model) bury(id string, now Span) {
	m.Jobs[id].State = "dead"
	m.Dead[id] = now
}

func (m *Model) fail(id, text string, now Span) {
	delete(m.Active, id)
	m.bury(id, now)
	m.Errors[id] = text
	if g, ok := m.settleLane(id); ok && m.ringFix(g) {
		m.arm()
	}
}

func (m *Model) retry(id string, token, max, delay int64, text string, now Span) string {
	delete(m.Active, id)
	m.Errors[id] = text
	g, lane := m.settleLane(id)
	if token >= max {
		m.bury(id, now)
		if lane && m.ringFix(g) {
			m.arm()
		}
		return "dead"
	}
	if delay == 0 {
		m.Jobs[id].State = "pending"
		m.toPending(id)
	} else {
		m.Jobs[id].State = "scheduled"
		m.Scheduled[id] = now.Plus(delay)
	}
	if lane {
		m.ringFix(g)
	}
	m.arm()
	return "retried"
}

// due lists the ids of a timed set whose score is ≤ cut, in ZRANGEBYSCORE order.
func due(set map[string]Span, cut int64) []string {
	var out []string
	for id, s := range set {
		if s.Hi <= cut {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := set[out[i]].Hi, set[out[j]].Hi
		return a < b || a == b && out[i] < out[j]
	})
	return out
}

func (m *Model) reap(max, cut int64, now Span) int64 {
	n, wake := int64(0), false
	for _, id := range due(m.Active, cut) {
		delete(m.Active, id)
		n++
		j := m.Jobs[id]
		g, lane := m.settleLane(id)
		if j.Attempts >= max {
			m.bury(id, now)
			m.Errors[id] = "lease expired"
		} else {
			j.State = "pending"
			m.toPending(id)
			wake = true
		}
		if lane && m.ringFix(g) {
			wake = true
		}
	}
	if wake {
		m.arm()
	}
	return n
}

func (m *Model) promote(cut int64) int64 {
	n := int64(0)
	for _, id := range due(m.Scheduled, cut) {
		delete(m.Scheduled, id)
		n++
		m.Jobs[id].State = "pending"
		m.toPending(id)
		if g, ok := m.Laneof[id]; ok {
			m.ringFix(g)
		}
	}
	if n > 0 {
		m.arm()
	}
	return n
}

func (m *Model) revive(id string) bool {
	j := m.Jobs[id]
	if j == nil || j.State != "dead" {
		return false
	}
	delete(m.Dead, id)
	delete(m.Errors, id)
	j.State = "pending"
	m.toPending(id)
	if g, ok := m.Laneof[id]; ok {
		m.ringFix(g)
	}
	m.arm()
	return true
}

func (m *Model) purge(id string) bool {
	j := m.Jobs[id]
	if j == nil || j.State != "dead" {
		return false
	}
	delete(m.Jobs, id)
	delete(m.Dead, id)
	delete(m.Errors, id)
	delete(m.Ckpt, id)
	delete(m.Laneof, id)
	return true
}

func (m *Model) resume() {
	m.Paused = false
	m.rearm()
}

func (m *Model) lanePause(g string) {
	m.LanePaused[g] = true
	m.Ring = slices.DeleteFunc(m.Ring, func(x string) bool { return x == g })
}

func (m *Model) laneResume(g string) {
	delete(m.LanePaused, g)
	if m.ringFix(g) {
		m.arm()
	}
}

func (m *Model) laneCeiling(g string, n int64) {
	if n == 0 {
		delete(m.Ceiling, g)
	} else {
		m.Ceiling[g] = n
	}
	if m.ringFix(g) {
		m.arm()
	}
}

// Dead is a morgue entry as the model predicts it.
type Dead struct {
	ID, Payload, Err string
	Attempts         int64
	Died             Span
}

func (m *Model) morgue(limit int) []Dead {
	ids := due(m.Dead, 1<<62)
	var out []Dead
	for _, id := range ids[:min(limit, len(ids))] {
		j := m.Jobs[id]
		out = append(out, Dead{ID: id, Payload: j.Payload, Err: m.Errors[id], Attempts: j.Attempts, Died: m.Dead[id]})
	}
	return out
}

// Val is one key's expected content; zsets hold a time window per member.
type Val struct {
	Typ  string
	Hash map[string]string
	Zset map[string]Span
	List []string
}

// Keyspace renders the model as the queue's keys: every non-empty structure, nothing else.
func (m *Model) Keyspace() map[string]Val {
	out := map[string]Val{}
	p := m.Q.Prefix()
	h := func(k string, v map[string]string) {
		if len(v) > 0 {
			out[p+k] = Val{Typ: "hash", Hash: v}
		}
	}
	z := func(k string, v map[string]Span) {
		if len(v) > 0 {
			out[p+k] = Val{Typ: "zset", Zset: v}
		}
	}
	zero := func(s map[string]bool) map[string]Span {
		o := map[string]Span{}
		for id := range s {
			o[id] = Span{}
		}
		return o
	}
	for id, j := range m.Jobs {
		h("job:"+id, map[string]string{"state": j.State, "attempts": strconv.FormatInt(j.Attempts, 10), "payload": j.Payload})
	}
	z("pending", zero(m.Pending))
	z("active", m.Active)
	z("scheduled", m.Scheduled)
	z("dead", m.Dead)
	for g, s := range m.LanePend {
		z("lane:"+g, zero(s))
	}
	h("errors", m.Errors)
	h("ckpt", m.Ckpt)
	h("laneof", m.Laneof)
	lanes := map[string]string{}
	for g, n := range m.LaneActive {
		lanes["active:"+g] = strconv.FormatInt(n, 10)
	}
	for g, n := range m.Ceiling {
		lanes["ceiling:"+g] = strconv.FormatInt(n, 10)
	}
	for g := range m.LanePaused {
		lanes["paused:"+g] = "1"
	}
	h("lanes", lanes)
	if m.Paused {
		h("meta", map[string]string{"paused": "1"})
	}
	if len(m.Ring) > 0 {
		out[p+"ring"] = Val{Typ: "list", List: slices.Clone(m.Ring)}
	}
	if m.Wake {
		out[p+"wake"] = Val{Typ: "list", List: []string{"1"}}
	}
	return out
}

// Adopt narrows the model's time windows to the scores the port wrote (already checked to lie
// inside them).
func (m *Model) Adopt(actual map[string]Val) {
	p := m.Q.Prefix()
	for k, set := range map[string]map[string]Span{"active": m.Active, "scheduled": m.Scheduled, "dead": m.Dead} {
		for id := range set {
			if s, ok := actual[p+k].Zset[id]; ok {
				set[id] = s
			}
		}
	}
}

// KeyspaceDiff compares the expected keys with the actual ones ("" when they agree).
func KeyspaceDiff(want, got map[string]Val) string {
	var ds []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w := want[k]
		g, ok := got[k]
		if !ok {
			ds = append(ds, fmt.Sprintf("%s missing (want %s)", k, w))
			continue
		}
		if d := w.diff(g); d != "" {
			ds = append(ds, fmt.Sprintf("%s: want %s, got %s", k, w, g))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			ds = append(ds, fmt.Sprintf("%s unexpected: %s", k, got[k]))
		}
	}
	if len(ds) > 6 {
		ds = append(ds[:6], fmt.Sprintf("… and %d more", len(ds)-6))
	}
	s := ""
	for i, d := range ds {
		if i > 0 {
			s += "; "
		}
		s += d
	}
	return s
}

func (w Val) diff(g Val) string {
	if w.Typ != g.Typ {
		return "type"
	}
	switch w.Typ {
	case "hash":
		if !maps.Equal(w.Hash, g.Hash) {
			return "hash"
		}
	case "list":
		if !slices.Equal(w.List, g.List) {
			return "list"
		}
	case "zset":
		if len(w.Zset) != len(g.Zset) {
			return "members"
		}
		for id, s := range w.Zset {
			a, ok := g.Zset[id]
			if !ok || !s.Has(a.Lo) {
				return "member " + id
			}
		}
	}
	return ""
}

func (w Val) String() string {
	switch w.Typ {
	case "hash":
		var fs []string
		for _, f := range slices.Sorted(maps.Keys(w.Hash)) {
			fs = append(fs, strconv.Quote(f)+"="+strconv.Quote(w.Hash[f]))
		}
		return fmt.Sprintf("hash{%s}", join(fs))
	case "zset":
		var fs []string
		for _, id := range slices.Sorted(maps.Keys(w.Zset)) {
			s := w.Zset[id]
			if s.Lo == s.Hi {
				fs = append(fs, fmt.Sprintf("%s@%d", id, s.Lo))
			} else {
				fs = append(fs, fmt.Sprintf("%s@[%d,%d]", id, s.Lo, s.Hi))
			}
		}
		return fmt.Sprintf("zset{%s}", join(fs))
	default:
		return fmt.Sprintf("%s%q", w.Typ, w.List)
	}
}

func join(fs []string) string {
	s := ""
	for i, f := range fs {
		if i > 0 {
			s += " "
		}
		s += f
	}
	return s
}

// A walk op, abstract enough to be replayed on a fresh queue (shrinking): it names jobs by
// their index in the run's enqueue order (ids are mapped by mint order, never by value) and
// tokens by their offset from the live one.
type Op struct {
	Kind  string
	Job   int   // the job the op names: index into the run's ids
	Tok   int64 // the token's offset from the job's live attempts (0 = the live token)
	Lane  string
	Data  string // payload or checkpoint bytes
	Given int    // enqueue: >0 the kit's given id number, 0 minted, <0 a duplicate of Job
	Delay int64
	Lease int64
	Max   int64
	N     int64 // lane_ceiling's n, a wait's ms, morgue's limit
	Text  string
}

func (o Op) String() string {
	switch o.Kind {
	case "enqueue":
		who := "minted"
		if o.Given > 0 {
			who = fmt.Sprintf("given#%d", o.Given)
		} else if o.Given < 0 {
			who = fmt.Sprintf("dup(job%d)", o.Job)
		}
		return fmt.Sprintf("enqueue %s lane=%q delay=%d payload=%q", who, o.Lane, o.Delay, o.Data)
	case "claim", "lane_claim":
		return fmt.Sprintf("%s lease=%d", o.Kind, o.Lease)
	case "extend":
		return fmt.Sprintf("extend job%d tok%+d lease=%d", o.Job, o.Tok, o.Lease)
	case "complete":
		return fmt.Sprintf("complete job%d tok%+d", o.Job, o.Tok)
	case "retry":
		return fmt.Sprintf("retry job%d tok%+d max=%d delay=%d error=%q", o.Job, o.Tok, o.Max, o.Delay, o.Text)
	case "fail":
		return fmt.Sprintf("fail job%d tok%+d error=%q", o.Job, o.Tok, o.Text)
	case "checkpoint":
		return fmt.Sprintf("checkpoint job%d tok%+d data=%q", o.Job, o.Tok, o.Data)
	case "reap":
		return fmt.Sprintf("reap max=%d", o.Max)
	case "revive", "purge":
		return fmt.Sprintf("%s job%d", o.Kind, o.Job)
	case "lane_pause", "lane_resume":
		return fmt.Sprintf("%s %s", o.Kind, o.Lane)
	case "lane_ceiling":
		return fmt.Sprintf("lane_ceiling %s %d", o.Lane, o.N)
	case "wait":
		return fmt.Sprintf("wait %dms", o.N)
	case "morgue":
		return fmt.Sprintf("morgue limit=%d", o.N)
	}
	return o.Kind
}

// RenderClaim is a claim reply as the walk compares it ("empty" for none).
func RenderClaim(c *Claim) string {
	if c == nil {
		return "empty"
	}
	ck := "nil"
	if c.Ckpt != nil {
		ck = fmt.Sprintf("%q", *c.Ckpt)
	}
	return fmt.Sprintf("{id %s payload %q token %d checkpoint %s lane %q}", c.ID, c.Payload, c.Token, ck, c.Lane)
}

// RenderMorgue is a morgue reply as the walk compares it.
func RenderMorgue(js []Dead) string {
	var out []string
	for _, j := range js {
		out = append(out, fmt.Sprintf("{%s attempts %d payload %q error %q died %d}", j.ID, j.Attempts, j.Payload, j.Err, j.Died.Lo))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// Apply runs op o on the model at decision time cut (id is the job it names, now the TIME
// window around it) and renders the reply the canon demands.
func (m *Model) Apply(o Op, id string, cut int64, now Span) string {
	switch o.Kind {
	case "enqueue":
		return fmt.Sprintf("created %v", m.enqueue(id, o.Lane, o.Data, o.Delay, now))
	case "claim":
		return RenderClaim(m.claim(o.Lease, now))
	case "lane_claim":
		return RenderClaim(m.laneClaim(o.Lease, now))
	case "extend", "complete", "retry", "fail", "checkpoint":
		tok := o.Tok
		if j := m.Jobs[id]; j != nil {
			tok += j.Attempts
		}
		tok = max(tok, 1)
		if m.stale(id, tok, cut) {
			return "EMQSTALE"
		}
		switch o.Kind {
		case "extend":
			m.Active[id] = now.Plus(o.Lease)
			return "extend"
		case "complete":
			m.complete(id)
		case "retry":
			return m.retry(id, tok, o.Max, o.Delay, o.Text, now)
		case "fail":
			m.fail(id, o.Text, now)
		default:
			m.Ckpt[id] = o.Data
		}
		return "ok"
	case "reap":
		return fmt.Sprintf("count %d", m.reap(o.Max, cut, now))
	case "promote":
		return fmt.Sprintf("count %d", m.promote(cut))
	case "morgue":
		return RenderMorgue(m.morgue(int(o.N)))
	case "revive":
		return fmt.Sprintf("changed %v", m.revive(id))
	case "purge":
		return fmt.Sprintf("changed %v", m.purge(id))
	case "pause":
		m.Paused = true
	case "resume":
		m.resume()
	case "lane_pause":
		m.lanePause(o.Lane)
	case "lane_resume":
		m.laneResume(o.Lane)
	case "lane_ceiling":
		m.laneCeiling(o.Lane, o.N)
	case "drain":
		m.Wake = false
	}
	return "ok"
}

// Cuts are the decision times worth trying for an op that ran somewhere in [lo, hi]: lo, and
// every deadline the model holds inside (lo, hi] (at most one outcome per cut).
func (m *Model) Cuts(lo, hi int64) []int64 {
	out := []int64{lo}
	for _, set := range []map[string]Span{m.Active, m.Scheduled} {
		for _, s := range set {
			if s.Hi > lo && s.Hi <= hi {
				out = append(out, s.Hi)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
