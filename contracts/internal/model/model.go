package contracts

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/echomq/kit/reference/keys"
)

// The walk's oracle: a model of one queue under the canon's state table (§4) and the kit's
// Part A choices (A3, A6, A7, A13, A14, A15). It holds the keyspace's content as the scripts
// must leave it; times it cannot know exactly (a score set at TIME inside a script) it holds
// as the window [lo, hi] of server TIME taken around the op, narrowed to the port's value once
// that value was found inside the window.

// span is a server time in ms known to lie in [lo, hi].
type span struct{ lo, hi int64 }

func (s span) plus(ms int64) span { return span{s.lo + ms, s.hi + ms} }
func (s span) has(v int64) bool   { return v >= s.lo && v <= s.hi }

type wjob struct {
	state    string
	attempts int64
	payload  string
}

type wmodel struct {
	q                       keys.Q
	jobs                    map[string]*wjob
	pending                 map[string]bool
	active, scheduled, dead map[string]span
	errors, ckpt, laneof    map[string]string
	lanePend                map[string]map[string]bool
	laneActive, ceiling     map[string]int64
	lanePaused              map[string]bool
	ring                    []string
	paused, wake            bool
}

func newModel(q keys.Q) *wmodel {
	return &wmodel{q: q, jobs: map[string]*wjob{}, pending: map[string]bool{},
		active: map[string]span{}, scheduled: map[string]span{}, dead: map[string]span{},
		errors: map[string]string{}, ckpt: map[string]string{}, laneof: map[string]string{},
		lanePend: map[string]map[string]bool{}, laneActive: map[string]int64{}, ceiling: map[string]int64{},
		lanePaused: map[string]bool{}}
}

func (m *wmodel) clone() *wmodel {
	c := *m
	c.jobs = map[string]*wjob{}
	for id, j := range m.jobs {
		jj := *j
		c.jobs[id] = &jj
	}
	c.pending, c.active, c.scheduled, c.dead = maps.Clone(m.pending), maps.Clone(m.active), maps.Clone(m.scheduled), maps.Clone(m.dead)
	c.errors, c.ckpt, c.laneof = maps.Clone(m.errors), maps.Clone(m.ckpt), maps.Clone(m.laneof)
	c.lanePend = map[string]map[string]bool{}
	for g, s := range m.lanePend {
		c.lanePend[g] = maps.Clone(s)
	}
	c.laneActive, c.ceiling, c.lanePaused = maps.Clone(m.laneActive), maps.Clone(m.ceiling), maps.Clone(m.lanePaused)
	c.ring = slices.Clone(m.ring)
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

func (m *wmodel) arm() { m.wake = true }

func (m *wmodel) serviceable(g string) bool {
	c, has := m.ceiling[g]
	return !m.lanePaused[g] && (!has || m.laneActive[g] < c) && len(m.lanePend[g]) > 0
}

// ringFix keeps lane g in the ring iff serviceable, keeping its place or joining at the tail
// (A14); true when it joined.
func (m *wmodel) ringFix(g string) bool {
	ok, at := m.serviceable(g), slices.Index(m.ring, g)
	if ok && at < 0 {
		m.ring = append(m.ring, g)
		return true
	}
	if !ok && at >= 0 {
		m.ring = slices.Delete(m.ring, at, at+1)
	}
	return false
}

func (m *wmodel) release(g string) {
	m.laneActive[g]--
	if m.laneActive[g] <= 0 {
		delete(m.laneActive, g)
	}
}

func (m *wmodel) toPending(id string) {
	if g, ok := m.laneof[id]; ok {
		if m.lanePend[g] == nil {
			m.lanePend[g] = map[string]bool{}
		}
		m.lanePend[g][id] = true
		return
	}
	m.pending[id] = true
}

func (m *wmodel) enqueue(id, lane, payload string, delay int64, now span) bool {
	if m.jobs[id] != nil {
		return false
	}
	j := &wjob{state: "pending", payload: payload}
	m.jobs[id] = j
	if lane != "" {
		m.laneof[id] = lane
	}
	if delay == 0 {
		m.toPending(id)
		if lane != "" {
			m.ringFix(lane)
		}
	} else {
		j.state = "scheduled"
		m.scheduled[id] = now.plus(delay)
	}
	m.arm()
	return true
}

// wclaim is a claim's reply as the model predicts it.
type wclaim struct {
	id, payload string
	token       int64
	ckpt        *string
	lane        string
}

func (m *wmodel) take(id string, lease int64, now span) *wclaim {
	j := m.jobs[id]
	j.attempts++
	j.state = "active"
	m.active[id] = now.plus(lease)
	r := &wclaim{id: id, payload: j.payload, token: j.attempts}
	if c, ok := m.ckpt[id]; ok && j.attempts > 1 {
		r.ckpt = &c
	}
	return r
}

func (m *wmodel) rearm() {
	if len(m.pending) > 0 || len(m.ring) > 0 {
		m.arm()
	}
}

func (m *wmodel) claim(lease int64, now span) *wclaim {
	if m.paused || len(m.pending) == 0 {
		return nil
	}
	r := m.take(popMin(m.pending), lease, now)
	m.rearm()
	return r
}

func (m *wmodel) laneClaim(lease int64, now span) *wclaim {
	if m.paused || len(m.ring) == 0 {
		return nil
	}
	g := m.ring[0]
	m.ring = append(m.ring[1:], g)
	r := m.take(popMin(m.lanePend[g]), lease, now)
	r.lane = g
	m.laneActive[g]++
	if !m.serviceable(g) {
		m.ring = slices.DeleteFunc(m.ring, func(x string) bool { return x == g })
	}
	m.rearm()
	return r
}

// stale is the token fence at the decision time cut (A2: a lease whose deadline ≤ TIME has
// passed).
func (m *wmodel) stale(id string, token, cut int64) bool {
	j := m.jobs[id]
	if j == nil || j.state != "active" || j.attempts != token {
		return true
	}
	d, ok := m.active[id]
	return !ok || d.hi <= cut
}

func (m *wmodel) settleLane(id string) (string, bool) {
	g, ok := m.laneof[id]
	if ok {
		m.release(g)
	}
	return g, ok
}

func (m *wmodel) complete(id string) {
	delete(m.jobs, id)
	delete(m.active, id)
	delete(m.ckpt, id)
	delete(m.errors, id)
	if g, ok := m.settleLane(id); ok {
		delete(m.laneof, id)
		if m.ringFix(g) {
			m.arm()
		}
	}
}

func (m *wmodel) bury(id string, now span) {
	m.jobs[id].state = "dead"
	m.dead[id] = now
}

func (m *wmodel) fail(id, text string, now span) {
	delete(m.active, id)
	m.bury(id, now)
	m.errors[id] = text
	if g, ok := m.settleLane(id); ok && m.ringFix(g) {
		m.arm()
	}
}

func (m *wmodel) retry(id string, token, max, delay int64, text string, now span) string {
	delete(m.active, id)
	m.errors[id] = text
	g, lane := m.settleLane(id)
	if token >= max {
		m.bury(id, now)
		if lane && m.ringFix(g) {
			m.arm()
		}
		return "dead"
	}
	if delay == 0 {
		m.jobs[id].state = "pending"
		m.toPending(id)
	} else {
		m.jobs[id].state = "scheduled"
		m.scheduled[id] = now.plus(delay)
	}
	if lane {
		m.ringFix(g)
	}
	m.arm()
	return "retried"
}

// due lists the ids of a timed set whose score is ≤ cut, in ZRANGEBYSCORE order.
func due(set map[string]span, cut int64) []string {
	var out []string
	for id, s := range set {
		if s.hi <= cut {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := set[out[i]].hi, set[out[j]].hi
		return a < b || a == b && out[i] < out[j]
	})
	return out
}

func (m *wmodel) reap(max, cut int64, now span) int64 {
	n, wake := int64(0), false
	for _, id := range due(m.active, cut) {
		delete(m.active, id)
		n++
		j := m.jobs[id]
		g, lane := m.settleLane(id)
		if j.attempts >= max {
			m.bury(id, now)
			m.errors[id] = "lease expired"
		} else {
			j.state = "pending"
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

func (m *wmodel) promote(cut int64) int64 {
	n := int64(0)
	for _, id := range due(m.scheduled, cut) {
		delete(m.scheduled, id)
		n++
		m.jobs[id].state = "pending"
		m.toPending(id)
		if g, ok := m.laneof[id]; ok {
			m.ringFix(g)
		}
	}
	if n > 0 {
		m.arm()
	}
	return n
}

func (m *wmodel) revive(id string) bool {
	j := m.jobs[id]
	if j == nil || j.state != "dead" {
		return false
	}
	delete(m.dead, id)
	delete(m.errors, id)
	j.state = "pending"
	m.toPending(id)
	if g, ok := m.laneof[id]; ok {
		m.ringFix(g)
	}
	m.arm()
	return true
}

func (m *wmodel) purge(id string) bool {
	j := m.jobs[id]
	if j == nil || j.state != "dead" {
		return false
	}
	delete(m.jobs, id)
	delete(m.dead, id)
	delete(m.errors, id)
	delete(m.ckpt, id)
	delete(m.laneof, id)
	return true
}

func (m *wmodel) resume() {
	m.paused = false
	m.rearm()
}

func (m *wmodel) lanePause(g string) {
	m.lanePaused[g] = true
	m.ring = slices.DeleteFunc(m.ring, func(x string) bool { return x == g })
}

func (m *wmodel) laneResume(g string) {
	delete(m.lanePaused, g)
	if m.ringFix(g) {
		m.arm()
	}
}

func (m *wmodel) laneCeiling(g string, n int64) {
	if n == 0 {
		delete(m.ceiling, g)
	} else {
		m.ceiling[g] = n
	}
	if m.ringFix(g) {
		m.arm()
	}
}

// wdead is a morgue entry as the model predicts it.
type wdead struct {
	id, payload, err string
	attempts         int64
	died             span
}

func (m *wmodel) morgue(limit int) []wdead {
	ids := due(m.dead, 1<<62)
	var out []wdead
	for _, id := range ids[:min(limit, len(ids))] {
		j := m.jobs[id]
		out = append(out, wdead{id: id, payload: j.payload, err: m.errors[id], attempts: j.attempts, died: m.dead[id]})
	}
	return out
}

// wval is one key's expected content; zsets hold a time window per member.
type wval struct {
	typ  string
	hash map[string]string
	zset map[string]span
	list []string
}

// keyspace renders the model as the queue's keys: every non-empty structure, nothing else.
func (m *wmodel) keyspace() map[string]wval {
	out := map[string]wval{}
	p := m.q.Prefix()
	h := func(k string, v map[string]string) {
		if len(v) > 0 {
			out[p+k] = wval{typ: "hash", hash: v}
		}
	}
	z := func(k string, v map[string]span) {
		if len(v) > 0 {
			out[p+k] = wval{typ: "zset", zset: v}
		}
	}
	zero := func(s map[string]bool) map[string]span {
		o := map[string]span{}
		for id := range s {
			o[id] = span{}
		}
		return o
	}
	for id, j := range m.jobs {
		h("job:"+id, map[string]string{"state": j.state, "attempts": strconv.FormatInt(j.attempts, 10), "payload": j.payload})
	}
	z("pending", zero(m.pending))
	z("active", m.active)
	z("scheduled", m.scheduled)
	z("dead", m.dead)
	for g, s := range m.lanePend {
		z("lane:"+g, zero(s))
	}
	h("errors", m.errors)
	h("ckpt", m.ckpt)
	h("laneof", m.laneof)
	lanes := map[string]string{}
	for g, n := range m.laneActive {
		lanes["active:"+g] = strconv.FormatInt(n, 10)
	}
	for g, n := range m.ceiling {
		lanes["ceiling:"+g] = strconv.FormatInt(n, 10)
	}
	for g := range m.lanePaused {
		lanes["paused:"+g] = "1"
	}
	h("lanes", lanes)
	if m.paused {
		h("meta", map[string]string{"paused": "1"})
	}
	if len(m.ring) > 0 {
		out[p+"ring"] = wval{typ: "list", list: slices.Clone(m.ring)}
	}
	if m.wake {
		out[p+"wake"] = wval{typ: "list", list: []string{"1"}}
	}
	return out
}

// adopt narrows the model's time windows to the scores the port wrote (already checked to lie
// inside them).
func (m *wmodel) adopt(actual map[string]wval) {
	p := m.q.Prefix()
	for k, set := range map[string]map[string]span{"active": m.active, "scheduled": m.scheduled, "dead": m.dead} {
		for id := range set {
			if s, ok := actual[p+k].zset[id]; ok {
				set[id] = s
			}
		}
	}
}

// keyspaceDiff compares the expected keys with the actual ones ("" when they agree).
func keyspaceDiff(want, got map[string]wval) string {
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

func (w wval) diff(g wval) string {
	if w.typ != g.typ {
		return "type"
	}
	switch w.typ {
	case "hash":
		if !maps.Equal(w.hash, g.hash) {
			return "hash"
		}
	case "list":
		if !slices.Equal(w.list, g.list) {
			return "list"
		}
	case "zset":
		if len(w.zset) != len(g.zset) {
			return "members"
		}
		for id, s := range w.zset {
			a, ok := g.zset[id]
			if !ok || !s.has(a.lo) {
				return "member " + id
			}
		}
	}
	return ""
}

func (w wval) String() string {
	switch w.typ {
	case "hash":
		var fs []string
		for _, f := range slices.Sorted(maps.Keys(w.hash)) {
			fs = append(fs, strconv.Quote(f)+"="+strconv.Quote(w.hash[f]))
		}
		return fmt.Sprintf("hash{%s}", join(fs))
	case "zset":
		var fs []string
		for _, id := range slices.Sorted(maps.Keys(w.zset)) {
			s := w.zset[id]
			if s.lo == s.hi {
				fs = append(fs, fmt.Sprintf("%s@%d", id, s.lo))
			} else {
				fs = append(fs, fmt.Sprintf("%s@[%d,%d]", id, s.lo, s.hi))
			}
		}
		return fmt.Sprintf("zset{%s}", join(fs))
	default:
		return fmt.Sprintf("%s%q", w.typ, w.list)
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
