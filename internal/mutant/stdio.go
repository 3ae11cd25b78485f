package mutant

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/echomq/kit/internal/portserver"
)

// Stdio mutants break the port protocol's line format (PROTOCOL.md Part B, its opening
// paragraphs): what a port prints and how it ends, which no front of the driver reaches. They
// are a defect of the port binary, cmd/emq-port (its portserver.Options seam), so they run only
// as a subprocess port (-port emq-port with EMQ_MUTANT): the in-process reference is clean.
// Most print the session's first reply (hello's) as it is: a port whose hello cannot be read is a
// harness error, before any contract runs, and the mutant must be killed by a contract.
var stdioMutants = []Spec{
	{Name: "stdio-reply-pretty-printed", Contract: "C01", Rule: "port-protocol", Defect: "the port pretty-prints each reply over several lines instead of one JSON object per line",
		Wire: afterHello(func(_, reply []byte) [][]byte {
			var b bytes.Buffer
			_ = json.Indent(&b, reply, "", "  ")
			return bytes.Split(b.Bytes(), []byte("\n"))
		})},
	{Name: "stdio-log-on-stdout", Contract: "C01", Rule: "port-protocol", Defect: "the port logs \"session open\" on standard output, after its hello reply, instead of on standard error",
		Wire: func(o *portserver.Options) {
			first := true
			o.Reply = func(_, reply []byte) ([][]byte, error) {
				if first {
					first = false
					return [][]byte{reply, []byte("emq-port: session open")}, nil
				}
				return [][]byte{reply}, nil
			}
		}},
	{Name: "stdio-seq-counted", Contract: "C01", Rule: "port-protocol", Defect: "the port numbers its replies 1, 2, 3… itself instead of echoing each request's seq",
		Wire: func(o *portserver.Options) {
			n := 0
			o.Reply = func(_, reply []byte) ([][]byte, error) {
				n++
				return [][]byte{setField(reply, "seq", n)}, nil
			}
		}},
	{Name: "stdio-error-type-unlisted", Contract: "C01", Rule: "port-protocol", Defect: "the port answers an op it does not implement with error type NOT_IMPLEMENTED, outside the list, instead of UNSUPPORTED",
		Wire: replies(func(_, reply []byte) [][]byte {
			return [][]byte{bytes.Replace(reply, []byte(`"type":"UNSUPPORTED"`), []byte(`"type":"NOT_IMPLEMENTED"`), 1)}
		})},
	{Name: "stdio-ok-omitted", Contract: "C01", Rule: "port-protocol", Defect: "the port leaves ok out of a successful reply (a result says it), a line that is not a valid reply",
		Wire: afterHello(func(_, reply []byte) [][]byte {
			return [][]byte{bytes.Replace(reply, []byte(`"ok":true,`), nil, 1)}
		})},
	{Name: "stdio-empty-result-null", Contract: "C01", Rule: "port-protocol", Defect: "the port answers an op whose result is empty with result null instead of the object {}",
		Wire: replies(func(_, reply []byte) [][]byte {
			return [][]byte{bytes.Replace(reply, []byte(`"result":{}`), []byte(`"result":null`), 1)}
		})},
	{Name: "stdio-close-exits-1", Contract: "C01", Rule: "close", Defect: "after answering close the port exits with status 1 instead of 0",
		Wire: func(o *portserver.Options) {
			o.Reply = func(req, reply []byte) ([][]byte, error) {
				var r struct {
					Op string `json:"op"`
				}
				if json.Unmarshal(req, &r) == nil && r.Op == "close" {
					return [][]byte{reply}, errors.New("mutant stdio-close-exits-1: exit 1 after close")
				}
				return [][]byte{reply}, nil
			}
		}},
	{Name: "input-cut-line-awaited", Contract: "C01", Rule: "input-ended", Defect: "when the input ends inside a line, the port waits on for a newline that cannot come and never ends its session (the reference's portserver until red team 55)",
		Wire: func(o *portserver.Options) {
			o.Input = func(in io.Reader) io.Reader { return &newlineAwaited{r: in} }
		}},
}

// newlineAwaited is a reader whose end, after bytes with no newline behind them, never comes.
type newlineAwaited struct {
	r    io.Reader
	last byte
}

func (n *newlineAwaited) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if k > 0 {
		n.last = p[k-1]
	}
	if err == io.EOF && n.last != 0 && n.last != '\n' {
		for { // the wait for the rest of the line (a sleep, where select{} could be a deadlock)
			time.Sleep(time.Hour)
		}
	}
	return k, err
}

// replies is a wire mutant that rewrites each reply line on its own.
func replies(f func(req, reply []byte) [][]byte) func(*portserver.Options) {
	return func(o *portserver.Options) {
		o.Reply = func(req, reply []byte) ([][]byte, error) { return f(req, reply), nil }
	}
}

// afterHello is replies for every reply but the session's first.
func afterHello(f func(req, reply []byte) [][]byte) func(*portserver.Options) {
	return func(o *portserver.Options) {
		first := true
		o.Reply = func(req, reply []byte) ([][]byte, error) {
			if first {
				first = false
				return [][]byte{reply}, nil
			}
			return f(req, reply), nil
		}
	}
}

// setField is the JSON object line with one top-level field replaced.
func setField(line []byte, name string, v any) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return line
	}
	m[name], _ = json.Marshal(v)
	out, _ := json.Marshal(m)
	return out
}

// Stdio is the portserver seam the mutant name sets (the zero Options for every other name):
// cmd/emq-port serves its sessions with it.
func Stdio(name string) portserver.Options {
	var o portserver.Options
	if s, ok := Lookup(name); ok && s.Wire != nil {
		s.Wire(&o)
	}
	return o
}
