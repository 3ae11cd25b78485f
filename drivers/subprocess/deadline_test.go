package subprocess

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
)

func TestWorkItems(t *testing.T) {
	for _, c := range []struct {
		op, req string
		want    time.Duration
	}{
		{"mint", `{"seq":2,"op":"mint","n":100,"parallel":4}`, 400},
		{"mint", `{"seq":2,"op":"mint","n":100}`, 100},
		{"mint", `{"seq":2,"op":"mint","n":"100"}`, 0}, // a wrong type counts nothing
		{"morgue", `{"seq":2,"op":"morgue","queue":"q","limit":10000}`, 10000},
		{"reap", `{"seq":2,"op":"reap","queue":"q","attempts":3}`, 1000}, // absent: the default's work
		{"claim_batch", `{"seq":2,"op":"claim_batch","queue":"q","lease_ms":9,"n":7}`, 7},
		{"enqueue_batch", `{"seq":2,"op":"enqueue_batch","queue":"q","jobs":[{},{},{}]}`, 3},
		{"mint", `{"seq":2,"op":"mint","n":1e300}`, maxItems}, // far out of range: bounded
		{"enqueue", `{"seq":2,"op":"enqueue","queue":"q","payload_b64":""}`, 0},
		{"mint", `not json`, 0},
	} {
		if got := workItems(c.op, []byte(c.req)); got != c.want {
			t.Errorf("workItems(%s) = %d, want %d", c.req, got, c.want)
		}
	}
}

// TestDeadlineGrowsWithWork: a request naming more items waits longer (PROTOCOL.md [B-20]); the
// hang's report names the deadline it waited.
func TestDeadlineGrowsWithWork(t *testing.T) {
	d := session(t, fakePort(t), "hang", "mint", Options{Deadline: 200 * time.Millisecond, PerItem: 10 * time.Millisecond, StartDeadline: 10 * time.Second})
	_, err := d.Mint(context.Background(), protocol.MintArgs{N: 50, Parallel: 2})
	portError(t, err, "within 1.2s (deadline)")
}

// TestDeadlineGrowsWithBytes: a line of megabytes buys its own request, and every later one of
// the session, PerMiB a MiB (B-20): the claim after a large enqueue carries its payload back.
func TestDeadlineGrowsWithBytes(t *testing.T) {
	d := session(t, fakePort(t), "hang", "claim", Options{Deadline: 200 * time.Millisecond, PerMiB: 1600 * time.Millisecond, StartDeadline: 10 * time.Second})
	rc := d.(drivers.RawCaller)
	pad, _ := json.Marshal(strings.Repeat("A", 1<<20))
	if _, err := rc.Raw(context.Background(), "pause", map[string]json.RawMessage{"queue": json.RawMessage(`"q"`), "pad": pad}); err != nil {
		t.Fatal(err)
	}
	// The pause's line is 1 MiB and some bytes: 16 whole blocks of 64 KiB, 100 ms each.
	_, err := d.Claim(context.Background(), protocol.ClaimArgs{Queue: "q", LeaseMS: 1000})
	portError(t, err, "within 1.8s (deadline)")
}

// TestStartDeadlineShorterThanDeadline: -start-deadline is the first hello's whole wait, even
// below -deadline.
func TestStartDeadlineShorterThanDeadline(t *testing.T) {
	f, err := New(fakePort(t), Options{Deadline: time.Minute, StartDeadline: 300 * time.Millisecond, Env: []string{"FAKE_MODE=hang", "FAKE_OP=hello"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	_, err = d.Hello(context.Background(), protocol.HelloArgs{Valkey: "127.0.0.1:1"})
	portError(t, err, "within 300ms (deadline)")
}

// TestMutePort: a port that reads its hello and then sits idle is failed as mute, long before
// its start deadline; one that sleeps before reading (an interpreter coming up) is waited for.
func TestMutePort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the mute check reads /proc: Linux only (elsewhere a mute port waits out the start deadline)")
	}
	bin := fakePort(t)
	f, err := New(bin, Options{StartDeadline: 10 * time.Minute, MuteAfter: time.Second, Env: []string{"FAKE_MODE=hang", "FAKE_OP=hello"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	_, err = d.Hello(context.Background(), protocol.HelloArgs{Valkey: "127.0.0.1:1"})
	portError(t, err, "sat idle for 1s")
	// slow-start sleeps before it reads: not mute, however idle. It sleeps longer than MuteAfter,
	// and MuteAfter is long: once the port has read its hello, its reply must come within
	// MuteAfter or it is taken for mute, which a busy machine would do to a 100 ms one.
	d = session(t, bin, "slow-start", "none", Options{StartDeadline: 10 * time.Minute, MuteAfter: 3 * time.Second,
		Env: []string{"FAKE_START_MS=4000"}})
	if _, err := d.Mint(context.Background(), protocol.MintArgs{N: 1}); err != nil {
		t.Fatalf("mint after a slow start: %v", err)
	}
}
