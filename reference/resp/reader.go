package resp

import (
	"bufio"
	"fmt"
	"io"
)

// Limits bound what a Reader accepts, so a hostile or corrupted stream becomes a
// *ProtocolError instead of a large allocation or a deep recursion.
type Limits struct {
	MaxBulk  int64 // longest bulk string, in bytes
	MaxArray int64 // most elements in one array
	MaxDepth int   // deepest array nesting (a top-level array is depth 1)
	MaxLine  int   // longest simple-string / error / length line, in bytes
}

// DefaultLimits mirror the server's own ceilings (proto-max-bulk-len is 512 MiB).
func DefaultLimits() Limits {
	return Limits{MaxBulk: 512 << 20, MaxArray: 1 << 24, MaxDepth: 32, MaxLine: 64 << 10}
}

func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	if l.MaxBulk <= 0 {
		l.MaxBulk = d.MaxBulk
	}
	if l.MaxArray <= 0 {
		l.MaxArray = d.MaxArray
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxLine <= 0 {
		l.MaxLine = d.MaxLine
	}
	return l
}

// Reader decodes RESP2 replies in one pass over a bufio.Reader.
//
// Errors: io.EOF when the stream ends cleanly between replies, io.ErrUnexpectedEOF when it
// ends inside one, a *ProtocolError for a malformed stream, or the underlying read error.
// After any error the stream position is undefined: the caller must drop the connection.
type Reader struct {
	br  *bufio.Reader
	lim Limits
}

// NewReader returns a Reader over br; zero fields of lim take DefaultLimits.
func NewReader(br *bufio.Reader, lim Limits) *Reader {
	return &Reader{br: br, lim: lim.orDefault()}
}

// Read decodes the next reply.
func (r *Reader) Read() (Value, error) {
	var v Value
	err := r.ReadInto(&v)
	return v, err
}

// ReadInto decodes the next reply into *v, reusing v.Elems' backing array when it is large
// enough (the pipelined path reads without allocating for integer and simple replies).
func (r *Reader) ReadInto(v *Value) error {
	err := r.read(v, 0)
	if err == io.EOF {
		return io.EOF
	}
	return err
}

func protoErr(format string, a ...any) error {
	return &ProtocolError{Reason: fmt.Sprintf(format, a...)}
}

// unexpected turns an EOF inside a reply into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (r *Reader) read(v *Value, depth int) error {
	t, err := r.br.ReadByte()
	if err != nil {
		if depth > 0 {
			return unexpected(err)
		}
		return err // a clean EOF between replies stays io.EOF
	}
	elems := v.Elems[:0]
	*v = Value{Type: Type(t)}
	switch Type(t) {
	case SimpleString, ErrorReply:
		line, err := r.line()
		if err != nil {
			return err
		}
		v.Str = append(make([]byte, 0, len(line)), line...)
		return nil
	case Integer:
		line, err := r.line()
		if err != nil {
			return err
		}
		n, ok := parseInt(line)
		if !ok {
			return protoErr("bad integer %q", clip(line))
		}
		v.Int = n
		return nil
	case BulkString:
		n, err := r.length("bulk")
		if err != nil {
			return err
		}
		if n == -1 {
			v.Null = true
			return nil
		}
		if n > r.lim.MaxBulk {
			return protoErr("bulk length %d over limit %d", n, r.lim.MaxBulk)
		}
		b, err := r.bulk(int(n))
		if err != nil {
			return err
		}
		v.Str = b
		return nil
	case Array:
		n, err := r.length("array")
		if err != nil {
			return err
		}
		if n == -1 {
			v.Null = true
			return nil
		}
		if n > r.lim.MaxArray {
			return protoErr("array length %d over limit %d", n, r.lim.MaxArray)
		}
		if depth+1 > r.lim.MaxDepth {
			return protoErr("array nesting over depth %d", r.lim.MaxDepth)
		}
		// Grow with what actually arrives, so a hostile length costs no up-front allocation.
		if elems == nil || int64(cap(elems)) < n {
			elems = make([]Value, 0, min(n, 1024))
		}
		for i := int64(0); i < n; i++ {
			if int64(len(elems)) < int64(cap(elems)) {
				elems = elems[:len(elems)+1]
			} else {
				elems = append(elems, Value{})
			}
			if err := r.read(&elems[len(elems)-1], depth+1); err != nil {
				return unexpected(err)
			}
		}
		v.Elems = elems
		return nil
	}
	return protoErr("unknown type byte %q", t)
}

// line returns the bytes up to CRLF (not included). The slice aliases the bufio buffer when
// the line fits, so it is valid only until the next read.
func (r *Reader) line() ([]byte, error) {
	b, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Longer than the buffer: accumulate up to MaxLine.
		acc := append([]byte(nil), b...)
		for err == bufio.ErrBufferFull {
			if len(acc) > r.lim.MaxLine {
				return nil, protoErr("line over limit %d", r.lim.MaxLine)
			}
			b, err = r.br.ReadSlice('\n')
			acc = append(acc, b...)
		}
		b = acc
	}
	if err != nil {
		return nil, unexpected(err)
	}
	if len(b) > r.lim.MaxLine+2 {
		return nil, protoErr("line over limit %d", r.lim.MaxLine)
	}
	if len(b) < 2 || b[len(b)-2] != '\r' {
		return nil, protoErr("line not terminated by CRLF")
	}
	return b[:len(b)-2], nil
}

func (r *Reader) length(what string) (int64, error) {
	line, err := r.line()
	if err != nil {
		return 0, err
	}
	n, ok := parseInt(line)
	if !ok || n < -1 {
		return 0, protoErr("bad %s length %q", what, clip(line))
	}
	return n, nil
}

// bulk reads n payload bytes and the CRLF after them. Large payloads are read in chunks and
// the buffer grows only as bytes arrive.
func (r *Reader) bulk(n int) ([]byte, error) {
	const chunk = 1 << 20
	var b []byte
	if n <= chunk {
		b = make([]byte, n)
		if _, err := io.ReadFull(r.br, b); err != nil {
			return nil, unexpected(err)
		}
	} else {
		b = make([]byte, 0, chunk)
		for len(b) < n {
			m := min(n-len(b), chunk)
			if cap(b)-len(b) < m {
				b = append(b[:cap(b)], make([]byte, m)...)[:len(b)]
			}
			if _, err := io.ReadFull(r.br, b[len(b):len(b)+m]); err != nil {
				return nil, unexpected(err)
			}
			b = b[:len(b)+m]
		}
	}
	cr, err := r.br.ReadByte()
	if err != nil {
		return nil, unexpected(err)
	}
	lf, err := r.br.ReadByte()
	if err != nil {
		return nil, unexpected(err)
	}
	if cr != '\r' || lf != '\n' {
		return nil, protoErr("bulk string not followed by CRLF")
	}
	return b, nil
}

// parseInt is a strict decimal parse: optional '-', at least one digit, no overflow.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<63-d)/10 {
			return 0, false // past the int64 range (MinInt64 itself is allowed)
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), true // -(1<<63) wraps to MinInt64, which is what we want
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

func clip(b []byte) string {
	if len(b) > 32 {
		return string(b[:32]) + "…"
	}
	return string(b)
}
