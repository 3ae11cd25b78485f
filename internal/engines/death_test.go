package engines_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
)

const helperEnv = "EMQ_ENGINES_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper())
	}
	os.Exit(m.Run())
}

// helper starts both engines natively, reports their PIDs and dirs, and waits to be killed.
func helper() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v, err := engines.StartValkey(ctx, engines.ValkeyOptions{})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	p, err := engines.StartPostgres(ctx, engines.PostgresOptions{})
	if err != nil {
		v.Stop()
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("UP", v.PID(), p.PID(), filepath.Dir(v.LogPath()), filepath.Dir(p.LogPath()))
	time.Sleep(time.Minute) // the test kills us long before
	return 1
}

// A test binary killed with SIGKILL runs no cleanup at all: its engines must die with it
// (Pdeathsig, also through PostgreSQL's switch to an unprivileged user), and the next start
// sweeps the temp dirs it left.
func TestEnginesDieWithParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", engines.EnvMode+"=native")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "UP" {
		t.Fatalf("helper said %q", line)
	}
	vpid, _ := strconv.Atoi(f[1])
	ppid, _ := strconv.Atoi(f[2])
	vdir, pdir := f[3], f[4]
	pgKids := children(ppid)
	if !alive(vpid) || !alive(ppid) || len(pgKids) == 0 {
		t.Fatalf("engines not up: valkey %d postgres %d children %v", vpid, ppid, pgKids)
	}
	// The dirs exist while their owner lives (checked before the kill: once it is dead, any
	// engine start on the machine may sweep them).
	for _, d := range []string{vdir, pdir} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("helper's dir %s: %v", d, err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, pid := range append([]int{vpid, ppid}, pgKids...) {
		if !waitGone(pid) {
			t.Errorf("pid %d survived its parent's SIGKILL", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// The next start finds the dead owner's dirs and removes them. (Any engine another process
	// on the machine starts meanwhile may sweep them first: the same sweep.)
	v, err := engines.StartValkey(context.Background(), engines.ValkeyOptions{Args: []string{"--maxclients", "100"}})
	if err != nil {
		t.Fatal(err)
	}
	v.Stop()
	for _, d := range []string{vdir, pdir} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("stale dir %s not swept: %v", d, err)
			os.RemoveAll(d)
		}
	}
}
