package mutant

import (
	"context"
	"slices"
	"strconv"
	"sync"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/bus"
)

// callMutants call a canonical script other than its header says (lua/README.md's table of
// KEYS and ARGV): the bundle is the real one, so the script refuses the call EMQARG and the op
// the port was asked for fails. Each breaks the calling convention of one script.
var callMutants = []Spec{
	{Name: "pause-passes-flag", Contract: "C06", Rule: "queue-pause", Defect: "pause passes the flag it means to set as ARGV[1] (the script takes no ARGV)",
		Go: callHook(lua.Pause, func(keys, argv []any) ([]any, []any) { return keys, append(argv, "1") })},
	{Name: "resume-keys-reordered", Contract: "C06", Rule: "queue-pause", Defect: "resume declares its keys as meta, ring, pending, wake (the header: meta, pending, ring, wake)",
		Go: callHook(lua.Resume, func(keys, argv []any) ([]any, []any) {
			if len(keys) == 4 {
				keys[1], keys[2] = keys[2], keys[1]
			}
			return keys, argv
		})},
	{Name: "lane-pause-passes-key", Contract: "C13", Rule: "lanes-pause-leaves-ring", Defect: "lane_pause passes the lane's key (emq:{q}:lane:<g>) as ARGV[1], where the lane's name belongs",
		Go: callHook(lua.LanePause, func(keys, argv []any) ([]any, []any) {
			if len(keys) > 0 && len(argv) > 0 {
				p := text(keys[0])
				argv[0] = p[:len(p)-len("lanes")] + "lane:" + text(argv[0])
			}
			return keys, argv
		})},
	{Name: "lane-resume-other-lane", Contract: "C13", Rule: "lanes-resume-rejoins", Defect: "lane_resume passes in ARGV a lane other than the one its KEYS[1] names (the name with a suffix)",
		Go: callHook(lua.LaneResume, func(keys, argv []any) ([]any, []any) {
			if len(argv) > 0 {
				argv[0] = text(argv[0]) + "x"
			}
			return keys, argv
		})},
	{Name: "purge-other-id", Contract: "C10", Rule: "wire-argv-id", Defect: "purge passes in ARGV an id other than the one its KEYS[1] row names (the last digit changed)",
		Go: callHook(lua.Purge, otherID(0))},
	{Name: "revive-other-id", Contract: "C10", Rule: "wire-argv-id", Defect: "revive passes in ARGV an id other than the one its KEYS[1] row names (the last digit changed)",
		Go: callHook(lua.Revive, otherID(0))},
	{Name: "enqueue-batch-other-id", Contract: "C02", Rule: "wire-argv-id", Defect: "enqueue_batch passes in ARGV, for its first job, an id other than the one that job's row key in KEYS names",
		Go: callHook(lua.EnqueueBatch, otherID(0))},
}

// callHook is a Go mutant that rewrites every call of the canonical script name: f gets its
// KEYS and ARGV (copies) and returns those to send.
func callHook(name string, f func(keys, argv []any) ([]any, []any)) func(*bus.Options) Wrap {
	return seams(func(s *bus.Seams) {
		_, sha := script(name, nil)
		s.Hook = chain(s.Hook, func(args []any) []any {
			n, ok := evalShaOf(args, sha)
			if !ok {
				return args
			}
			keys, argv := f(slices.Clone(args[3:3+n]), slices.Clone(args[3+n:]))
			out := append([]any{args[0], args[1], strconv.Itoa(len(keys))}, keys...)
			return append(out, argv...)
		})
	})
}

// otherID changes the last character of ARGV[i], a JOB id, to another base62 digit: still an
// id, but not the one the row key names.
func otherID(i int) func(keys, argv []any) ([]any, []any) {
	return func(keys, argv []any) ([]any, []any) {
		if i < len(argv) {
			id := []byte(text(argv[i]))
			if n := len(id); n > 0 {
				if id[n-1] == '0' {
					id[n-1] = '1'
				} else {
					id[n-1] = '0'
				}
			}
			argv[i] = string(id)
		}
		return keys, argv
	}
}

// uncheckedRange is a Go mutant of a port that passes an op's integer to its script unchecked,
// its script's range widened by edits: the reference bus checks the range itself before any byte
// is sent, so the mutant carries a value the bus refuses past that check as an in-range stand-in
// (the front) and puts it back on the wire (the hook). out tells the values the widened script
// admits and the bus does not.
func uncheckedRange(name string, edits []Edit, out func(int64) bool) func(*bus.Options) Wrap {
	return func(opt *bus.Options) Wrap {
		c := carried(opt, name, edits, 99_999_999_000_000, out)
		return func(d drivers.Driver) drivers.Driver { return &rangeFront{Driver: d, c: c, op: name} }
	}
}

// carried is a carrier whose values a command hook puts back on each call of op's edited
// script (each op runs the script of its name).
func carried(opt *bus.Options, op string, edits []Edit, base int64, out func(int64) bool) *carrier {
	c := &carrier{out: out, base: base, held: map[string]int64{}}
	_, sha := script(op, edits)
	opt.Test.Hook = chain(opt.Test.Hook, func(args []any) []any {
		if _, ok := evalShaOf(args, sha); !ok {
			return args
		}
		return c.restore(args)
	})
	return c
}

// carrier holds the stand-ins it handed out, each for one value: base+1, base+2, … (in range
// for the checks the value is carried past, and unlike any value a clause sends).
type carrier struct {
	out  func(int64) bool
	base int64
	mu   sync.Mutex
	next int64
	held map[string]int64
}

// standIn is v, or, when op is the carrier's script, a fresh in-range stand-in for a v the bus
// would refuse.
func (f *rangeFront) standIn(op string, v int64) int64 {
	if op != f.op {
		return v
	}
	return f.c.hold(v)
}

// hold is v, or a fresh stand-in for a v out tells.
func (c *carrier) hold(v int64) int64 {
	if !c.out(v) {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	s := c.base + c.next
	c.held[strconv.FormatInt(s, 10)] = v
	return s
}

// restore puts back on a script call's arguments the values the stand-ins carried.
func (c *carrier) restore(args []any) []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(args)
	for i := 3; i < len(out); i++ {
		if v, ok := c.held[text(out[i])]; ok {
			out[i] = strconv.FormatInt(v, 10)
		}
	}
	return out
}

// rangeFront hands the bus stand-ins for the lease and delay values it would refuse.
type rangeFront struct {
	drivers.Driver
	c  *carrier
	op string // the script whose value it carries
}

func (f *rangeFront) Claim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	a.LeaseMS = f.standIn(lua.Claim, a.LeaseMS)
	return f.Driver.Claim(ctx, a)
}

func (f *rangeFront) LaneClaim(ctx context.Context, a protocol.ClaimArgs) (*protocol.ClaimResult, error) {
	a.LeaseMS = f.standIn(lua.LaneClaim, a.LeaseMS)
	return f.Driver.LaneClaim(ctx, a)
}

func (f *rangeFront) Extend(ctx context.Context, a protocol.ExtendArgs) (protocol.ExtendResult, error) {
	a.LeaseMS = f.standIn(lua.Extend, a.LeaseMS)
	return f.Driver.Extend(ctx, a)
}

func (f *rangeFront) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	op := lua.Enqueue
	if a.Lane != "" {
		op = lua.LaneEnqueue
	}
	a.DelayMS = f.standIn(op, a.DelayMS)
	return f.Driver.Enqueue(ctx, a)
}

func (f *rangeFront) Clock(ctx context.Context, a protocol.ClockArgs) error {
	return f.Driver.(drivers.Clocker).Clock(ctx, a)
}

func (f *rangeFront) EnqueueBatch(ctx context.Context, a protocol.EnqueueBatchArgs) (protocol.EnqueueBatchResult, error) {
	return f.Driver.(drivers.Batcher).EnqueueBatch(ctx, a)
}

func (f *rangeFront) ClaimBatch(ctx context.Context, a protocol.ClaimBatchArgs) (protocol.ClaimBatchResult, error) {
	a.LeaseMS = f.standIn(lua.ClaimBatch, a.LeaseMS)
	return f.Driver.(drivers.Batcher).ClaimBatch(ctx, a)
}

func (f *rangeFront) CompleteBatch(ctx context.Context, a protocol.CompleteBatchArgs) (protocol.CompleteBatchResult, error) {
	return f.Driver.(drivers.Batcher).CompleteBatch(ctx, a)
}
