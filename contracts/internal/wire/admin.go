package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/kit/reference/keys"
	"github.com/echomq/kit/reference/resp"
)

// Admin is the harness's own access to the server under test: one connection to a standalone
// Valkey, or one to every primary of a Valkey Cluster, with the slot map read when the clause
// opens. Each harness command goes where the server would run it: a keyed command to the primary
// owning its key's slot, FLUSHALL, SCRIPT and CONFIG to every primary, a keyless read (TIME,
// COMMAND GETKEYS, CLIENT, ECHO) to any node, SCAN through Scan (every primary in turn).
type Admin struct {
	Nodes []*Node
	owner []int // cluster: slot → index in Nodes; nil for a standalone server
}

// Node is one server the harness talks to.
type Node struct {
	Addr  string // host:port
	Label string // what MONITOR lines of this node carry as Line.Node: "" standalone, addr in a cluster
	C     *Conn
}

// ErrClusterMap: the cluster's slot map could not be read or is not whole.
var ErrClusterMap = errors.New("wire: cluster slot map")

// DialAdmin connects to a standalone server.
func DialAdmin(ctx context.Context, addr string) (*Admin, error) {
	c, err := Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &Admin{Nodes: []*Node{{Addr: addr, C: c}}}, nil
}

// DialCluster reads CLUSTER SHARDS from the first node of seeds that answers and connects
// to every primary, ordered by the slots they own.
func DialCluster(ctx context.Context, seeds []string) (*Admin, error) {
	var owner []string
	var errs []error
	for _, s := range seeds {
		c, err := Dial(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		owner, err = readShards(ctx, c)
		c.Close()
		if err == nil {
			break
		}
		errs = append(errs, err)
	}
	if owner == nil {
		return nil, fmt.Errorf("%w: %w", ErrClusterMap, errors.Join(errs...))
	}
	a := &Admin{owner: make([]int, keys.Slots)}
	at := map[string]int{}
	for slot, addr := range owner {
		if addr == "" {
			a.Close()
			return nil, fmt.Errorf("%w: slot %d has no primary", ErrClusterMap, slot)
		}
		i, ok := at[addr]
		if !ok {
			c, err := Dial(ctx, addr)
			if err != nil {
				a.Close()
				return nil, fmt.Errorf("primary %s: %w", addr, err)
			}
			i = len(a.Nodes)
			at[addr] = i
			a.Nodes = append(a.Nodes, &Node{Addr: addr, Label: addr, C: c})
		}
		a.owner[slot] = i
	}
	return a, nil
}

// readShards is the slot → primary host:port table of CLUSTER SHARDS.
func readShards(ctx context.Context, c *Conn) ([]string, error) {
	v, err := c.Do(ctx, "CLUSTER", "SHARDS")
	if err != nil {
		return nil, fmt.Errorf("%w: CLUSTER SHARDS: %w", ErrClusterMap, err)
	}
	owner := make([]string, keys.Slots)
	for _, shard := range v.Elems {
		f := respFields(shard)
		primary := ""
		for _, n := range f["nodes"].Elems {
			nf := respFields(n)
			if role := nf["role"].Text(); role != "master" && role != "primary" {
				continue
			}
			port, _ := nf["port"].Int64()
			ip := nf["ip"].Text()
			if ip == "" { // a lone primary that never met a peer: it is the node we asked
				ip, _, _ = net.SplitHostPort(c.nc.RemoteAddr().String())
			}
			primary = net.JoinHostPort(ip, strconv.FormatInt(port, 10))
		}
		ss := f["slots"].Elems
		for i := 0; i+1 < len(ss) && primary != ""; i += 2 {
			lo, _ := ss[i].Int64()
			hi, _ := ss[i+1].Int64()
			for s := lo; s <= hi && s < keys.Slots; s++ {
				owner[s] = primary
			}
		}
	}
	return owner, nil
}

// respFields reads a RESP2 flat key/value array.
func respFields(v resp.Value) map[string]resp.Value {
	m := map[string]resp.Value{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[v.Elems[i].Text()] = v.Elems[i+1]
	}
	return m
}

// SetWait lets calls on every connection take up to d (Conn.SetWait).
func (a *Admin) SetWait(d time.Duration) {
	for _, n := range a.Nodes {
		n.C.SetWait(d)
	}
}

// Close closes every connection.
func (a *Admin) Close() {
	for _, n := range a.Nodes {
		n.C.Close()
	}
}

// Cluster tells a cluster from a standalone server.
func (a *Admin) Cluster() bool { return a.owner != nil }

// Locals are the harness's own client addresses, told apart from the port's in MONITOR.
func (a *Admin) Locals() []string {
	var out []string
	for _, n := range a.Nodes {
		out = append(out, n.C.Local())
	}
	return out
}

// Addrs are the nodes' addresses (the primaries, in slot order, in a cluster).
func (a *Admin) Addrs() []string {
	var out []string
	for _, n := range a.Nodes {
		out = append(out, n.Addr)
	}
	return out
}

// OwnerOf is the label of the node owning slot ("" standalone).
func (a *Admin) OwnerOf(slot uint16) string {
	if a.owner == nil {
		return ""
	}
	return a.Nodes[a.owner[slot]].Label
}

// MoveSlot moves slot to the primary Nodes[to] as a resharding tool does, over the harness's own
// connections: SETSLOT IMPORTING on the new owner and MIGRATING on the old, MIGRATE of the keys
// the old one holds, SETSLOT NODE on the new owner, the old, then the rest. From then on the
// harness's commands on the slot go to the new owner. It returns the old owner's index.
func (a *Admin) MoveSlot(ctx context.Context, slot uint16, to int) (int, error) {
	from, err := a.StartMove(ctx, slot, to)
	if err != nil || from == to {
		return from, err
	}
	return from, a.EndMove(ctx, slot, to)
}

// StartMove takes slot half way to the primary of index to: IMPORTING there, MIGRATING on its
// owner, every key of the slot migrated, the owner unchanged until EndMove. Its owner answers a
// call on the slot ASK (every key is on the other primary), which runs it after ASKING. It
// returns the owner's index.
func (a *Admin) StartMove(ctx context.Context, slot uint16, to int) (int, error) {
	if a.owner == nil {
		return 0, errors.New("wire: move slot: not a cluster")
	}
	from := a.owner[slot]
	if from == to {
		return from, nil
	}
	ids, err := a.nodeIDs(ctx)
	if err != nil {
		return from, fmt.Errorf("wire: move slot %d: %w", slot, err)
	}
	src, dst, s := a.Nodes[from], a.Nodes[to], strconv.Itoa(int(slot))
	if _, err := moveStep(ctx, dst, slot, "CLUSTER", "SETSLOT", s, "IMPORTING", ids[from]); err != nil {
		return from, err
	}
	if _, err := moveStep(ctx, src, slot, "CLUSTER", "SETSLOT", s, "MIGRATING", ids[to]); err != nil {
		return from, err
	}
	host, port, _ := net.SplitHostPort(dst.Addr)
	for {
		v, err := moveStep(ctx, src, slot, "CLUSTER", "GETKEYSINSLOT", s, "100")
		if err != nil {
			return from, err
		}
		if len(v.Elems) == 0 {
			return from, nil
		}
		args := []any{"MIGRATE", host, port, "", "0", "5000", "KEYS"}
		for _, k := range v.Elems {
			args = append(args, k.Text())
		}
		if _, err := moveStep(ctx, src, slot, args...); err != nil {
			return from, err
		}
	}
}

// EndMove ends StartMove's move of slot: every primary assigns it to the one of index to, that
// one first and its old owner next.
func (a *Admin) EndMove(ctx context.Context, slot uint16, to int) error {
	from := a.owner[slot]
	ids, err := a.nodeIDs(ctx)
	if err != nil {
		return fmt.Errorf("wire: move slot %d: %w", slot, err)
	}
	order := []int{to, from}
	for i := range a.Nodes {
		if i != to && i != from {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if _, err := moveStep(ctx, a.Nodes[i], slot, "CLUSTER", "SETSLOT", strconv.Itoa(int(slot)), "NODE", ids[to]); err != nil {
			return err
		}
	}
	a.owner[slot] = to
	return nil
}

// nodeIDs are the primaries' cluster node ids, in slot order.
func (a *Admin) nodeIDs(ctx context.Context) ([]string, error) {
	ids := make([]string, len(a.Nodes))
	for i, n := range a.Nodes {
		v, err := n.C.Do(ctx, "CLUSTER", "MYID")
		if err != nil {
			return nil, fmt.Errorf("CLUSTER MYID on %s: %w", n.Addr, err)
		}
		ids[i] = v.Text()
	}
	return ids, nil
}

// moveStep sends one command of a slot's move to n.
func moveStep(ctx context.Context, n *Node, slot uint16, args ...any) (resp.Value, error) {
	v, err := n.C.Do(ctx, args...)
	if err != nil {
		return v, fmt.Errorf("wire: move slot %d: %v on %s: %w", slot, args[:min(len(args), 4)], n.Addr, err)
	}
	return v, nil
}

// PrimaryOf is the index (in slot order) of the primary owning slot; 0 standalone.
func (a *Admin) PrimaryOf(slot uint16) int {
	if a.owner == nil {
		return 0
	}
	return a.owner[slot]
}

// keyless commands go to any node; broadcast ones to every node.
var (
	adminKeyless   = map[string]bool{"TIME": true, "COMMAND": true, "CLIENT": true, "ECHO": true, "PING": true, "INFO": true, "MULTI": true, "EXEC": true, "DISCARD": true, "DBSIZE": true, "CLUSTER": true, "HELLO": true}
	adminBroadcast = map[string]bool{"FLUSHALL": true, "FLUSHDB": true, "SCRIPT": true, "CONFIG": true}
)

// routeKey is the key a harness command is routed by ("" for a keyless one).
func routeKey(args []any) (string, error) {
	if len(args) == 0 {
		return "", errors.New("empty command")
	}
	cmd := strings.ToUpper(fmt.Sprint(args[0]))
	switch {
	case adminKeyless[cmd] || adminBroadcast[cmd]:
		return "", nil
	case cmd == "SCAN":
		return "", errors.New("SCAN on a cluster goes through Admin.Scan")
	case cmd == "EVAL" || cmd == "EVALSHA":
		if len(args) < 3 {
			return "", fmt.Errorf("%s without numkeys", cmd)
		}
		if n, _ := strconv.Atoi(fmt.Sprint(args[2])); n > 0 && len(args) > 3 {
			return fmt.Sprint(args[3]), nil
		}
		return "", nil
	case len(args) < 2:
		return "", nil
	}
	return fmt.Sprint(args[1]), nil
}

// nodeFor is where a command runs: nil with all true for a broadcast one.
func (a *Admin) nodeFor(args []any) (n *Node, all bool, err error) {
	if a.owner == nil {
		return a.Nodes[0], false, nil
	}
	if len(args) > 0 && adminBroadcast[strings.ToUpper(fmt.Sprint(args[0]))] {
		return nil, true, nil
	}
	k, err := routeKey(args)
	if err != nil {
		return nil, false, err
	}
	if k == "" {
		return a.Nodes[0], false, nil
	}
	return a.Nodes[a.owner[keys.Slot(k)]], false, nil
}

// Pipeline sends every command to one node, then reads every reply (a server error reply is
// returned in its Value). In a cluster the pipeline goes to the owner of its first keyed
// command; one whose keyed commands live on different primaries is the harness's mistake.
func (a *Admin) Pipeline(ctx context.Context, cmds ...[]any) ([]resp.Value, error) {
	if a.owner == nil {
		return a.Nodes[0].C.Pipeline(ctx, cmds...)
	}
	var to *Node
	for _, cmd := range cmds {
		n, all, err := a.nodeFor(cmd)
		if err != nil {
			return nil, err
		}
		if all {
			return nil, fmt.Errorf("%v in a pipeline: broadcast commands go alone", cmd[0])
		}
		k, _ := routeKey(cmd)
		if k == "" {
			continue
		}
		if to != nil && n != to {
			return nil, fmt.Errorf("a harness pipeline spans primaries %s and %s (key %s)", to.Addr, n.Addr, k)
		}
		to = n
	}
	if to == nil {
		to = a.Nodes[0]
	}
	return to.C.Pipeline(ctx, cmds...)
}

// Spread runs every command where it belongs — one pipeline per node, so the round trips do
// not grow with the commands — and returns the replies in the commands' order (a server error
// reply in its Value). Broadcast commands are the caller's to send alone.
func (a *Admin) Spread(ctx context.Context, cmds ...[]any) ([]resp.Value, error) {
	if a.owner == nil {
		return a.Nodes[0].C.Pipeline(ctx, cmds...)
	}
	byNode := map[*Node][]int{}
	for i, cmd := range cmds {
		n, all, err := a.nodeFor(cmd)
		if err != nil {
			return nil, err
		}
		if all {
			return nil, fmt.Errorf("%v in a spread pipeline: broadcast commands go alone", cmd[0])
		}
		byNode[n] = append(byNode[n], i)
	}
	out := make([]resp.Value, len(cmds))
	for n, at := range byNode {
		part := make([][]any, len(at))
		for j, i := range at {
			part[j] = cmds[i]
		}
		vs, err := n.C.Pipeline(ctx, part...)
		if err != nil {
			return nil, fmt.Errorf("pipeline on %s: %w", n.Addr, err)
		}
		for j, i := range at {
			out[i] = vs[j]
		}
	}
	return out, nil
}

// Do runs one command where it belongs and turns an error reply into an error. A broadcast
// command runs on every node; the first node's reply is returned.
func (a *Admin) Do(ctx context.Context, args ...any) (resp.Value, error) {
	n, all, err := a.nodeFor(args)
	if err != nil {
		return resp.Value{}, err
	}
	if !all {
		return n.C.Do(ctx, args...)
	}
	var first resp.Value
	for i, n := range a.Nodes {
		v, err := n.C.Do(ctx, args...)
		if err != nil {
			return v, fmt.Errorf("%s: %w", n.Addr, err)
		}
		if i == 0 {
			first = v
		}
	}
	return first, nil
}

// ServerMS is the server's clock in ms (any node: they share the host's clock here).
func (a *Admin) ServerMS(ctx context.Context) (int64, error) { return a.Nodes[0].C.ServerMS(ctx) }

// Scan lists the keys matching match ("" for all) on every node, sorted.
func (a *Admin) Scan(ctx context.Context, match string) ([]string, error) {
	var out []string
	for _, n := range a.Nodes {
		cursor := "0"
		for {
			args := []any{"SCAN", cursor}
			if match != "" {
				args = append(args, "MATCH", match)
			}
			v, err := n.C.Do(ctx, append(args, "COUNT", "1000")...)
			if err != nil {
				return nil, fmt.Errorf("SCAN on %s: %w", n.Addr, err)
			}
			if len(v.Elems) != 2 {
				return nil, fmt.Errorf("SCAN on %s: unexpected reply", n.Addr)
			}
			cursor = string(v.Elems[0].Str)
			for _, e := range v.Elems[1].Elems {
				out = append(out, string(e.Str))
			}
			if cursor == "0" {
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Errorstats reads INFO errorstats of every node: node label → error kind → count.
func (a *Admin) Errorstats(ctx context.Context) (map[string]map[string]int64, error) {
	out := map[string]map[string]int64{}
	for _, n := range a.Nodes {
		v, err := n.C.Do(ctx, "INFO", "errorstats")
		if err != nil {
			return nil, fmt.Errorf("INFO errorstats on %s: %w", n.Addr, err)
		}
		out[n.Label] = parseErrorstats(v.Text())
	}
	return out, nil
}

// parseErrorstats reads "errorstat_MOVED:count=3" lines.
func parseErrorstats(info string) map[string]int64 {
	m := map[string]int64{}
	for _, l := range strings.Split(info, "\n") {
		l = strings.TrimSpace(l)
		kind, rest, ok := strings.Cut(strings.TrimPrefix(l, "errorstat_"), ":count=")
		if !ok || !strings.HasPrefix(l, "errorstat_") {
			continue
		}
		n, err := strconv.ParseInt(rest, 10, 64)
		if err == nil {
			m[kind] = n
		}
	}
	return m
}

// PrimaryLabels are the nodes' MONITOR labels in slot order.
func (a *Admin) PrimaryLabels() []string {
	var out []string
	for _, n := range a.Nodes {
		out = append(out, n.Label)
	}
	return out
}
