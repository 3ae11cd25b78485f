package model

import (
	"slices"
	"strconv"
)

// Lanes is what canon §4 Lanes, A7 and A14 imply for the lane bookkeeping of one queue whose
// jobs all live in lanes: each lane's pending ids, its active count, ceiling and pause, laneof,
// the ring as an ordered list, every id's state, and the wake tokens the last op owes. The lane
// clauses of contracts/ apply each op to the model and to the port, then compare the whole lane
// keyspace.
type Lanes struct {
	Queue   string
	Pending map[string][]string // lane → pending ids, oldest (lowest id) first
	Active  map[string]int
	Ceiling map[string]int
	Paused  map[string]bool
	LaneOf  map[string]string // id → lane, for every live or dead lane job
	State   map[string]string // id → pending, active, scheduled, dead
	Tokens  map[string]int64  // id → attempts
	Payload map[string]string // id → payload bytes
	Ring    []string
	Wake    int // tokens the wake list must hold after the last op (A13)
}

// NewLanes is the model of queue q with no job yet.
func NewLanes(q string) *Lanes {
	return &Lanes{Queue: q, Pending: map[string][]string{}, Active: map[string]int{},
		Ceiling: map[string]int{}, Paused: map[string]bool{}, LaneOf: map[string]string{},
		State: map[string]string{}, Tokens: map[string]int64{}, Payload: map[string]string{}}
}

// Serviceable is canon §4 Lanes: pending ids, not paused, below the ceiling (A7).
func (m *Lanes) Serviceable(g string) bool {
	c, has := m.Ceiling[g]
	return len(m.Pending[g]) > 0 && !m.Paused[g] && (!has || m.Active[g] < c)
}

// fix is A14: a lane in the ring keeps its place, one that becomes serviceable is appended at
// the tail, one that stops is removed. It reports whether the lane joined.
func (m *Lanes) fix(g string) bool {
	at := slices.Index(m.Ring, g)
	ok := m.Serviceable(g)
	switch {
	case ok && at < 0:
		m.Ring = append(m.Ring, g)
		return true
	case !ok && at >= 0:
		m.Ring = slices.Delete(m.Ring, at, at+1)
	}
	return false
}

func (m *Lanes) arm() { m.Wake = 1 }

// push puts an id into its lane's pending set (score 0: id order).
func (m *Lanes) push(id string) {
	g := m.LaneOf[id]
	m.Pending[g] = append(m.Pending[g], id)
	slices.Sort(m.Pending[g])
	m.State[id] = "pending"
}

// release is A14's count: active:<g> − 1, gone at 0.
func (m *Lanes) release(id string) {
	g := m.LaneOf[id]
	if m.Active[g]--; m.Active[g] <= 0 {
		delete(m.Active, g)
	}
}

// Enqueue is a lane enqueue into g, delayed (scheduled) or not.
func (m *Lanes) Enqueue(id, g string, delayed bool) {
	m.LaneOf[id] = g
	if delayed {
		m.State[id] = "scheduled"
	} else {
		m.push(id)
		m.fix(g)
	}
	m.arm()
}

// Claim is the rotating lane claim: head → tail, pop oldest, count active; "" when empty.
func (m *Lanes) Claim() (g, id string) {
	if len(m.Ring) == 0 {
		return "", ""
	}
	g = m.Ring[0]
	m.Ring = append(m.Ring[1:], g)
	id, m.Pending[g] = m.Pending[g][0], m.Pending[g][1:]
	m.Active[g]++
	m.State[id] = "active"
	m.Tokens[id]++
	m.fix(g)
	if len(m.Ring) > 0 {
		m.arm()
	}
	return g, id
}

// leave takes an active id out of active: its lane's count drops and the lane may rejoin (A7).
func (m *Lanes) leave(id string) bool {
	m.release(id)
	return m.fix(m.LaneOf[id])
}

// Complete retires an active id; its lane may rejoin.
func (m *Lanes) Complete(id string) {
	g := m.LaneOf[id]
	m.release(id)
	m.Purge(id)
	if m.fix(g) {
		m.arm()
	}
}

// Retry: dead at max (arming only on a rejoin), else back into the lane or scheduled, armed.
func (m *Lanes) Retry(id string, dead, delayed bool) {
	m.release(id)
	switch {
	case dead:
		m.State[id] = "dead"
		if m.fix(m.LaneOf[id]) {
			m.arm()
		}
		return
	case delayed:
		m.State[id] = "scheduled"
	default:
		m.push(id)
	}
	m.fix(m.LaneOf[id])
	m.arm()
}

// Fail moves an active id to the morgue.
func (m *Lanes) Fail(id string) {
	m.State[id] = "dead"
	if m.leave(id) {
		m.arm()
	}
}

// Reap: expired ids, in deadline order, dead at max or back into their lane.
func (m *Lanes) Reap(ids []string, max int64) {
	for _, id := range ids {
		m.release(id)
		if m.Tokens[id] >= max {
			m.State[id] = "dead"
		} else {
			m.push(id)
			m.arm()
		}
		if m.fix(m.LaneOf[id]) {
			m.arm()
		}
	}
}

// Back is a promote or a revive: a scheduled or dead id back into its lane, armed.
func (m *Lanes) Back(id string) {
	m.push(id)
	m.fix(m.LaneOf[id])
	m.arm()
}

// Purge forgets an id.
func (m *Lanes) Purge(id string) {
	delete(m.LaneOf, id)
	delete(m.State, id)
	delete(m.Tokens, id)
	delete(m.Payload, id)
}

// SetCeiling sets lane g's ceiling (0 removes it).
func (m *Lanes) SetCeiling(g string, n int) {
	if n == 0 {
		delete(m.Ceiling, g)
	} else {
		m.Ceiling[g] = n
	}
	if m.fix(g) {
		m.arm()
	}
}

// Pause takes lane g out of the ring.
func (m *Lanes) Pause(g string) {
	m.Paused[g] = true
	m.fix(g)
}

// Resume lets lane g rejoin the ring.
func (m *Lanes) Resume(g string) {
	delete(m.Paused, g)
	if m.fix(g) {
		m.arm()
	}
}

// IDs lists the model's ids in a state, sorted.
func (m *Lanes) IDs(state string) []string {
	var out []string
	for id, s := range m.State {
		if s == state {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// LanesHash is the lanes hash the model implies.
func (m *Lanes) LanesHash() map[string]string {
	h := map[string]string{}
	for g, n := range m.Active {
		h["active:"+g] = strconv.Itoa(n)
	}
	for g, n := range m.Ceiling {
		h["ceiling:"+g] = strconv.Itoa(n)
	}
	for g := range m.Paused {
		h["paused:"+g] = "1"
	}
	return h
}
