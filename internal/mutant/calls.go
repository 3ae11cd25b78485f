package mutant

import (
	"slices"
	"strconv"

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
