package scale

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// ledger counts, per deployment, every id enqueued and every handler start.
type testLedger struct {
	mu     sync.Mutex
	enq    map[string]map[string]string // deployment → id → queue
	starts map[string]map[string]int    // deployment → id → handler starts
	wrong  []string                     // a start on a queue other than the job's
}

func (l *testLedger) enqueued(dep, q string, ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.enq[dep] == nil {
		l.enq[dep] = map[string]string{}
	}
	for _, id := range ids {
		l.enq[dep][id] = q
	}
}

func (l *testLedger) started(dep, q, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.starts[dep] == nil {
		l.starts[dep] = map[string]int{}
	}
	l.starts[dep][id]++
	if want, ok := l.enq[dep][id]; ok && want != q {
		l.wrong = append(l.wrong, fmt.Sprintf("%s: job %s of %s started from %s", dep, id, want, q))
	}
}

// The scale axis on a 1- and a 2-primary cluster beside a standalone Valkey, on a tiny backlog:
// every deployment gives a figure, each primary owns its share of the queues, no call needed a
// redirect, and every enqueued job reached a handler exactly once.
func TestScaleDrain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Config{Primaries: []int{1, 2}, QueuesPerPrimary: 3, Workers: 8, Parked: 8, Backlog: 90, Repeats: 2}
	led := &testLedger{enq: map[string]map[string]string{}, starts: map[string]map[string]int{}}
	var prog strings.Builder
	ax := run(ctx, cfg, &prog, led)
	if len(ax.Gaps) > 0 {
		t.Skipf("the engines give no cluster of these sizes here: %v", ax.Gaps)
	}
	if len(ax.Results) != 3 {
		t.Fatalf("%d results, want standalone, cluster-1, cluster-2:\n%s", len(ax.Results), prog.String())
	}
	for i, want := range []string{"standalone", "cluster-1", "cluster-2"} {
		r := ax.Results[i]
		if r.Label() != want {
			t.Errorf("result %d is %s, want %s", i, r.Label(), want)
		}
		if r.Err != "" {
			t.Errorf("%s: %s\n%s", want, r.Err, prog.String())
			continue
		}
		if len(r.JobsPerS.Repeats) != cfg.Repeats || r.JobsPerS.Median <= 0 || r.PerPrimary <= 0 || r.CPU == nil || r.Redirects != 0 || r.Redelivered != 0 {
			t.Errorf("%s: %+v", want, r)
		}
		if r.Queues != 3*r.Primaries || r.Backlog != r.Queues*30 || len(r.Nodes) != r.Primaries {
			t.Errorf("%s: %d queues, backlog %d, %d nodes", want, r.Queues, r.Backlog, len(r.Nodes))
		}
		for _, n := range r.Nodes {
			if n.Queues != 3 || n.Jobs != int64(3*30*cfg.Repeats) || n.Calls == 0 {
				t.Errorf("%s: primary %+v: want 3 queues and %d jobs", want, n, 3*30*cfg.Repeats)
			}
		}
		enq, starts := led.enq[want], led.starts[want]
		if len(enq) != r.Backlog*cfg.Repeats {
			t.Errorf("%s: %d ids enqueued, want %d", want, len(enq), r.Backlog*cfg.Repeats)
		}
		for id := range enq {
			if starts[id] != 1 {
				t.Errorf("%s: job %s started %d times", want, id, starts[id])
			}
		}
		for id := range starts {
			if _, ok := enq[id]; !ok {
				t.Errorf("%s: a job %s that was not enqueued started", want, id)
			}
		}
	}
	for _, w := range led.wrong {
		t.Error(w)
	}
	if len(ax.Ratios) != 2 {
		t.Errorf("ratios %+v", ax.Ratios)
	}
}
