package faults_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
	"github.com/echomq/kit/internal/enginestest"
	"github.com/echomq/kit/internal/faults"
)

var (
	long   = flag.Bool("faults.long", false, "run the long drills (make faults) and write -faults.out")
	outTxt = flag.String("faults.out", "", "write the drills' transcript here")
	only   = flag.String("faults.only", "", "run only the drill of this name (no transcript check)")
)

func TestMain(m *testing.M) {
	if v := os.Getenv(faults.EnvChild); v != "" {
		addr, queue, _ := strings.Cut(v, " ")
		flag.Parse()
		opt := faults.Short
		if *long {
			opt = faults.Long
		}
		if err := faults.ChildConsumer(addr, queue, opt); err != nil {
			fmt.Fprintln(os.Stderr, "faults child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestDrills runs every drill (short, or long with -faults.long) and checks the transcript
// against transcripts/faults.out (or writes it with -faults.out).
func TestDrills(t *testing.T) {
	enginestest.Valkey(t) // skips cleanly without an engine
	opt, childArgs := faults.Short, []string{"-test.run=^$"}
	if *long {
		opt, childArgs = faults.Long, append(childArgs, "-faults.long")
	}
	opt.Child = faults.Reexec(childArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var rs []faults.Result
	for _, d := range faults.Drills {
		if *only != "" && d.Name != *only {
			continue
		}
		r := faults.Run(ctx, d, opt)
		if errors.Is(r.Err, engines.ErrNotNative) {
			t.Skipf("the drills need a native Valkey: %v", r.Err)
		}
		t.Logf("%s: jobs %d completed %d dead %d; dups %d (bound: %d leased at the fault, %d handlers running; outside %d); resumed after %v; reconnects %d; err %v",
			r.Name, r.Jobs, r.Completed, r.Dead, r.Dups, r.Leased, r.Running, r.OutsideBound, r.Resumed.Round(time.Millisecond), r.Reconnects, r.Err)
		if !r.OK() {
			t.Errorf("%s\nlost: %v\nthe server's stalls: %s", r.Line(), r.Lost[:min(len(r.Lost), 10)], r.Latency)
		}
		rs = append(rs, r)
	}
	if *only != "" {
		return
	}
	var got bytes.Buffer
	faults.Transcript(&got, rs)
	if *outTxt != "" {
		if err := os.WriteFile(*outTxt, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "transcripts", "faults.out"))
	if err != nil {
		t.Fatalf("transcripts/faults.out: %v (make faults writes it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("the drills' transcript differs from transcripts/faults.out:\n--- got\n%s--- want\n%s", got.Bytes(), want)
	}
}
