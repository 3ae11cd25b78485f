package resp

import (
	"fmt"
	"math"
	"strconv"
)

// ArgError is a command argument of a type the writer cannot encode.
type ArgError struct {
	Index int
	Type  string
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("resp: argument %d: unsupported type %s", e.Index, e.Type)
}

// AppendCommand appends args as one RESP2 command (an array of bulk strings) to b.
// Accepted argument types: string, []byte, int, int64, int32, uint, uint64, uint32, float64,
// bool (as 1/0). The args do not escape, so callers passing literals do not allocate.
func AppendCommand(b []byte, args ...any) ([]byte, error) {
	b = AppendArrayLen(b, len(args))
	for i, a := range args {
		var ok bool
		if b, ok = appendArg(b, a); !ok {
			return b, &ArgError{Index: i, Type: typeName(a)}
		}
	}
	return b, nil
}

// AppendArgs appends args as bulk strings without an array header (for commands assembled
// from parts, e.g. EVALSHA sha n keys… args…).
func AppendArgs(b []byte, first int, args ...any) ([]byte, error) {
	for i, a := range args {
		var ok bool
		if b, ok = appendArg(b, a); !ok {
			return b, &ArgError{Index: first + i, Type: typeName(a)}
		}
	}
	return b, nil
}

func appendArg(b []byte, a any) ([]byte, bool) {
	switch v := a.(type) {
	case string:
		return AppendBulkString(b, v), true
	case []byte:
		return AppendBulk(b, v), true
	case int:
		return AppendBulkInt(b, int64(v)), true
	case int64:
		return AppendBulkInt(b, v), true
	case int32:
		return AppendBulkInt(b, int64(v)), true
	case uint:
		return AppendBulkUint(b, uint64(v)), true
	case uint64:
		return AppendBulkUint(b, v), true
	case uint32:
		return AppendBulkUint(b, uint64(v)), true
	case float64:
		return AppendBulkFloat(b, v), true
	case bool:
		if v {
			return AppendBulkString(b, "1"), true
		}
		return AppendBulkString(b, "0"), true
	}
	return b, false
}

// typeName names an unsupported argument's type without letting the value escape.
func typeName(a any) string {
	switch a.(type) {
	case nil:
		return "nil"
	case float32:
		return "float32"
	case int8, int16, uint8, uint16:
		return "small integer"
	case []string:
		return "[]string"
	case []any:
		return "[]any"
	case error:
		return "error"
	case fmt.Stringer:
		return "Stringer"
	}
	return "non-scalar"
}

// AppendArrayLen appends an array header *n\r\n.
func AppendArrayLen(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends p as a bulk string.
func AppendBulk(b []byte, p []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(p)), 10)
	b = append(b, '\r', '\n')
	b = append(b, p...)
	return append(b, '\r', '\n')
}

// AppendBulkString appends s as a bulk string.
func AppendBulkString(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendBulkInt appends i in decimal as a bulk string.
func AppendBulkInt(b []byte, i int64) []byte {
	var tmp [20]byte
	return AppendBulk(b, strconv.AppendInt(tmp[:0], i, 10))
}

// AppendBulkUint appends u in decimal as a bulk string.
func AppendBulkUint(b []byte, u uint64) []byte {
	var tmp [20]byte
	return AppendBulk(b, strconv.AppendUint(tmp[:0], u, 10))
}

// AppendBulkFloat appends f as a bulk string in the server's float syntax (inf, -inf).
func AppendBulkFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return AppendBulkString(b, "inf")
	case math.IsInf(f, -1):
		return AppendBulkString(b, "-inf")
	}
	var tmp [32]byte
	return AppendBulk(b, strconv.AppendFloat(tmp[:0], f, 'f', -1, 64))
}
