// Package portserver speaks the port protocol (contracts/PROTOCOL.md Part B) on a reader and a
// writer over any drivers.Driver: one JSON request per line in, one reply per line out, in
// order. It is how the reference bus becomes a port binary (cmd/emq-port).
package portserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
)

// maxLine bounds one request line (payloads travel inside it, base64).
const maxLine = 64 << 20

// Options are the server's mutation seam: internal/mutant's wire mutants set them to break the
// line protocol itself, which no driver front can reach. The zero value serves the protocol.
type Options struct {
	// Reply, when set, is handed each request line and its encoded reply (no newline) and
	// returns the lines to print instead; an error ends the session after they are printed
	// (Serve returns it, and emq-port exits 1).
	Reply func(req, reply []byte) ([][]byte, error)
	// Input, when set, wraps the standard input before a line of it is read.
	Input func(io.Reader) io.Reader
}

// ServeFactory starts one session from f and serves it.
func ServeFactory(ctx context.Context, f drivers.Factory, in io.Reader, out io.Writer) error {
	return ServeFactoryWith(ctx, f, in, out, Options{})
}

// ServeFactoryWith is ServeFactory with opt's seams.
func ServeFactoryWith(ctx context.Context, f drivers.Factory, in io.Reader, out io.Writer, opt Options) error {
	d, err := f.Start(ctx)
	if err != nil {
		return fmt.Errorf("portserver: start %s: %w", f.Name(), err)
	}
	return ServeWith(ctx, d, in, out, opt)
}

// Serve answers requests from in on out until a close request (answered, then nil), the end of
// in (the driver is closed, nil), a write failure or ctx's end. A park waits by design (up to
// its timeout_ms): the end of in cuts it short, so a port whose kit went away exits promptly.
func Serve(ctx context.Context, d drivers.Driver, in io.Reader, out io.Writer) error {
	return ServeWith(ctx, d, in, out, Options{})
}

// ServeWith is Serve with opt's seams.
func ServeWith(ctx context.Context, d drivers.Driver, in io.Reader, out io.Writer, opt Options) error {
	if opt.Input != nil {
		in = opt.Input(in)
	}
	lines, ended, stop := readLines(in)
	defer stop()
	w := bufio.NewWriter(out)
	for {
		if err := ctx.Err(); err != nil {
			d.Close(context.WithoutCancel(ctx))
			return err
		}
		var l input
		select {
		case l = <-lines:
		case <-ctx.Done():
			continue
		}
		line, err := l.line, l.err
		if len(bytes.TrimSpace(line)) > 0 {
			if end, serr := serveLine(ctx, d, w, line, ended, opt); end {
				return serr
			}
		}
		if err != nil { // the input ended, after its last line or inside it: nothing more comes
			d.Close(context.WithoutCancel(ctx))
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("portserver: read: %w", err)
		}
	}
}

// serveLine answers one request line on w; end says the session is over (a close answered, a
// reply that could not be written, the Reply seam's error), with what Serve returns then.
func serveLine(ctx context.Context, d drivers.Driver, w *bufio.Writer, line []byte, ended <-chan struct{}, opt Options) (end bool, err error) {
	opCtx, done := untilEnd(ctx, line, ended)
	reply, closing := drivers.Dispatch(opCtx, d, line)
	done()
	buf, merr := json.Marshal(reply)
	if merr != nil {
		buf, _ = json.Marshal(protocol.Reply{Seq: reply.Seq, Error: &protocol.WireError{Type: protocol.ErrTypeInternal, Message: "encode reply: " + merr.Error()}})
	}
	outs, herr := [][]byte{buf}, error(nil)
	if opt.Reply != nil {
		outs, herr = opt.Reply(line, buf)
	}
	for _, o := range outs {
		w.Write(o)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		d.Close(context.WithoutCancel(ctx))
		return true, fmt.Errorf("portserver: write: %w", err)
	}
	if herr != nil {
		if !closing {
			d.Close(context.WithoutCancel(ctx))
		}
		return true, herr
	}
	return closing, nil
}

// input is one line read, or the error that ended the input.
type input struct {
	line []byte
	err  error
}

// readLines reads in on its own goroutine, one line at a time as Serve takes them; ended is
// closed when in ends (before that end is handed over). stop releases the goroutine.
func readLines(in io.Reader) (lines <-chan input, ended <-chan struct{}, stop func()) {
	ch, end, quit := make(chan input), make(chan struct{}), make(chan struct{})
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := readLine(r)
			if err != nil {
				close(end)
			}
			select {
			case ch <- input{line, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch, end, func() { close(quit) }
}

// untilEnd is ctx for one request; a park's is also cancelled when the input ends, since
// nobody is left to read its reply. (The input is read one line ahead, so it ends during an op
// only when that op was the last line.) Other ops are short and run to their end.
func untilEnd(ctx context.Context, line []byte, ended <-chan struct{}) (context.Context, context.CancelFunc) {
	var op struct {
		Op string `json:"op"`
	}
	if json.Unmarshal(line, &op) != nil || op.Op != "park" {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-ended:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// readLine reads one line without its newline; a line over maxLine is an error.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("request line over %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}
