// Package vkadmin is the bench's own use of a Valkey server beside the systems under test:
// deleting a run's keys and reading whether a queue is empty.
package vkadmin

import (
	"context"
	"fmt"

	"github.com/echomq/kit/reference/connector"
)

// UnlinkMatch deletes every key matching pattern on one node.
func UnlinkMatch(ctx context.Context, c *connector.Conn, pattern string) error {
	cursor := "0"
	for {
		v, err := c.Do(ctx, "SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
		if err != nil {
			return fmt.Errorf("bench: scan %s: %w", pattern, err)
		}
		if len(v.Elems) != 2 {
			return fmt.Errorf("bench: scan %s: unexpected reply", pattern)
		}
		cursor = string(v.Elems[0].Str)
		if keys := v.Elems[1].Elems; len(keys) > 0 {
			cmd := make([]any, 0, len(keys)+1)
			cmd = append(cmd, "UNLINK")
			for _, k := range keys {
				cmd = append(cmd, string(k.Str))
			}
			if _, err := c.Do(ctx, cmd...); err != nil {
				return fmt.Errorf("bench: unlink: %w", err)
			}
		}
		if cursor == "0" {
			return nil
		}
	}
}

// AllZero sends cmds (each answering an integer: ZCARD, LLEN) in one pipeline and reports
// whether every reply is 0.
func AllZero(ctx context.Context, c *connector.Conn, cmds ...connector.Cmd) (bool, error) {
	vs, err := c.Pipeline(ctx, cmds...)
	if err != nil {
		return false, err
	}
	if len(vs) != len(cmds) {
		return false, fmt.Errorf("bench: %d replies to %d commands", len(vs), len(cmds))
	}
	for _, v := range vs {
		if e := v.Err(); e != nil {
			return false, e
		}
		if v.Int != 0 {
			return false, nil
		}
	}
	return true, nil
}

// Cmd is one command for AllZero.
func Cmd(args ...any) connector.Cmd { return connector.Cmd{Args: args} }
