package connector

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/echomq/kit/reference/resp"
)

// Batch is a reusable, pre-encoded explicit pipeline: commands are encoded as they are added,
// so Exec is one copy and one write. Reset it and add again to reuse its memory. Not safe for
// concurrent use.
type Batch struct {
	buf     []byte
	ends    []int // end offset of each command in buf
	scripts []batchScript
	err     error
}

type batchScript struct {
	idx    int
	script *Script
}

// Add appends one command. An unsupported argument type is reported by Exec (and Err).
func (b *Batch) Add(args ...any) *Batch {
	if b.err != nil {
		return b
	}
	start := len(b.buf)
	var err error
	b.buf, err = resp.AppendCommand(b.buf, args...)
	if err != nil {
		b.buf = b.buf[:start]
		b.err = fmt.Errorf("connector: batch command %d: %w", len(b.ends), err)
		return b
	}
	b.ends = append(b.ends, len(b.buf))
	return b
}

// EvalSha appends EVALSHA of s; Exec loads the script and retries this command once if the
// server answers NOSCRIPT.
func (b *Batch) EvalSha(s *Script, keys []string, args ...any) *Batch {
	if b.err != nil {
		return b
	}
	start := len(b.buf)
	var err error
	b.buf, err = appendEvalSha(b.buf, s, keys, args)
	if err != nil {
		b.buf = b.buf[:start]
		b.err = fmt.Errorf("connector: batch command %d: %w", len(b.ends), err)
		return b
	}
	b.scripts = append(b.scripts, batchScript{idx: len(b.ends), script: s})
	b.ends = append(b.ends, len(b.buf))
	return b
}

// AddFrom appends command i of src, already encoded (with its NOSCRIPT retry if src added it
// with EvalSha): a router re-sends one command of a batch on another node this way.
func (b *Batch) AddFrom(src *Batch, i int) *Batch {
	if b.err != nil {
		return b
	}
	start := 0
	if i > 0 {
		start = src.ends[i-1]
	}
	for _, bs := range src.scripts {
		if bs.idx == i {
			b.scripts = append(b.scripts, batchScript{idx: len(b.ends), script: bs.script})
		}
	}
	b.buf = append(b.buf, src.buf[start:src.ends[i]]...)
	b.ends = append(b.ends, len(b.buf))
	return b
}

// Len is the number of commands added.
func (b *Batch) Len() int { return len(b.ends) }

// Err is the first encoding error, if any.
func (b *Batch) Err() error { return b.err }

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.buf = b.buf[:0]
	b.ends = b.ends[:0]
	clear(b.scripts)
	b.scripts = b.scripts[:0]
	b.err = nil
}

// Bytes are the encoded commands (the exact wire Exec writes).
func (b *Batch) Bytes() []byte { return b.buf }

// Exec sends the batch in one write and appends the replies, in order, to dst[:0]. Error
// replies stay Values. EVALSHA commands added with Batch.EvalSha that answer NOSCRIPT are
// retried once after SCRIPT LOAD (they did not run, so the retry cannot double an effect);
// note that the retried commands then run after the rest of the batch.
func (c *Conn) Exec(ctx context.Context, b *Batch, dst []resp.Value) ([]resp.Value, error) {
	if b.err != nil {
		return dst[:0], b.err
	}
	n := len(b.ends)
	if n == 0 {
		return dst[:0], nil
	}
	wire := b.buf
	if c.opt.Hook != nil {
		var err error
		if wire, err = c.hookBatch(b); err != nil {
			return dst[:0], err
		}
	}
	out, err := c.roundTrip(ctx, getCall(n), wire, dst[:0], noDeadline)
	if err != nil || len(b.scripts) == 0 {
		return out, err
	}
	return c.retryNoScript(ctx, b, out)
}

// hookBatch passes each command of b through the Hook (read back from its encoding, every
// argument as []byte) and returns the re-encoded batch.
func (c *Conn) hookBatch(b *Batch) ([]byte, error) {
	rd := resp.NewReader(bufio.NewReader(bytes.NewReader(b.buf)), resp.Limits{})
	var wire []byte
	for range b.ends {
		var v resp.Value
		if err := rd.ReadInto(&v); err != nil {
			return nil, fmt.Errorf("connector: hook: %w", err)
		}
		args := make([]any, len(v.Elems))
		for i, e := range v.Elems {
			args[i] = e.Str
		}
		var err error
		if wire, err = resp.AppendCommand(wire, c.opt.Hook(args)...); err != nil {
			return nil, fmt.Errorf("connector: hook: %w", err)
		}
	}
	return wire, nil
}

func (c *Conn) retryNoScript(ctx context.Context, b *Batch, out []resp.Value) ([]resp.Value, error) {
	var redo []int
	loaded := map[*Script]bool{}
	for _, bs := range b.scripts {
		v := out[bs.idx]
		if v.Type != resp.ErrorReply || !errors.Is(v.Err(), resp.ErrNoScript) {
			continue
		}
		if !loaded[bs.script] {
			if err := c.LoadScript(ctx, bs.script); err != nil {
				return out, err
			}
			loaded[bs.script] = true
		}
		redo = append(redo, bs.idx)
	}
	if len(redo) == 0 {
		return out, nil
	}
	var wire []byte
	for _, i := range redo {
		start := 0
		if i > 0 {
			start = b.ends[i-1]
		}
		wire = append(wire, b.buf[start:b.ends[i]]...)
	}
	again, err := c.roundTrip(ctx, getCall(len(redo)), wire, nil, noDeadline)
	if err != nil {
		return out, err
	}
	for k, i := range redo {
		out[i] = again[k]
	}
	return out, nil
}
