package engines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/kit/reference/resp"
	"github.com/echomq/kit/reference/slotmap"
)

// EnvValkeyCluster names a running Valkey Cluster to use as given: its node addresses,
// comma-separated (host:port,host:port,…). Every node must answer and report cluster_state:ok.
const EnvValkeyCluster = "EMQ_VALKEY_CLUSTER"

// ClusterSlots is the number of hash slots a cluster divides among its primaries.
const ClusterSlots = 16384

// ValkeyCluster is a running Valkey Cluster of primaries only.
type ValkeyCluster struct {
	Addrs []string // every node's host:port, in slot order for a cluster we started
	Mode  Mode

	nodes []*Valkey // native mode: one started server per node
}

// ClusterOptions configure a started cluster.
type ClusterOptions struct {
	// Primaries is the number of primaries (each owns an equal run of slots); 3 when zero.
	Primaries int
}

// ErrClusterNotReady wraps a cluster whose nodes do not (yet) agree on a healthy slot map.
var ErrClusterNotReady = errors.New("engines: cluster not ready")

// Stop stops every node we started (by PID, each in its own process group) and removes their
// dirs; a no-op for a given cluster. Idempotent.
func (c *ValkeyCluster) Stop() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.Stop())
	}
	return errors.Join(errs...)
}

// PIDs are the nodes' process IDs in native mode, else nil.
func (c *ValkeyCluster) PIDs() []int {
	var out []int
	for _, n := range c.nodes {
		out = append(out, n.PID())
	}
	return out
}

// Nodes are the started nodes (native mode), for their logs and PIDs.
func (c *ValkeyCluster) Nodes() []*Valkey { return append([]*Valkey(nil), c.nodes...) }

// StartValkeyCluster returns a live cluster: the given one (EMQ_VALKEY_CLUSTER) or a native one of
// opt.Primaries Valkey 8.1.1 nodes on free loopback ports. A container cluster is not offered
// (ErrUnavailable): cluster-bus addresses inside containers need host networking. ctx bounds the
// start only; call Stop.
func StartValkeyCluster(ctx context.Context, opt ClusterOptions) (*ValkeyCluster, error) {
	mode, err := forcedMode()
	if err != nil {
		return nil, err
	}
	given := os.Getenv(EnvValkeyCluster)
	switch {
	case mode == ModeGiven || (mode == "" && given != ""):
		if given == "" {
			return nil, fmt.Errorf("%w: %s=given but %s is not set", ErrUnavailable, EnvMode, EnvValkeyCluster)
		}
		return givenCluster(ctx, given)
	case mode == ModeContainer:
		return nil, fmt.Errorf("%w: no container cluster; use native mode or %s", ErrUnavailable, EnvValkeyCluster)
	}
	n := opt.Primaries
	if n <= 0 {
		n = 3
	}
	if n > ClusterSlots {
		return nil, fmt.Errorf("engines: %d primaries for %d slots", n, ClusterSlots)
	}
	return nativeCluster(ctx, n)
}

func givenCluster(ctx context.Context, list string) (*ValkeyCluster, error) {
	var addrs []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("engines: %s=%q names no node", EnvValkeyCluster, list)
	}
	c := &ValkeyCluster{Addrs: addrs, Mode: ModeGiven}
	if err := checkCluster(ctx, addrs); err != nil {
		return nil, fmt.Errorf("engines: given %s: %w", EnvValkeyCluster, err)
	}
	return c, nil
}

func nativeCluster(ctx context.Context, n int) (c *ValkeyCluster, err error) {
	c = &ValkeyCluster{Mode: ModeNative}
	defer func() {
		if err != nil {
			c.Stop() // every exit path stops what was started
			c = nil
		}
	}()
	for range n {
		bus, err := freePort()
		if err != nil {
			return nil, err
		}
		// nodes.conf lands in the node's own dir (the process's working dir and --dir).
		v, err := nativeValkey(ctx, KindValkey, []string{"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000",
			"--cluster-port", strconv.Itoa(bus), "--cluster-require-full-coverage", "yes"})
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, v)
		c.Addrs = append(c.Addrs, v.Addr)
	}
	for i, addr := range c.Addrs {
		lo, hi := i*ClusterSlots/n, (i+1)*ClusterSlots/n-1
		if _, err := clusterDo(ctx, addr, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return nil, fmt.Errorf("engines: cluster node %s: %w", addr, err)
		}
	}
	for _, addr := range c.Addrs[1:] {
		host, port, _ := net.SplitHostPort(addr)
		busPort, err := clusterBusPort(ctx, addr)
		if err != nil {
			return nil, err
		}
		if _, err := clusterDo(ctx, c.Addrs[0], "CLUSTER", "MEET", host, port, busPort); err != nil {
			return nil, fmt.Errorf("engines: cluster meet %s: %w", addr, err)
		}
	}
	if err := waitCluster(ctx, c.Addrs, n); err != nil {
		return nil, err
	}
	return c, nil
}

// clusterBusPort reads a node's cluster-port setting.
func clusterBusPort(ctx context.Context, addr string) (string, error) {
	v, err := clusterDo(ctx, addr, "CONFIG", "GET", "cluster-port")
	if err != nil {
		return "", fmt.Errorf("engines: cluster-port of %s: %w", addr, err)
	}
	if len(v.Elems) != 2 {
		return "", fmt.Errorf("engines: cluster-port of %s: odd reply %v", addr, v)
	}
	return v.Elems[1].Text(), nil
}

// waitCluster polls until every node says cluster_state:ok and all agree on the shard map.
func waitCluster(ctx context.Context, addrs []string, primaries int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := checkClusterN(ctx, addrs, primaries)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w (last: %w)", ErrClusterNotReady, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkCluster judges a given cluster once: ok on every node and one agreed map.
func checkCluster(ctx context.Context, addrs []string) error { return checkClusterN(ctx, addrs, 0) }

// checkClusterN: every node reports cluster_state:ok, every node's CLUSTER SHARDS gives the same
// primaries and slot ranges, the ranges cover 0..16383 exactly once, and (when primaries > 0)
// there are that many primaries owning slots.
func checkClusterN(ctx context.Context, addrs []string, primaries int) error {
	var first string
	for _, addr := range addrs {
		v, err := clusterDo(ctx, addr, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("CLUSTER INFO on %s: %w", addr, err)
		}
		if !strings.Contains(v.Text(), "cluster_state:ok") {
			return fmt.Errorf("%w: %s is not cluster_state:ok", ErrClusterNotReady, addr)
		}
		shards, err := ClusterShards(ctx, addr)
		if err != nil {
			return err
		}
		if err := coverage(shards, primaries); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrClusterNotReady, addr, err)
		}
		if s := fmt.Sprint(shards); first == "" {
			first = s
		} else if s != first {
			return fmt.Errorf("%w: %s sees %s, %s sees %s", ErrClusterNotReady, addrs[0], first, addr, s)
		}
	}
	return nil
}

// Shard is one primary of a cluster as CLUSTER SHARDS describes it.
type Shard = slotmap.Shard

// ClusterShards asks addr for CLUSTER SHARDS and returns the primaries that own slots, sorted by
// their first slot.
func ClusterShards(ctx context.Context, addr string) ([]Shard, error) {
	v, err := clusterDo(ctx, addr, "CLUSTER", "SHARDS")
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SHARDS on %s: %w", addr, err)
	}
	shards, err := slotmap.Parse(v, addr)
	if errors.Is(err, slotmap.ErrNoPrimary) {
		return nil, nil // a cluster still forming: coverage says what is missing
	}
	return shards, err
}

// coverage checks the shards' ranges cover every slot exactly once.
func coverage(shards []Shard, primaries int) error {
	if primaries > 0 && len(shards) != primaries {
		return fmt.Errorf("%d primaries own slots, want %d", len(shards), primaries)
	}
	var rs [][2]int
	for _, s := range shards {
		rs = append(rs, s.Slots...)
	}
	slices.SortFunc(rs, func(a, b [2]int) int { return a[0] - b[0] })
	next := 0
	for _, r := range rs {
		if r[0] != next || r[1] < r[0] {
			return fmt.Errorf("slot ranges %v leave a gap or overlap at %d", rs, next)
		}
		next = r[1] + 1
	}
	if next != ClusterSlots {
		return fmt.Errorf("slot ranges %v stop at %d", rs, next-1)
	}
	return nil
}

// MoveSlot moves slot from primary src to primary dst the way a resharding tool does: SETSLOT
// IMPORTING on dst and MIGRATING on src, MIGRATE of the slot's keys in batches of batch keys,
// between (when not nil) run after each batch (a drill waits there for live traffic to meet the
// half-moved slot), then SETSLOT NODE on every primary of shards. It returns the number of keys
// moved.
func MoveSlot(ctx context.Context, shards []Shard, src, dst Shard, slot, batch int, between func(context.Context) error) (int, error) {
	s := strconv.Itoa(slot)
	do := func(addr string, args ...string) (resp.Value, error) {
		v, err := clusterDo(ctx, addr, args...)
		if err != nil {
			return v, fmt.Errorf("engines: move slot %d: %s %v: %w", slot, addr, args[:min(len(args), 4)], err)
		}
		return v, nil
	}
	if _, err := do(dst.Primary, "CLUSTER", "SETSLOT", s, "IMPORTING", src.ID); err != nil {
		return 0, err
	}
	if _, err := do(src.Primary, "CLUSTER", "SETSLOT", s, "MIGRATING", dst.ID); err != nil {
		return 0, err
	}
	host, port, _ := net.SplitHostPort(dst.Primary)
	moved := 0
	for {
		v, err := do(src.Primary, "CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(batch))
		if err != nil {
			return moved, err
		}
		ks := v.Elems
		if len(ks) == 0 {
			break
		}
		args := []string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}
		for _, k := range ks {
			args = append(args, k.Text())
		}
		if _, err := do(src.Primary, args...); err != nil {
			return moved, err
		}
		moved += len(ks)
		if between != nil {
			if err := between(ctx); err != nil {
				return moved, fmt.Errorf("engines: move slot %d: %w", slot, err)
			}
		}
	}
	// The new owner first, then the old, then the rest: the order a resharding tool uses, so no
	// node points a client back at the source once it has given the slot away.
	for _, addr := range append([]string{dst.Primary, src.Primary}, others(shards, src, dst)...) {
		if _, err := do(addr, "CLUSTER", "SETSLOT", s, "NODE", dst.ID); err != nil {
			return moved, err
		}
	}
	return moved, nil
}

func others(shards []Shard, a, b Shard) []string {
	var out []string
	for _, s := range shards {
		if s.Primary != a.Primary && s.Primary != b.Primary {
			out = append(out, s.Primary)
		}
	}
	return out
}
