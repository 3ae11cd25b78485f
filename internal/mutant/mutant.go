// Package mutant is the catalogue of deliberate defects in the reference port: each mutant
// breaks one rule of the canon, so a conformance run that passes it proves the harness blind
// to that rule. Lua mutants are the canonical bundle with one exact source edit; Go mutants are
// bus.Defects switches. Both are applied through bus.Options: there is no global state.
package mutant

import (
	"fmt"
	"sort"
	"strings"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/bus"
)

// Edit replaces Old by New in one bundle script. Old must occur exactly once in the canonical
// source, so a bundle change that moves the text breaks the catalogue loudly.
type Edit struct {
	Script, Old, New string
}

// Spec is one mutant: its name, the contract it must fail, and what it does wrong.
type Spec struct {
	Name     string
	Contract string // the contract that must fail, e.g. "C07" (others may fail too)
	Defect   string
	Edits    []Edit      // Lua mutants: edits of the canonical bundle
	Defects  bus.Defects // Go mutants: switches in the bus
	// AllowEngine admits a wrong-kind server (the fence's opt-in, turned into a defect).
	AllowEngine bool
}

// Catalogue lists every mutant, sorted by name.
func Catalogue() []Spec {
	out := append([]Spec(nil), catalogue...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds a mutant by name.
func Lookup(name string) (Spec, bool) {
	for _, s := range catalogue {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names lists the mutants' names, sorted.
func Names() []string {
	var out []string
	for _, s := range Catalogue() {
		out = append(out, s.Name)
	}
	return out
}

// Check verifies that every edit applies to the canonical bundle exactly once.
func (s Spec) Check() error {
	b, err := lua.Load()
	if err != nil {
		return err
	}
	for _, e := range s.Edits {
		ls, ok := b.Script(e.Script)
		if !ok {
			return fmt.Errorf("mutant %s: no script %q", s.Name, e.Script)
		}
		if n := strings.Count(ls.Source, e.Old); n != 1 {
			return fmt.Errorf("mutant %s: %s.lua holds the edited text %d times, want once: %q", s.Name, e.Script, n, e.Old)
		}
	}
	return nil
}

// Apply makes opt run this mutant: the script edits as opt.Rewrite, the Go defects ORed into
// opt.Defects. It fails if an edit no longer matches the bundle.
func (s Spec) Apply(opt *bus.Options) error {
	if err := s.Check(); err != nil {
		return err
	}
	if len(s.Edits) > 0 {
		prev, edits := opt.Rewrite, s.Edits
		opt.Rewrite = func(name, src string) string {
			if prev != nil {
				src = prev(name, src)
			}
			for _, e := range edits {
				if e.Script == name {
					src = strings.Replace(src, e.Old, e.New, 1)
				}
			}
			return src
		}
	}
	d := &opt.Defects
	x := s.Defects
	d.EvalEnqueue = d.EvalEnqueue || x.EvalEnqueue
	d.ClientClockLease = d.ClientClockLease || x.ClientClockLease
	d.ArgvRowPrefix = d.ArgvRowPrefix || x.ArgvRowPrefix
	d.PollPark = d.PollPark || x.PollPark
	d.RepeatIDs = d.RepeatIDs || x.RepeatIDs
	d.FenceLate = d.FenceLate || x.FenceLate
	d.NoRefence = d.NoRefence || x.NoRefence
	d.LaxQueueNames = d.LaxQueueNames || x.LaxQueueNames
	d.LaxIDBrand = d.LaxIDBrand || x.LaxIDBrand
	if s.AllowEngine {
		opt.Fence.AllowEngine = true
	}
	return nil
}

var catalogue = []Spec{
	// C01 fence
	{Name: "fence-late", Contract: "C01", Defect: "the minter lease (SET NX) is taken before the bundle fence runs",
		Defects: bus.Defects{FenceLate: true}},
	{Name: "no-refence", Contract: "C01", Defect: "a reconnect skips the fence",
		Defects: bus.Defects{NoRefence: true}},
	{Name: "wrong-kind-accepted", Contract: "C01", Defect: "a server that is not Valkey >= 8.1 standalone is admitted",
		AllowEngine: true},
	// C02 mint and the wire law
	{Name: "eval-edited", Contract: "C02", Defect: "enqueue sends EVAL of an edited source instead of EVALSHA of the bundle's",
		Defects: bus.Defects{EvalEnqueue: true}},
	{Name: "stray-key", Contract: "C02", Defect: "enqueue also counts into emq:{q}:enqueued, a key outside the grammar",
		Edits: []Edit{{"enqueue", "if redis.call('LLEN', KEYS[4]) == 0 then redis.call('RPUSH', KEYS[4], '1') end\nreturn 1",
			"if redis.call('LLEN', KEYS[4]) == 0 then redis.call('RPUSH', KEYS[4], '1') end\nredis.call('INCR', p .. 'enqueued')\nreturn 1"}}},
	{Name: "argv-key", Contract: "C02", Defect: "enqueue writes the row under a key built from a prefix passed in ARGV (the seed's defect) instead of its declared KEYS[1]",
		Defects: bus.Defects{ArgvRowPrefix: true},
		Edits: []Edit{
			{"enqueue", "if #ARGV ~= 3 then", "if #ARGV ~= 4 then"},
			{"enqueue", "redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0, 'payload', payload)",
				"redis.call('HSET', ARGV[4] .. id, 'state', 'pending', 'attempts', 0, 'payload', payload)"},
		}},
	// C03 duplicate
	{Name: "enqueue-overwrites", Contract: "C03", Defect: "enqueue of an existing id overwrites the row (not idempotent)",
		Edits: []Edit{{"enqueue", "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n", ""}}},
	// C04 kind
	{Name: "lax-queue-name", Contract: "C04", Defect: "the key builder sends a queue or lane name outside the grammar",
		Defects: bus.Defects{LaxQueueNames: true}},
	{Name: "lax-id-brand", Contract: "C04", Defect: "the key builder accepts a well-formed id of another brand",
		Defects: bus.Defects{LaxIDBrand: true}},
	// C05 order
	{Name: "minter-repeats", Contract: "C05", Defect: "the minter restarts its sequence at every call: ids repeat within one millisecond",
		Defects: bus.Defects{RepeatIDs: true}},
	{Name: "claim-newest", Contract: "C05", Defect: "claim pops the newest pending id (ZPOPMAX)",
		Edits: []Edit{{"claim", "redis.call('ZPOPMIN', KEYS[1])", "redis.call('ZPOPMAX', KEYS[1])"}}},
	// C06 claim
	{Name: "claim-no-increment", Contract: "C06", Defect: "claim does not increment attempts: the token never changes",
		Edits: []Edit{{"claim", "local attempts = tonumber(f[1]) + 1", "local attempts = tonumber(f[1]) + 0"}}},
	{Name: "client-clock-lease", Contract: "C06", Defect: "claim sends an instant from the client's clock and the script stores it as the deadline",
		Defects: bus.Defects{ClientClockLease: true},
		Edits:   []Edit{{"claim", "redis.call('ZADD', KEYS[2], now + lease, id)", "redis.call('ZADD', KEYS[2], lease, id)"}}},
	{Name: "pause-ignored", Contract: "C13", Defect: "claim ignores a queue-wide pause",
		Edits: []Edit{{"claim", "if redis.call('HGET', KEYS[3], 'paused') == '1' then return {} end\n", ""}}},
	// C07 stale
	{Name: "complete-any-token", Contract: "C07", Defect: "complete does not compare the token",
		Edits: []Edit{{"complete", "if tonumber(f[2]) ~= token then", "if false then"}}},
	{Name: "complete-expired-lease", Contract: "C07", Defect: "complete accepts a lease that has passed",
		Edits: []Edit{{"complete", "if not deadline or deadline <= now then", "if not deadline then"}}},
	// C08 complete
	{Name: "complete-keeps-checkpoint", Contract: "C08", Defect: "complete leaves the checkpoint behind",
		Edits: []Edit{{"complete", "redis.call('HDEL', KEYS[3], id)\n", ""}}},
	// C09 retry
	{Name: "retry-no-delay", Contract: "C09", Defect: "retry ignores the delay and returns the job to pending at once",
		Edits: []Edit{{"retry", "if delay == 0 then", "if true then"}}},
	// C10 dead
	{Name: "retry-never-buries", Contract: "C10", Defect: "retry at max attempts retries instead of burying",
		Edits: []Edit{{"retry", "if token >= max then", "if false then"}}},
	{Name: "revive-resets-attempts", Contract: "C10", Defect: "revive resets attempts to 0, so a token is issued twice",
		Edits: []Edit{{"revive", "redis.call('HSET', KEYS[1], 'state', 'pending')", "redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0)"}}},
	// C11 reap
	{Name: "reap-live-leases", Contract: "C11", Defect: "reap ignores the deadline and returns live leases",
		Edits: []Edit{{"reap", "redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now,", "redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '+inf',"}}},
	{Name: "checkpoint-dropped", Contract: "C11", Defect: "claim does not return the checkpoint to the redelivery",
		Edits: []Edit{{"claim", "if attempts > 1 then saved = redis.call('HGET', KEYS[5], id) end\n", ""}}},
	// C12 rotate
	{Name: "ring-keeps-empty-lane", Contract: "C12", Defect: "lane claim leaves a lane in the ring after popping its last id",
		Edits: []Edit{{"lane_claim", "redis.call('HINCRBY', KEYS[6], 'active:' .. g, 1)\nring_keep(p, KEYS[6], KEYS[1], g)\n",
			"redis.call('HINCRBY', KEYS[6], 'active:' .. g, 1)\n"}}},
	// C13 pause & limit
	{Name: "ceiling-ignored", Contract: "C13", Defect: "lane_ceiling records nothing: the lane's ceiling is never enforced",
		Edits: []Edit{{"lane_ceiling", "redis.call('HSET', KEYS[2], 'ceiling:' .. g, n)", "local _ = n"}}},
	// C14 park
	{Name: "poll-park", Contract: "C14", Defect: "an idle consumer polls claim every 5 ms instead of blocking on the wake key",
		Defects: bus.Defects{PollPark: true}},
	{Name: "wake-twice", Contract: "C14", Defect: "enqueue pushes a wake token even when one is waiting (the list grows past one)",
		Edits: []Edit{{"enqueue", "if redis.call('LLEN', KEYS[4]) == 0 then redis.call('RPUSH', KEYS[4], '1') end\nreturn 1",
			"redis.call('RPUSH', KEYS[4], '1')\nreturn 1"}}},
}
