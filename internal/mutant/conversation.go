package mutant

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/connector"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/resp"
)

// newestFirst serves a run of requests it holds at once newest first, as a port that keeps the
// lines it has read on a stack instead of a queue would, and answers them in the order they came
// (PROTOCOL.md B-280): with one request in flight it is the reference.
type newestFirst struct{ *sessionFront }

func (f newestFirst) Pipeline(ctx context.Context, reqs []drivers.RawRequest) ([]drivers.RawReply, error) {
	out := make([]drivers.RawReply, len(reqs))
	for i := len(reqs) - 1; i >= 0; i-- {
		out[i].Result, out[i].Err = drivers.Serve(ctx, f.sessionFront, reqs[i])
	}
	return out, nil
}

// oneRead opens each session with connections of its own that read HELLO 2's reply from one
// read of the socket, as a port whose reader keeps nothing across reads would, and answers hello
// INTERNAL when a read did not hold the whole reply; then it closes them and opens the session.
// Eight tries: a reader woken late by a busy machine may find a cut reply whole in its buffer
// once, not eight times.
type oneRead struct{ *sessionFront }

func (f oneRead) Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error) {
	for range 8 {
		if err := helloInOneRead(ctx, a.Valkey); err != nil {
			return protocol.HelloResult{}, err
		}
	}
	return f.sessionFront.Hello(ctx, a)
}

func helloInOneRead(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(hello2); err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if _, err := resp.NewReader(bufio.NewReader(bytes.NewReader(buf[:n])), resp.DefaultLimits()).Read(); err != nil {
		return fmt.Errorf("malformed reply to HELLO 2 (%d bytes in one read): %w", n, err)
	}
	return nil
}

// noRedial never replaces a connection it lost: once an enqueue fails with anything but a canon
// error (the server dropped the connection), every later one answers that error.
type noRedial struct {
	*sessionFront
	lost *error
}

func (f noRedial) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	if *f.lost != nil {
		return protocol.EnqueueResult{}, *f.lost
	}
	r, err := f.sessionFront.Enqueue(ctx, a)
	var canon *emqerr.Error
	if err != nil && !errors.As(err, &canon) {
		*f.lost = err
	}
	return r, err
}

// parkOutlivesInput lets a park in flight run to its end when the input ends, and only then ends
// the session as the reference does.
type parkOutlivesInput struct {
	*sessionFront
	parks sync.WaitGroup
}

func (f *parkOutlivesInput) Park(ctx context.Context, a protocol.ParkArgs) (protocol.ParkResult, error) {
	f.parks.Add(1)
	defer f.parks.Done()
	return f.sessionFront.Park(ctx, a)
}

func (f *parkOutlivesInput) EndInput(ctx context.Context, until time.Time) error {
	f.parks.Wait()
	return f.Driver.(drivers.InputEnder).EndInput(ctx, until)
}

// inFlightMutants break the conversation: under requests in flight, on its largest lines, after
// the server dropped its connections.
var inFlightMutants = []Spec{
	{Name: "lost-connection-never-redialled", Contract: "C01", Rule: "dropped-connection", Defect: "a connection the server dropped is never replaced: every request after the loss answers INTERNAL",
		Go: front(func(d drivers.Driver) drivers.Driver { return noRedial{&sessionFront{Driver: d}, new(error)} })},
	{Name: "redial-unpaced", Contract: "C01", Rule: "redial-paced", Defect: "the command connection's redials follow each other with no pause (the backoff's cap a nanosecond), so a port whose server refuses it dials as fast as it is turned away (make mutation's redial-backoff survivors of conn.go and the Node port's session.js)",
		Go: func(opt *bus.Options) Wrap { opt.RedialMax = time.Nanosecond; return nil }},
	{Name: "silent-line-waited-out", Contract: "C14", Rule: "silent-server", Defect: "a parking line whose pop found it lost (no reply past the pop's read deadline: the server fell silent) is neither redialled nor reported: the consumer waits on it until its park ends (the closing notes' silent-server family)",
		Go: seams(func(s *bus.Seams) { s.Park = waitOutLostPop })},
	{Name: "line-cap-1mib", Contract: "C06", Rule: "largest-bytes", Defect: "a request carrying more than 1 MiB of base64 (a payload or a checkpoint) is refused EMQARG, as a port reading lines into a 1 MiB buffer would",
		Go: front(func(d drivers.Driver) drivers.Driver { return lineCap{&sessionFront{Driver: d}} })},
	{Name: "one-read-one-reply", Contract: "C01", Rule: "replies-cut-anywhere", Defect: "a reply is taken from one read of the socket, as a reader with no buffer across reads does: a reply the network cut in two is refused as malformed (on loopback the server's small replies come whole, so only a cut shows it)",
		Go: front(func(d drivers.Driver) drivers.Driver { return oneRead{&sessionFront{Driver: d}} })},
	{Name: "park-outlives-its-input", Contract: "C01", Rule: "input-ended", Defect: "a park in flight when the port's input ends without a close runs to its timeout_ms before the session closes, as a port that only notices the end of its input at its next read does",
		Go: front(func(d drivers.Driver) drivers.Driver {
			return &parkOutlivesInput{sessionFront: &sessionFront{Driver: d}}
		})},
	{Name: "requests-served-newest-first", Contract: "C01", Rule: "in-flight", Defect: "requests read together are served newest first (a stack of lines, not a queue), their replies still written in order",
		Go: front(func(d drivers.Driver) drivers.Driver { return newestFirst{&sessionFront{Driver: d}} })},
	{Name: "seq-past-2-53-served", Contract: "C01", Rule: "unreadable-line", Defect: "a request whose seq is past 2⁵³ − 1 is served (a reader with 64-bit integers), where a JavaScript reader would round the seq",
		Go: front(func(d drivers.Driver) drivers.Driver { return bigSeqServed{&sessionFront{Driver: d}} })},
	{Name: "park-pop-whole-seconds", Contract: "C14", Rule: "park-pop-timeout", Defect: "a parked consumer's BLPOP timeout is sent in whole seconds, rounded up (as for a server that took only integers), so a pop of park_ms 150 waits 1 s",
		Go: func(opt *bus.Options) Wrap {
			opt.Test.Hook = chain(opt.Test.Hook, func(args []any) []any {
				if len(args) == 3 && strings.EqualFold(text(args[0]), "BLPOP") {
					if s, err := strconv.ParseFloat(text(args[2]), 64); err == nil {
						args = []any{args[0], args[1], strconv.FormatFloat(math.Ceil(s), 'f', 0, 64)}
					}
				}
				return args
			})
			return nil
		}},
	{Name: "unreadable-line-answered-at-once", Contract: "C01", Rule: "unreadable-line-in-turn", Defect: "a line that is not a request is answered the moment it is read, so behind a request still being served its EMQARG overtakes that request's reply (the outside red team's garbage-reply-early, stop 50)",
		Go: front(func(d drivers.Driver) drivers.Driver { return lineAtOnce{&sessionFront{Driver: d}} })},
	{Name: "unreadable-line-internal", Contract: "C01", Rule: "unreadable-line", Defect: "a line that is not a request is answered INTERNAL instead of EMQARG (make mutation's survivor of the Node port's port.js, seed 22914, answered one with no type at all)",
		Go: front(func(d drivers.Driver) drivers.Driver { return lineInternal{&sessionFront{Driver: d}} })},
}

// lineInternal answers a line that is not a request INTERNAL under seq 0, as a port that takes
// an unparseable line for its own failure does; it serves every request as the reference.
type lineInternal struct{ *sessionFront }

var _ drivers.LineSender = lineInternal{} // the harness finds the front's Line by this interface

func (f lineInternal) Line(ctx context.Context, text []byte, seq uint64) (json.RawMessage, error) {
	if seq != 0 { // a request, written by hand: served as the reference serves it
		return drivers.Line(ctx, f.sessionFront, text, seq)
	}
	return nil, &drivers.PortError{Port: f.Name(), Op: "line", Reason: "answered INTERNAL: unparseable request"}
}

// bigSeqServed serves a line whose seq is past drivers.MaxSeq but fits 64 bits, as a port whose
// JSON reader holds 64-bit integers would; every other line as the reference.
type bigSeqServed struct{ *sessionFront }

var _ drivers.LineSender = bigSeqServed{}

func (f bigSeqServed) Line(ctx context.Context, text []byte, seq uint64) (json.RawMessage, error) {
	var req struct {
		Seq uint64 `json:"seq"`
		Op  string `json:"op"`
		Key string `json:"key"`
	}
	if json.Unmarshal(text, &req) != nil || req.Seq <= drivers.MaxSeq || req.Op != "slot" {
		return drivers.Line(ctx, f.sessionFront, text, seq)
	}
	r, err := f.Slot(ctx, protocol.SlotArgs{Key: req.Key})
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// lineCap refuses a request whose bytes exceed a buffer of its own, as a port that reads lines
// into a fixed 1 MiB buffer would (PROTOCOL.md B-281 asks for 4 MiB).
type lineCap struct{ *sessionFront }

const lineCapBytes = 1 << 20

func (f lineCap) Enqueue(ctx context.Context, a protocol.EnqueueArgs) (protocol.EnqueueResult, error) {
	if len(a.PayloadB64) > lineCapBytes {
		return protocol.EnqueueResult{}, &emqerr.Error{Type: emqerr.TypeArg, Message: "request line over 1 MiB"}
	}
	return f.sessionFront.Enqueue(ctx, a)
}

func (f lineCap) Checkpoint(ctx context.Context, a protocol.CheckpointArgs) error {
	if len(a.DataB64) > lineCapBytes {
		return &emqerr.Error{Type: emqerr.TypeArg, Message: "request line over 1 MiB"}
	}
	return f.sessionFront.Checkpoint(ctx, a)
}

// waitOutLostPop pops as the canon says, but a pop that failed while its park goes on is waited
// out instead of reported: the consumer never finds its line lost.
func waitOutLostPop(ctx context.Context, c *connector.Conn, timeout time.Duration, cmd []any) (bool, error) {
	v, err := c.DoBlocking(ctx, timeout, cmd...)
	if err != nil && ctx.Err() == nil {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return err == nil && !v.Null, err
}

// lineAtOnce answers a line that is not a request as soon as it reads it: in a pipeline where
// such a line follows a request, the first reply the kit reads is the line's, under seq 0, where
// the request's was due, which is what a driver with a conversation finds on the wire.
type lineAtOnce struct{ *sessionFront }

func (f lineAtOnce) Pipeline(ctx context.Context, reqs []drivers.RawRequest) ([]drivers.RawReply, error) {
	for i, r := range reqs {
		if r.Line != nil && i > 0 {
			return nil, &drivers.PortError{Port: f.Name(), Op: reqs[0].Op, Reason: "answered out of sequence: expected the reply to the first request, got seq 0",
				Line: `{"seq":0,"ok":false,"error":{"type":"EMQARG","message":"not a request"}}`}
		}
	}
	return drivers.OneByOne(ctx, f.sessionFront, reqs)
}

// hello2 is HELLO 2 as it goes on the wire, for the fronts that say it on connections of their own.
var hello2, _ = resp.AppendCommand(nil, "HELLO", "2")
