package portserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/drivers/inproc"
	"github.com/echomq/kit/internal/await"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/internal/portserver"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/connector"
)

// port runs Serve over the reference driver on pipes; send writes a line and reads the reply.
type port struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func start(t *testing.T) *port { return startWith(t, portserver.Options{}) }

func startWith(t *testing.T, opt portserver.Options) *port {
	f, err := inproc.New(inproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &port{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		p.done <- portserver.ServeFactoryWith(context.Background(), f, inR, outW, opt)
		outW.Close()
	}()
	return p
}

func (p *port) send(line string) protocol.Reply {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
	got, err := p.out.ReadString('\n')
	if err != nil {
		p.t.Fatalf("reading the reply to %s: %v", line, err)
	}
	var r protocol.Reply
	if err := json.Unmarshal([]byte(got), &r); err != nil {
		p.t.Fatalf("reply %q: %v", got, err)
	}
	return r
}

func TestServeExchange(t *testing.T) {
	addr := enginestest.Valkey(t).Addr
	p := start(t)
	if r := p.send(`{"seq":1,"op":"hello","valkey":"` + addr + `"}`); !r.OK || r.Seq != 1 {
		t.Fatalf("hello %+v %s", r, r.Result)
	}
	r := p.send(`{"seq":2,"op":"enqueue","queue":"orders","payload_b64":"aGk="}`)
	var e protocol.EnqueueResult
	json.Unmarshal(r.Result, &e)
	if !r.OK || !e.Created || len(e.ID) != 14 {
		t.Fatalf("enqueue %+v %s", r, r.Result)
	}
	r = p.send(`{"seq":3,"op":"claim","queue":"orders","lease_ms":30000}`)
	var c protocol.ClaimResult
	json.Unmarshal(r.Result, &c)
	if !r.OK || c.ID != e.ID || c.Token != 1 || !strings.Contains(string(r.Result), `"checkpoint_b64":null`) {
		t.Fatalf("claim %s", r.Result)
	}
	r = p.send(fmt.Sprintf(`{"seq":4,"op":"complete","queue":"orders","id":"%s","token":7}`, e.ID))
	if r.OK || r.Error == nil || r.Error.Type != "EMQSTALE" {
		t.Fatalf("stale complete %+v", r)
	}
	r = p.send(fmt.Sprintf(`{"seq":5,"op":"complete","queue":"orders","id":"%s","token":1}`, e.ID))
	if !r.OK || string(r.Result) != "{}" {
		t.Fatalf("complete %+v %s", r, r.Result)
	}
	if r = p.send(`{"seq":6,"op":"claim","queue":"orders","lease_ms":30000}`); !r.OK || string(r.Result) != "null" {
		t.Fatalf("empty claim %s", r.Result)
	}
	if r = p.send(`{"seq":7,"op":"enqueue","queue":"Bad Name","payload_b64":""}`); r.Error == nil || r.Error.Type != "EMQKEY" {
		t.Fatalf("bad queue %+v", r)
	}
	if r = p.send(`{"seq":8,"op":"teleport"}`); r.Error == nil || r.Error.Type != protocol.ErrTypeUnsupported || r.Seq != 8 {
		t.Fatalf("unknown op %+v", r)
	}
	if r = p.send(`{"seq":9,"op":"claim","queue":"orders","lease_ms":"soon"}`); r.Error == nil || r.Error.Type != "EMQARG" {
		t.Fatalf("bad argument %+v", r)
	}
	if r = p.send(`not json`); r.Error == nil || r.Seq != 0 {
		t.Fatalf("garbage %+v", r)
	}
	if r = p.send(`{"seq":10,"op":"close"}`); !r.OK {
		t.Fatalf("close %+v", r)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after close")
	}
}

// The mutation seam prints the lines Reply returns for each request, and its error ends the
// session once they are printed (internal/mutant's stdio mutants).
func TestServeReplySeam(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	p := startWith(t, portserver.Options{Reply: func(req, reply []byte) ([][]byte, error) {
		n++
		if n == 2 {
			return [][]byte{reply}, stop
		}
		return [][]byte{[]byte("extra " + string(req)), reply}, nil
	}})
	if _, err := io.WriteString(p.in, "not json\n"); err != nil {
		t.Fatal(err)
	}
	if l, _ := p.out.ReadString('\n'); l != "extra not json\n" {
		t.Fatalf("first line %q, want the seam's own", l)
	}
	if r, _ := p.out.ReadString('\n'); !strings.HasPrefix(r, `{"seq":0,"ok":false`) {
		t.Fatalf("second line %q, want the reply", r)
	}
	if r := p.send("still not json"); r.Seq != 0 || r.OK {
		t.Fatalf("reply %+v", r)
	}
	select {
	case err := <-p.done:
		if !errors.Is(err, stop) {
			t.Fatalf("Serve returned %v, want the seam's error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return on the seam's error")
	}
}

// Serve returns at the end of its input (B-286): a hang is the go test -timeout's to report,
// not a deadline of the test's own.
func TestServeEndsAtEOF(t *testing.T) {
	p := start(t)
	p.in.Close()
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
}

// An input that ends inside a line, after bytes with no newline, ends the session too: the
// bytes are served as a last request and Serve returns (it waited for a line that never came).
func TestServeEndsAtEOFInsideALine(t *testing.T) {
	p := start(t)
	go func() {
		io.WriteString(p.in, `{"seq":1,"op":"nope"}`)
		p.in.Close()
	}()
	got, err := p.out.ReadString('\n')
	if err != nil || !strings.Contains(got, `"UNSUPPORTED"`) {
		t.Fatalf("the last bytes were answered %q (%v), want UNSUPPORTED", got, err)
	}
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
}

func TestServeRequiredFields(t *testing.T) {
	addr := enginestest.Valkey(t).Addr
	p := start(t)
	if r := p.send(`{"seq":1,"op":"hello","valkey":"` + addr + `"}`); !r.OK {
		t.Fatalf("hello %+v", r)
	}
	for i, line := range []string{
		`{"seq":%d,"op":"hello","valkey":"` + addr + `"}`,           // a second hello
		`{"seq":%d,"op":"enqueue","queue":"q"}`,                     // payload_b64 missing
		`{"seq":%d,"op":"enqueue","queue":"q","payload_b64":"aGk"}`, // unpadded
		`{"seq":%d,"op":"claim","queue":"q"}`,                       // lease_ms missing
		`{"seq":%d,"op":"complete","queue":"q","id":"JOB00000000001"}`,
		`{"seq":%d,"op":"park","queue":"q","consumers":1,"jobs":1}`,
	} {
		seq := i + 2
		r := p.send(fmt.Sprintf(line, seq))
		if r.Seq != uint64(seq) || r.OK || r.Error.Type != "EMQARG" {
			t.Errorf("%s: %+v", line, r.Error)
		}
	}
	// Required means required even when the value would be 0 (issue 11): lane_ceiling without
	// its ceiling is refused; with "ceiling":0 it removes the ceiling. An optional field
	// (enqueue's delay_ms) may be left out.
	if r := p.send(`{"seq":20,"op":"lane_ceiling","queue":"q","lane":"g"}`); r.OK || r.Error.Type != "EMQARG" {
		t.Fatalf("lane_ceiling without ceiling: ok %v %+v", r.OK, r.Error)
	}
	if r := p.send(`{"seq":21,"op":"lane_ceiling","queue":"q","lane":"g","ceiling":0}`); !r.OK {
		t.Fatalf("lane_ceiling 0: %+v", r.Error)
	}
	if r := p.send(`{"seq":22,"op":"enqueue","queue":"q","payload_b64":"aGk="}`); !r.OK {
		t.Fatalf("enqueue without delay_ms: %+v", r.Error)
	}
	p.send(`{"seq":23,"op":"close"}`)
}

// Input bounds: no seq, a duration past the canon's maximum, a mint too big for one reply.
func TestServeInputBounds(t *testing.T) {
	addr := enginestest.Valkey(t).Addr
	p := start(t)
	if r := p.send(`{"seq":1,"op":"hello","valkey":"` + addr + `"}`); !r.OK {
		t.Fatalf("hello %+v", r)
	}
	for i, line := range []string{
		`{"op":"mint","n":1}`, // no seq
		`{"seq":%d,"op":"claim","queue":"q","lease_ms":100000000000001}`,
		`{"seq":%d,"op":"enqueue","queue":"q","payload_b64":"","delay_ms":9223372036854775807}`,
		`{"seq":%d,"op":"mint","n":100001}`,
		`{"seq":%d,"op":"mint","n":1000,"parallel":101}`,
		`{"seq":%d,"op":"mint","n":9223372036854775807,"parallel":9223372036854775807}`,
	} {
		seq := i + 2
		if strings.Contains(line, "%d") {
			line = fmt.Sprintf(line, seq)
		}
		r := p.send(line)
		if r.OK || r.Error == nil || r.Error.Type != "EMQARG" {
			t.Errorf("%s: ok %v, error %+v; want EMQARG", line, r.OK, r.Error)
		}
	}
	// The edges are accepted.
	if r := p.send(`{"seq":30,"op":"mint","n":1000,"parallel":100}`); !r.OK {
		t.Fatalf("mint of 100000: %+v", r.Error)
	}
	if r := p.send(`{"seq":31,"op":"claim","queue":"q","lease_ms":100000000000000}`); !r.OK {
		t.Fatalf("claim with lease_ms 1e14: %+v", r.Error)
	}
	p.send(`{"seq":32,"op":"close"}`)
}

// TestServeCluster: hello with cluster: true opens the reference in cluster mode from one seed
// node and declares the cluster capability; ops are routed to the queue's primary. The same
// hello against a standalone server is refused EMQSERVER, and a standalone hello declares the
// capability too (the reference supports cluster mode whatever the server).
func TestServeCluster(t *testing.T) {
	cl := enginestest.ValkeyCluster(t, 3)
	p := start(t)
	r := p.send(`{"seq":1,"op":"hello","valkey":"` + cl.Addrs[0] + `","cluster":true}`)
	var h protocol.HelloResult
	json.Unmarshal(r.Result, &h)
	if !r.OK || !slices.Contains(h.Capabilities, protocol.CapCluster) {
		t.Fatalf("cluster hello %+v %s", r, r.Result)
	}
	for i, q := range []string{"orders", "back", "billing"} { // on the 1st, 2nd, 3rd primary of the kit's layout
		if r = p.send(fmt.Sprintf(`{"seq":%d,"op":"enqueue","queue":"%s","payload_b64":"aGk="}`, 2+i, q)); !r.OK {
			t.Fatalf("enqueue on %s: %+v", q, r)
		}
	}
	if r = p.send(`{"seq":9,"op":"close"}`); !r.OK {
		t.Fatalf("close %+v", r)
	}

	addr := enginestest.Valkey(t).Addr
	p = start(t)
	if r = p.send(`{"seq":1,"op":"hello","valkey":"` + addr + `","cluster":true}`); r.OK || r.Error == nil || r.Error.Type != "EMQSERVER" {
		t.Fatalf("cluster hello against a standalone server: %+v", r)
	}
	r = p.send(`{"seq":2,"op":"hello","valkey":"` + addr + `"}`)
	h = protocol.HelloResult{}
	json.Unmarshal(r.Result, &h)
	if !r.OK || !slices.Contains(h.Capabilities, protocol.CapCluster) {
		t.Fatalf("standalone hello %+v %s", r, r.Result)
	}
	p.send(`{"seq":3,"op":"close"}`)
}

// A park waits up to its timeout_ms by design; when the input ends (the kit went away) it is
// cut short and Serve returns promptly, the driver closed. A whole piped script still runs:
// only the last line can be in flight when the input ends, and only a park is cut. "Promptly"
// is told from the park's own end: Serve returns long before its timeout_ms could.
func TestParkEndsWithInput(t *testing.T) {
	v := enginestest.Valkey(t)
	in, err := connector.Dial(context.Background(), v.Addr, connector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	blocked := func() int { // the server's clients blocked on a command: the parked consumers
		info, _ := in.Do(context.Background(), "INFO", "clients")
		_, after, _ := strings.Cut(info.Text(), "blocked_clients:")
		n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]))
		return n
	}
	before := blocked()
	p := start(t)
	if r := p.send(`{"seq":1,"op":"hello","valkey":"` + v.Addr + `"}`); !r.OK {
		t.Fatalf("hello %+v", r)
	}
	const timeout = time.Minute
	if _, err := io.WriteString(p.in, fmt.Sprintf(`{"seq":2,"op":"park","queue":"idle","consumers":2,"jobs":1,"lease_ms":30000,"park_ms":5000,"timeout_ms":%d}`+"\n", timeout.Milliseconds())); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "both consumers parked", func() bool { return blocked() == before+2 })
	start := time.Now()
	p.in.Close()
	got, _ := p.out.ReadString('\n') // the park's reply, if the pipe still takes it
	var r protocol.Reply
	if err := json.Unmarshal([]byte(got), &r); err != nil || r.Seq != 2 || !r.OK {
		t.Fatalf("the park's reply %q: %v", got, err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(timeout - time.Since(start)):
		t.Fatal("Serve did not return after its input ended during a park")
	}
	if took := time.Since(start); took >= timeout {
		t.Fatalf("the park outlived its input by %v: it ran to its timeout_ms", took)
	}
}
