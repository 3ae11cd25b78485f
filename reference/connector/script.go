package connector

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/echomq/kit/reference/resp"
)

var noDeadline time.Time

// Script is a Lua script known by its SHA1, run EVALSHA-first.
type Script struct {
	Name, Source, SHA1 string
}

// NewScript names source and computes its SHA1 (lower-case hex, as the server reports it).
func NewScript(name, source string) *Script {
	sum := sha1.Sum([]byte(source))
	return &Script{Name: name, Source: source, SHA1: hex.EncodeToString(sum[:])}
}

func appendEvalSha(b []byte, s *Script, keys []string, args []any) ([]byte, error) {
	b = resp.AppendArrayLen(b, 3+len(keys)+len(args))
	b = resp.AppendBulkString(b, "EVALSHA")
	b = resp.AppendBulkString(b, s.SHA1)
	b = resp.AppendBulkInt(b, int64(len(keys)))
	for _, k := range keys {
		b = resp.AppendBulkString(b, k)
	}
	return resp.AppendArgs(b, 3+len(keys), args...)
}

// evalShaArgs spells a script call out as one command for a Hook.
func evalShaArgs(s *Script, keys []string, args []any) []any {
	cmd := make([]any, 0, 3+len(keys)+len(args))
	cmd = append(cmd, "EVALSHA", s.SHA1, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return append(cmd, args...)
}

// EvalSha runs s with EVALSHA. On NOSCRIPT it loads the exact source with SCRIPT LOAD, checks
// the returned SHA1 is s.SHA1 (else a *ScriptSHAError) and retries once; a NOSCRIPT script did
// not run, so the retry cannot double its effect. An error reply is returned as the error
// (*resp.ServerError, matching emqerr sentinels) alongside its Value.
func (c *Conn) EvalSha(ctx context.Context, s *Script, keys []string, args ...any) (resp.Value, error) {
	v, err := c.evalSha(ctx, s, keys, args)
	if err == nil || !errors.Is(err, resp.ErrNoScript) {
		return v, err
	}
	if err := c.LoadScript(ctx, s); err != nil {
		return resp.Value{}, err
	}
	return c.evalSha(ctx, s, keys, args)
}

func (c *Conn) evalSha(ctx context.Context, s *Script, keys []string, args []any) (resp.Value, error) {
	cl := getCall(1)
	var err error
	if c.opt.Hook != nil {
		cl.wire, err = resp.AppendCommand(cl.wire[:0], c.opt.Hook(evalShaArgs(s, keys, args))...)
	} else {
		cl.wire, err = appendEvalSha(cl.wire[:0], s, keys, args)
	}
	if err != nil {
		putCall(cl)
		return resp.Value{}, fmt.Errorf("connector: script %s: %w", s.Name, err)
	}
	var one [1]resp.Value
	out, err := c.roundTrip(ctx, cl, cl.wire, one[:0], noDeadline)
	if err != nil {
		return resp.Value{}, err
	}
	return out[0], out[0].Err()
}

// LoadScript sends SCRIPT LOAD of s.Source and checks the digest the server returns.
func (c *Conn) LoadScript(ctx context.Context, s *Script) error {
	v, err := c.Do(ctx, "SCRIPT", "LOAD", s.Source)
	if err != nil {
		return fmt.Errorf("connector: script %s: SCRIPT LOAD: %w", s.Name, err)
	}
	if got := strings.ToLower(v.Text()); v.Type != resp.BulkString || got != s.SHA1 {
		return &ScriptSHAError{Name: s.Name, Want: s.SHA1, Got: v.Text()}
	}
	return nil
}
