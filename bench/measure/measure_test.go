package measure

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/echomq/kit/internal/await"
)

func TestSpread(t *testing.T) {
	s := SpreadOf([]float64{5, 1, 3})
	if s.Median != 3 || s.Min != 1 || s.Max != 5 {
		t.Errorf("odd: %+v", s)
	}
	if s := SpreadOf([]float64{4, 1, 3, 2}); s.Median != 2.5 {
		t.Errorf("even: %+v", s)
	}
}

func TestHist(t *testing.T) {
	h := NewHist()
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	s := h.Summary()
	if s.Count != 1000 || s.P50 < 495 || s.P50 > 505 || s.P99 < 985 || s.P99 > 995 || s.Max < 999 || s.Max > 1001 {
		t.Errorf("summary %+v", s)
	}
	o := NewHist()
	o.RecordMicros([]float64{2e6})
	o.Merge(h)
	if m := o.Summary(); m.Count != 1001 || m.Max < 1999 {
		t.Errorf("merged %+v", m)
	}
	if e := NewHist().Summary(); e.Count != 0 || len(e.Percentiles) != 0 {
		t.Errorf("an empty histogram has percentiles: %+v", e)
	}
}

func TestProcStatAndCPU(t *testing.T) {
	f, ok := procStat(os.Getpid())
	if !ok || f.ppid != os.Getppid() {
		t.Fatalf("procStat(self): %+v %v", f, ok)
	}
	c := Clock{ValkeyPID: os.Getpid(), PGPID: os.Getppid()}
	a := c.Read()
	// Burn CPU until the process's CPU clock has moved: on a busy machine 50 ms of wall time
	// may give it none.
	await.Until(t, "this process's CPU time to grow", func() bool {
		for x, end := 0, time.Now().Add(time.Millisecond); time.Now().Before(end); x++ {
			_ = x * x
		}
		return c.Read().bench > a.bench
	})
	var acc Acc
	acc.Add(a, c.Read())
	got := acc.CPU()
	if got == nil || got.Bench <= 0 || got.Valkey == nil || got.Postgres == nil {
		t.Fatalf("cpu %+v", got)
	}
	var unknown Acc
	unknown.Add(Clock{}.Read(), Clock{}.Read())
	if u := unknown.CPU(); u != nil && (u.Valkey != nil || u.Postgres != nil) {
		t.Errorf("engines without a PID read as known: %+v", u)
	}
}

func TestSettlerWaitsForTheFloor(t *testing.T) {
	script := func(shares ...float64) (func(context.Context, time.Duration) (float64, bool), *int) {
		n := 0
		return func(context.Context, time.Duration) (float64, bool) {
			v := shares[min(n, len(shares)-1)]
			n++
			return v, true
		}, &n
	}
	// The first call looks four windows for the floor (0.05), then waits out the leftovers.
	sample, n := script(0.6, 0.05, 0.3, 0.2, 0.5, 0.4, 0.12)
	s := &Settler{Window: 250 * time.Millisecond, Most: 5 * time.Second, Margin: 0.1, Sample: sample}
	if share, _, ok := s.Settle(context.Background()); !ok || share != 0.12 || *n != 7 {
		t.Fatalf("first settle: %v after %d windows, ok %v; want 0.12 after 7", share, *n, ok)
	}
	// A later call stops at the first window within the margin of the floor.
	s.Sample, n = script(0.15)
	if share, _, _ := s.Settle(context.Background()); share != 0.15 || *n != 1 {
		t.Fatalf("second settle: %v after %d windows; want 0.15 after 1", share, *n)
	}
	// A machine that never settles is waited on for Most, not longer: 20 windows of 250 ms.
	s.Sample, n = script(0.9)
	if share, _, _ := s.Settle(context.Background()); share != 0.9 || *n != 20 {
		t.Fatalf("busy machine: %v after %d windows; want 0.9 after 20", share, *n)
	}
}

// TestTreeCPUNeverGoesBack reads a process tree whose children end and are reaped while it is
// read: every reading is at least the one before it (a reaped child is counted once, as the
// parent's reaped children's CPU, never missed while the scan runs).
func TestTreeCPUNeverGoesBack(t *testing.T) {
	if _, ok := procStat(os.Getpid()); !ok {
		t.Skip("no /proc")
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// A child that burns a little CPU and ends; Run reaps it.
			_ = exec.Command("sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done").Run()
		}
	}()
	defer func() { close(stop); <-done }()
	prev, known := time.Duration(-1), 0
	for range 2000 {
		d := treeCPU(os.Getpid())
		if d < 0 {
			continue // unknown: churn outlasted the retries, never a wrong figure
		}
		known++
		if d < prev {
			t.Fatalf("the tree's CPU went back from %v to %v", prev, d)
		}
		prev = d
	}
	if known < 1000 {
		t.Fatalf("only %d of 2000 readings were known: the check compared too few", known)
	}
}
