package mutant

import (
	"context"
	"strings"
	"sync"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/fence"
)

// argvIDEdits make extend take a queue key where the row key belongs and build the row key
// from the id in ARGV (the Lua half of the argv-row-id mutant).
var argvIDEdits = []Edit{
	{"extend", "local p, err = declare({'job:' .. id, 'active'})", "local p, err = declare({'meta', 'active'})"},
	{"extend", "local refused = stale(KEYS[1], KEYS[2], id, token, now)", "local refused = stale(p .. 'job:' .. id, KEYS[2], id, token, now)"},
}

// argvRowID declares the queue's meta key in extend's KEYS[1] instead of the job's row key:
// the edited script finds the row from the id in ARGV.
func argvRowID() connector.Hook {
	_, sha := script(lua.Extend, argvIDEdits)
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
		out := append([]any(nil), args...)
		out[3] = row[:i] + "meta"
		return out
	}
}

// reloadCRLF loads each script's exact source the first time, but every later SCRIPT LOAD of
// it (a NOSCRIPT after SCRIPT FLUSH, say) sends a second copy with CRLF line endings, as a port
// that re-reads its scripts from a Windows checkout would: the server answers another SHA1.
func reloadCRLF() connector.Hook {
	var mu sync.Mutex
	loaded := map[string]bool{}
	return func(args []any) []any {
		if len(args) != 3 || !strings.EqualFold(text(args[0]), "SCRIPT") || !strings.EqualFold(text(args[1]), "LOAD") {
			return args
		}
		src := text(args[2])
		mu.Lock()
		again := loaded[src]
		loaded[src] = true
		mu.Unlock()
		if !again {
			return args
		}
		return []any{args[0], args[1], strings.ReplaceAll(src, "\n", "\r\n")}
	}
}

// infoAfterFence runs the canon's handshake, then reads INFO server to log the server's build
// and uptime, as a port's connect banner might: a command outside A4.
func infoAfterFence(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error {
	full := fence.OnConnect(canon, opt)
	return func(ctx context.Context, c *connector.Conn) error {
		if err := full(ctx, c); err != nil {
			return err
		}
		_, err := c.Do(ctx, "INFO", "server")
		return err
	}
}

// strlenMinterAfterFence probes the lease key of the last worker id with STRLEN after the
// fence: a read, but not one of the commands A4 allows on the minter keys.
func strlenMinterAfterFence(canon *lua.Bundle, opt fence.Options) func(context.Context, *connector.Conn) error {
	full := fence.OnConnect(canon, opt)
	return func(ctx context.Context, c *connector.Conn) error {
		if err := full(ctx, c); err != nil {
			return err
		}
		_, err := c.Do(ctx, "STRLEN", "{emq}:minter:1023")
		return err
	}
}
