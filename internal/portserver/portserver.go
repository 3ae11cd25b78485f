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

// ServeFactory starts one session from f and serves it.
func ServeFactory(ctx context.Context, f drivers.Factory, in io.Reader, out io.Writer) error {
	d, err := f.Start(ctx)
	if err != nil {
		return fmt.Errorf("portserver: start %s: %w", f.Name(), err)
	}
	return Serve(ctx, d, in, out)
}

// Serve answers requests from in on out until a close request (answered, then nil), the end of
// in (the driver is closed, nil), a write failure or ctx's end.
func Serve(ctx context.Context, d drivers.Driver, in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriter(out)
	for {
		if err := ctx.Err(); err != nil {
			d.Close(context.WithoutCancel(ctx))
			return err
		}
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				d.Close(context.WithoutCancel(ctx))
				if err == io.EOF {
					return nil
				}
				return fmt.Errorf("portserver: read: %w", err)
			}
			continue
		}
		reply, closing := drivers.Dispatch(ctx, d, line)
		buf, merr := json.Marshal(reply)
		if merr != nil {
			buf, _ = json.Marshal(protocol.Reply{Seq: reply.Seq, Error: &protocol.WireError{Type: protocol.ErrTypeInternal, Message: "encode reply: " + merr.Error()}})
		}
		w.Write(buf)
		w.WriteByte('\n')
		if err := w.Flush(); err != nil {
			d.Close(context.WithoutCancel(ctx))
			return fmt.Errorf("portserver: write: %w", err)
		}
		if closing {
			return nil
		}
	}
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
