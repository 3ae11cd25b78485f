package mutant

import (
	"strconv"
	"strings"
	"time"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/connector"
)

// The Lua halves of the hook mutants that change a script's ARGV.
var (
	argvKeyEdits = []Edit{
		{"enqueue", "if #ARGV ~= 3 then", "if #ARGV ~= 4 then"},
		{"enqueue", "redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0, 'payload', payload)",
			"redis.call('HSET', ARGV[4] .. id, 'state', 'pending', 'attempts', 0, 'payload', payload)"},
	}
	clientClockEdits = []Edit{{"claim", "redis.call('ZADD', KEYS[2], now + lease, id)", "redis.call('ZADD', KEYS[2], lease, id)"}}
)

// chain runs prev (if any), then next.
func chain(prev, next connector.Hook) connector.Hook {
	if prev == nil {
		return next
	}
	return func(args []any) []any { return next(prev(args)) }
}

// text is a command argument as a string (the bus passes strings, a Batch []byte).
func text(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

// script is a bundle script's source with edits applied, and its SHA1.
func script(name string, edits []Edit) (src, sha string) {
	b, err := lua.Load()
	if err != nil {
		panic(err) // the embedded bundle loads, or nothing in the kit runs
	}
	ls := b.MustScript(name)
	src = ls.Source
	for _, e := range edits {
		if e.Script == name {
			src = strings.Replace(src, e.Old, e.New, 1)
		}
	}
	return src, connector.NewScript(name, src).SHA1
}

// evalShaOf reports whether args call the script of digest sha, and its KEYS count.
func evalShaOf(args []any, sha string) (int, bool) {
	if len(args) < 3 || !strings.EqualFold(text(args[0]), "EVALSHA") || text(args[1]) != sha {
		return 0, false
	}
	n, err := strconv.Atoi(text(args[2]))
	return n, err == nil && 3+n <= len(args)
}

// evalEdited turns EVALSHA of enqueue into EVAL of its source, edited.
func evalEdited() connector.Hook {
	src, sha := script(lua.Enqueue, nil)
	return func(args []any) []any {
		if _, ok := evalShaOf(args, sha); !ok {
			return args
		}
		return append([]any{"EVAL", src + "\n-- patched in place\n"}, args[2:]...)
	}
}

// argvRowPrefix appends the row key's prefix ("emq:{q}:job:") to enqueue's ARGV, for the
// edited script to build the row key from.
func argvRowPrefix() connector.Hook {
	_, sha := script(lua.Enqueue, argvKeyEdits)
	return func(args []any) []any {
		n, ok := evalShaOf(args, sha)
		if !ok || n < 1 {
			return args
		}
		row := text(args[3])
		i := strings.LastIndex(row, "job:")
		if i < 0 {
			return args
		}
		return append(append([]any(nil), args...), row[:i+len("job:")])
	}
}

// clientClockLease sends claim's lease as an instant: the client's now + lease_ms.
func clientClockLease() connector.Hook {
	_, sha := script(lua.Claim, clientClockEdits)
	return func(args []any) []any {
		n, ok := evalShaOf(args, sha)
		if !ok || 3+n >= len(args) {
			return args
		}
		ms, err := strconv.ParseInt(text(args[3+n]), 10, 64)
		if err != nil {
			return args
		}
		out := append([]any(nil), args...)
		out[3+n] = time.Now().UnixMilli() + ms
		return out
	}
}

// completeLooseDel turns EVALSHA of complete into a loose DEL of the job's row: the job is
// "completed" by a command outside the bundle, its active entry left for the reaper to find.
func completeLooseDel() connector.Hook {
	_, sha := script(lua.Complete, nil)
	return func(args []any) []any {
		if n, ok := evalShaOf(args, sha); !ok || n < 1 {
			return args
		}
		return []any{"DEL", args[3]}
	}
}
