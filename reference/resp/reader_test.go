package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func read(t *testing.T, in string, lim Limits) (Value, error) {
	t.Helper()
	return NewReader(bufio.NewReaderSize(strings.NewReader(in), 16), lim).Read()
}

func TestReaderTypes(t *testing.T) {
	bin := "a\r\nb\x00c"
	cases := []struct {
		in   string
		want Value
	}{
		{"+OK\r\n", Value{Type: SimpleString, Str: []byte("OK")}},
		{"+\r\n", Value{Type: SimpleString, Str: []byte{}}},
		{"-ERR bad thing\r\n", Value{Type: ErrorReply, Str: []byte("ERR bad thing")}},
		{":0\r\n", Value{Type: Integer}},
		{":-42\r\n", Value{Type: Integer, Int: -42}},
		{":9223372036854775807\r\n", Value{Type: Integer, Int: 1<<63 - 1}},
		{":-9223372036854775808\r\n", Value{Type: Integer, Int: -1 << 63}},
		{"$0\r\n\r\n", Value{Type: BulkString, Str: []byte{}}},
		{"$-1\r\n", Value{Type: BulkString, Null: true}},
		{"$6\r\n" + bin + "\r\n", Value{Type: BulkString, Str: []byte(bin)}},
		{"*-1\r\n", Value{Type: Array, Null: true}},
		{"*0\r\n", Value{Type: Array, Elems: []Value{}}},
		{"*3\r\n:1\r\n*2\r\n$1\r\nx\r\n$-1\r\n*-1\r\n", Value{Type: Array, Elems: []Value{
			{Type: Integer, Int: 1},
			{Type: Array, Elems: []Value{{Type: BulkString, Str: []byte("x")}, {Type: BulkString, Null: true}}},
			{Type: Array, Null: true},
		}}},
	}
	for _, c := range cases {
		got, err := read(t, c.in, Limits{})
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %#v, want %#v", c.in, got, c.want)
		}
	}
}

func TestReaderSequence(t *testing.T) {
	r := NewReader(bufio.NewReader(strings.NewReader(":1\r\n+two\r\n$5\r\nthree\r\n")), Limits{})
	var got []string
	for {
		v, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v.Text())
	}
	if want := []string{"1", "two", "three"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestReaderLongLine(t *testing.T) {
	long := strings.Repeat("x", 100) // longer than the 16-byte buffer used by read()
	v, err := read(t, "+"+long+"\r\n", Limits{})
	if err != nil || v.Text() != long {
		t.Fatalf("got %q, %v", v.Text(), err)
	}
	if _, err := read(t, "+"+long+"\r\n", Limits{MaxLine: 50}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("line over limit: got %v, want a protocol error", err)
	}
}

func TestReaderBigBulkChunked(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB: read in chunks
	in := "$" + strconv.Itoa(len(payload)) + "\r\n" + string(payload) + "\r\n"
	v, err := NewReader(bufio.NewReader(strings.NewReader(in)), Limits{}).Read()
	if err != nil || !bytes.Equal(v.Str, payload) {
		t.Fatalf("2 MiB bulk: err %v, equal %v", err, bytes.Equal(v.Str, payload))
	}
	// The same length announced but the stream truncated: an unexpected EOF, not a hang.
	_, err = NewReader(bufio.NewReader(strings.NewReader(in[:len(in)/2])), Limits{}).Read()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated 2 MiB bulk: got %v", err)
	}
}

func TestReaderViolations(t *testing.T) {
	lim := Limits{MaxBulk: 1024, MaxArray: 8, MaxDepth: 3, MaxLine: 64}
	cases := map[string]string{
		"unknown type":      "!oops\r\n",
		"bad integer":       ":12a\r\n",
		"empty integer":     ":\r\n",
		"integer overflow":  ":9223372036854775808\r\n",
		"bare LF":           "+OK\n",
		"negative bulk":     "$-2\r\n",
		"bulk over limit":   "$1025\r\n",
		"huge bulk":         "$99999999999999999999\r\n",
		"bulk without CRLF": "$2\r\nabXY",
		"array over limit":  "*9\r\n",
		"huge array":        "*2147483647\r\n",
		"too deep":          "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
		"negative array":    "*-5\r\n",
		"RESP3 map":         "%1\r\n+a\r\n+b\r\n",
		"line too long":     "+" + strings.Repeat("y", 200) + "\r\n",
	}
	for name, in := range cases {
		_, err := read(t, in, lim)
		var pe *ProtocolError
		if !errors.As(err, &pe) || !errors.Is(err, ErrProtocol) {
			t.Errorf("%s (%q): got %v, want *ProtocolError", name, in, err)
		}
	}
}

func TestReaderTruncated(t *testing.T) {
	full := "*2\r\n$5\r\nhello\r\n:7\r\n"
	for i := 1; i < len(full); i++ {
		_, err := read(t, full[:i], Limits{})
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut at %d (%q): got %v, want io.ErrUnexpectedEOF", i, full[:i], err)
		}
	}
	if _, err := read(t, "", Limits{}); err != io.EOF {
		t.Errorf("empty stream: got %v, want io.EOF", err)
	}
}

func TestReadIntoReusesElems(t *testing.T) {
	r := NewReader(bufio.NewReader(strings.NewReader("*2\r\n:1\r\n:2\r\n*2\r\n:3\r\n:4\r\n")), Limits{})
	var v Value
	if err := r.ReadInto(&v); err != nil {
		t.Fatal(err)
	}
	first := &v.Elems[0]
	if err := r.ReadInto(&v); err != nil {
		t.Fatal(err)
	}
	if &v.Elems[0] != first || v.Elems[1].Int != 4 {
		t.Fatalf("elems not reused or wrong: %+v", v)
	}
}

func TestWriter(t *testing.T) {
	b, err := AppendCommand(nil, "SET", []byte("k\x00"), 12, int64(-3), uint64(7), 1.5, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "*7\r\n$3\r\nSET\r\n$2\r\nk\x00\r\n$2\r\n12\r\n$2\r\n-3\r\n$1\r\n7\r\n$3\r\n1.5\r\n$1\r\n1\r\n"
	if string(b) != want {
		t.Fatalf("got %q\nwant %q", b, want)
	}
	// What the writer writes, the reader reads back as an array of bulk strings.
	v, err := NewReader(bufio.NewReader(bytes.NewReader(b)), Limits{}).Read()
	if err != nil || len(v.Elems) != 7 || string(v.Elems[1].Str) != "k\x00" {
		t.Fatalf("round trip: %+v, %v", v, err)
	}
	_, err = AppendCommand(nil, "GET", struct{}{})
	var ae *ArgError
	if !errors.As(err, &ae) || ae.Index != 1 {
		t.Fatalf("bad arg: got %v", err)
	}
}

func TestWriterNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 256)
	n := testing.AllocsPerRun(100, func() {
		buf, _ = AppendCommand(buf[:0], "EVALSHA", "0123456789abcdef0123456789abcdef01234567", 1, "key", int64(5))
	})
	if n != 0 {
		t.Fatalf("AppendCommand allocates %.1f times per call", n)
	}
}
