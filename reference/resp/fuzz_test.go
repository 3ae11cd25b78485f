package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the reader under tight limits. It must never panic or
// allocate past the limits, every error must be io.EOF, io.ErrUnexpectedEOF or a
// *ProtocolError, and every value it accepts must survive a re-encode/re-read round trip.
func FuzzReader(f *testing.F) {
	lim := Limits{MaxBulk: 1 << 16, MaxArray: 1 << 10, MaxDepth: 8, MaxLine: 1 << 10}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bufio.NewReaderSize(bytes.NewReader(in), 16), lim)
		for i := 0; i < 64; i++ {
			v, err := r.Read()
			if err != nil {
				if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrProtocol) {
					t.Fatalf("untyped error %T: %v", err, err)
				}
				return
			}
			enc := appendValue(nil, v)
			back, err := NewReader(bufio.NewReader(bytes.NewReader(enc)), lim).Read()
			if err != nil {
				t.Fatalf("re-read of %q: %v", enc, err)
			}
			if !bytes.Equal(appendValue(nil, back), enc) {
				t.Fatalf("round trip changed %q", enc)
			}
		}
	})
}

// appendValue is the canonical encoding of a value (test-only; the client never writes replies).
func appendValue(b []byte, v Value) []byte {
	switch v.Type {
	case SimpleString, ErrorReply:
		b = append(b, byte(v.Type))
		b = append(b, v.Str...)
		return append(b, '\r', '\n')
	case Integer:
		b = append(b, ':')
		b = append(b, v.Text()...)
		return append(b, '\r', '\n')
	case BulkString:
		if v.Null {
			return append(b, "$-1\r\n"...)
		}
		return AppendBulk(b, v.Str)
	case Array:
		if v.Null {
			return append(b, "*-1\r\n"...)
		}
		b = AppendArrayLen(b, len(v.Elems))
		for _, e := range v.Elems {
			b = appendValue(b, e)
		}
	}
	return b
}
