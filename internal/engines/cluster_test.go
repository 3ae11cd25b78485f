package engines_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/kit/internal/engines"
)

const clusterHelperEnv = "EMQ_ENGINES_CLUSTER_HELPER"

func startCluster(t *testing.T) *engines.ValkeyCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := engines.StartValkeyCluster(ctx, engines.ClusterOptions{})
	if errors.Is(err, engines.ErrUnavailable) {
		t.Skip(err) // e.g. EMQ_ENGINES=given with no EMQ_VALKEY_CLUSTER
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// The started cluster has three primaries, each node says ok, all agree, and the slots are
// covered exactly once, in three contiguous runs.
func TestClusterStarts(t *testing.T) {
	t.Setenv(engines.EnvValkeyCluster, "")
	c := startCluster(t)
	if len(c.Addrs) != 3 || c.Mode != engines.ModeNative {
		t.Fatalf("cluster %v (%s): want 3 native nodes", c.Addrs, c.Mode)
	}
	ctx := context.Background()
	var first string
	for _, addr := range c.Addrs {
		shards, err := engines.ClusterShards(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		if len(shards) != 3 {
			t.Fatalf("%s sees %d primaries: %v", addr, len(shards), shards)
		}
		next := 0
		for i, s := range shards {
			if len(s.Slots) != 1 || s.Slots[0][0] != next || s.Primary != c.Addrs[i] {
				t.Fatalf("%s: shard %d = %+v, want one run from %d on %s", addr, i, s, next, c.Addrs[i])
			}
			next = s.Slots[0][1] + 1
		}
		if next != engines.ClusterSlots {
			t.Fatalf("%s: slots stop at %d", addr, next-1)
		}
		if s := fmt.Sprint(shards); first == "" {
			first = s
		} else if s != first {
			t.Fatalf("nodes disagree: %s vs %s", first, s)
		}
	}
	// The same cluster taken as given passes the same checks.
	t.Setenv(engines.EnvValkeyCluster, strings.Join(c.Addrs, ","))
	g, err := engines.StartValkeyCluster(ctx, engines.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Mode != engines.ModeGiven || len(g.Addrs) != 3 || g.Stop() != nil {
		t.Fatalf("given cluster %+v", g)
	}
	// Stop ends every node by PID.
	pids := c.PIDs()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !waitGone(pid) {
			t.Errorf("node pid %d survived Stop", pid)
		}
	}
}

// TestClusterHelper is the child of TestClusterDiesWithParent; it does nothing on its own.
func TestClusterHelper(t *testing.T) {
	if os.Getenv(clusterHelperEnv) != "1" {
		t.Skip("helper for TestClusterDiesWithParent")
	}
	c, err := engines.StartValkeyCluster(context.Background(), engines.ClusterOptions{})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	var f []string
	for _, p := range c.PIDs() {
		f = append(f, strconv.Itoa(p))
	}
	fmt.Println("UP", strings.Join(f, " "))
	time.Sleep(time.Minute) // the test kills us long before
	os.Exit(1)
}

// A parent killed with SIGKILL runs no cleanup: every node must die with it (Pdeathsig).
func TestClusterDiesWithParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterHelper$")
	cmd.Env = append(os.Environ(), clusterHelperEnv+"=1", engines.EnvMode+"=native", engines.EnvValkeyCluster+"=")
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
	if len(f) != 4 || f[0] != "UP" {
		t.Fatalf("helper said %q", line)
	}
	var pids []int
	for _, s := range f[1:] {
		pid, _ := strconv.Atoi(s)
		if !alive(pid) {
			t.Fatalf("node %d not up", pid)
		}
		pids = append(pids, pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, pid := range pids {
		if !waitGone(pid) {
			t.Errorf("node pid %d survived its parent's SIGKILL", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
