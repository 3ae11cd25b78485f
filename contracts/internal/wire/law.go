package wire

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/keys"
)

// RuleID names a rule of the wire law. The judge quotes each one (contracts/rules); this
// package only says which one a violation breaks.
type RuleID string

// The wire law's rules (canon §7, PROTOCOL.md A4/A5) and its additions on a Valkey Cluster.
const (
	RuleFence          RuleID = "wire-fence-first"
	RuleEvalsha        RuleID = "wire-evalsha"
	RuleCommands       RuleID = "wire-commands"
	RuleKeysParse      RuleID = "wire-keys-parse"
	RuleDeclared       RuleID = "wire-declared-keys"
	RuleArgvID         RuleID = "wire-argv-id"
	RuleClusterOneSlot RuleID = "cluster-one-slot"
	RuleClusterOwner   RuleID = "cluster-owner"
	RuleClusterNoLeft  RuleID = "cluster-no-redirect-left"
)

// RuleIDs lists every rule a violation may name.
func RuleIDs() []RuleID {
	return []RuleID{RuleFence, RuleEvalsha, RuleCommands, RuleKeysParse, RuleDeclared, RuleArgvID, RuleClusterOneSlot, RuleClusterOwner, RuleClusterNoLeft}
}

// Violation is one breach of the wire law, with the lines that show it.
type Violation struct {
	Rule  RuleID
	What  string
	Lines []Line
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  rule: %s", v.What, v.Rule)
	for _, l := range v.Lines {
		fmt.Fprintf(&b, "\n  wire: %s", l)
	}
	return b.String()
}

// Law checks captured lines against the wire law.
type Law struct {
	scripts   map[string]lua.Script                 // by SHA1
	own       func(l Line) bool                     // the harness's own lines
	getkeys   func(args []string) ([]string, error) // COMMAND GETKEYS, for commands the table lacks
	cluster   *clusterView                          // nil on a standalone server
	unseen    map[string]bool                       // node|client: HELLO may have run unseen
	movedFrom map[string]bool                       // cluster: nodes the clause moved a slot away from
}

// clusterView is what the wire law knows of a cluster: which primary (Line.Node) owns a slot,
// and for a slot a clause moved, which one did before the move's end.
type clusterView struct {
	owner func(slot uint16) string
	until map[uint16]earlier
}

// earlier is a slot's owner on the lines before seq.
type earlier struct {
	seq   int
	owner string
}

// ownerAt is the owner of slot when line l ran.
func (c *clusterView) ownerAt(slot uint16, l Line) string {
	if e, ok := c.until[slot]; ok && l.Seq < e.seq {
		return e.owner
	}
	return c.owner(slot)
}

// OwnedUntil tells the law that node (a MONITOR label) owned slot on every line before seq, the
// capture's length when the clause ended a move of it: lines after the move's start (StartMove)
// and before its end may reach the new owner only after ASKING.
func (w *Law) OwnedUntil(slot uint16, seq int, node string) {
	if w.cluster == nil {
		return
	}
	if w.cluster.until == nil {
		w.cluster.until = map[uint16]earlier{}
	}
	w.cluster.until[slot] = earlier{seq, node}
}

// fenceSlack is how much later than the command it precedes a fence on the {emq} owner may be
// stamped: every node stamps MONITOR lines with the host's clock, read when it runs the command.
const fenceSlack = 5000 // µs

// NewLaw is the wire law of bundle b (and the admitted scripts: sha1 → name); own tells the
// harness's own lines, getkeys asks the server for the keys of a command the law's table lacks.
func NewLaw(b *lua.Bundle, admit map[string]string, own func(Line) bool, getkeys func([]string) ([]string, error)) *Law {
	w := &Law{scripts: map[string]lua.Script{}, own: own, getkeys: getkeys}
	for _, s := range b.Scripts() {
		w.scripts[s.SHA1] = s
	}
	for sha, name := range admit {
		w.scripts[sha] = lua.Script{Name: name, SHA1: sha}
	}
	return w
}

// OnCluster adds the cluster rules: owner is the label (Line.Node) of the primary owning a slot.
func (w *Law) OnCluster(owner func(slot uint16) string) { w.cluster = &clusterView{owner: owner} }

// HelloUnseen says the connection node|client may have sent its HELLO while the server fed no
// MONITOR (loading its dataset, when HELLO is served and every write refused LOADING): its
// first command seen may be the fence, which is a write and so ran, seen, after the load.
func (w *Law) HelloUnseen(node, client string) {
	if w.unseen == nil {
		w.unseen = map[string]bool{}
	}
	w.unseen[node+"|"+client] = true
}

// IsFence says sha is the fence script's: the bundle's, or an admitted edit of it.
func (w *Law) IsFence(sha string) bool { return w.scripts[sha].Name == lua.Fence }

// Scripts are the scripts the law admits, by SHA1 (read-only).
func (w *Law) Scripts() map[string]lua.Script { return w.scripts }

// Commands a port may send outside scripts that read grammar keys (A4).
var readOnly = []string{"ZRANGE", "ZSCORE", "ZCARD", "HGET", "HMGET", "HGETALL", "LLEN", "LRANGE", "EXISTS", "TYPE"}

// Commands on the minter lease key {emq}:minter:<w> (A9: lease, renewal, release).
var minterCmds = []string{"SET", "GET", "PEXPIRE", "PTTL", "DEL", "UNLINK", "EXISTS"}

// Commands whose only key is their first argument.
var firstKey = map[string]bool{}

func init() {
	for _, c := range strings.Fields(`ZADD ZREM ZSCORE ZPOPMIN ZPOPMAX ZRANGE ZRANGEBYSCORE ZREVRANGE
	ZREVRANGEBYSCORE ZCARD ZCOUNT ZRANK ZINCRBY ZMSCORE ZRANGEBYLEX ZREMRANGEBYSCORE ZREMRANGEBYRANK
	HSET HSETNX HGET HMGET HDEL HINCRBY HGETALL HEXISTS HLEN HKEYS HVALS HMSET LLEN RPUSH LPUSH
	RPUSHX LPUSHX LPOP RPOP LRANGE LREM LPOS LINDEX LSET LTRIM GET SET INCR INCRBY DECR EXPIRE
	PEXPIRE PTTL TTL TYPE SADD SREM SISMEMBER SMEMBERS SCARD`) {
		firstKey[c] = true
	}
}

// KeysOf returns the keys a command names.
func (w *Law) KeysOf(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	switch c := strings.ToUpper(args[0]); {
	case c == "TIME" || c == "PING" || c == "ECHO" || c == "HELLO" || c == "SELECT" || c == "CLIENT" || c == "SCRIPT" || c == "CLUSTER" || c == "ASKING":
		return nil, nil
	case firstKey[c]:
		if len(args) < 2 {
			return nil, nil
		}
		return args[1:2], nil
	case c == "DEL" || c == "UNLINK" || c == "EXISTS" || c == "TOUCH" || c == "MGET":
		return args[1:], nil
	case c == "BLPOP" || c == "BRPOP":
		if len(args) < 3 {
			return nil, nil
		}
		return args[1 : len(args)-1], nil
	case c == "EVALSHA" || c == "EVAL" || c == "EVALSHA_RO" || c == "EVAL_RO" || c == "FCALL" || c == "FCALL_RO":
		ks, _, err := EvalKeys(args)
		return ks, err
	}
	return w.getkeys(args)
}

// EvalKeys splits EVALSHA sha numkeys k… a… into KEYS and ARGV.
func EvalKeys(args []string) (ks, argv []string, err error) {
	if len(args) < 3 {
		return nil, nil, fmt.Errorf("EVALSHA without numkeys")
	}
	n, err := strconv.Atoi(args[2])
	if err != nil || n < 0 || 3+n > len(args) {
		return nil, nil, fmt.Errorf("EVALSHA numkeys %q", args[2])
	}
	return args[3 : 3+n], args[3+n:], nil
}

// Check returns every violation in lines (the whole capture of one session).
func (w *Law) Check(lines []Line) []Violation {
	var out []Violation
	add := func(rule RuleID, what string, ls ...Line) {
		out = append(out, Violation{Rule: rule, What: what, Lines: ls})
	}
	emqOwner := ""
	if w.cluster != nil {
		emqOwner = w.cluster.owner(keys.Slot(keys.Bundle()))
	}
	stage := map[string]int{} // per port connection: 0 before HELLO, 1 before the fence, 2 fenced
	prev := map[string]string{}
	var hidden []Line       // cluster: first commands of connections whose fence was redirected
	owned := map[int]bool{} // cluster: fences (by Seq) that opened a connection on the {emq} owner
	for _, l := range lines {
		if l.Client == "lua" || w.own(l) {
			continue
		}
		conn := l.Node + "|" + l.Client
		cmd := l.Cmd()
		st := stage[conn]
		if st == 1 && cmd == "HELLO" {
			// MONITOR tells connections apart by address alone, and loopback hands a closed
			// connection's port to the next one at once: a connection that said HELLO and closed
			// (its server's reply refused) and a new one on the same address read as one, and
			// the new one starts over.
			st = 0
		}
		switch {
		case st == 0 && w.unseen[conn] && cmd == "EVALSHA" && len(l.Args) > 1 && w.IsFence(l.Args[1]):
			stage[conn] = 2
			owned[l.Seq] = true
		case st == 0:
			if cmd != "HELLO" {
				add(RuleFence, fmt.Sprintf("connection %s: first command was %s, not HELLO 2", l.Client, cmd), l)
				stage[conn] = 2 // one report per connection
				break
			}
			if len(l.Args) < 2 || l.Args[1] != "2" {
				add(RuleFence, fmt.Sprintf("connection %s: HELLO without protocol 2", l.Client), l)
			}
			stage[conn] = 1
		case st == 1:
			switch {
			case cmd == "EVALSHA" && len(l.Args) > 1 && w.IsFence(l.Args[1]):
				stage[conn] = 2
				owned[l.Seq] = true
			case cmd == "SCRIPT" && len(l.Args) > 1 && strings.EqualFold(l.Args[1], "LOAD"):
			case w.cluster != nil && cmd == "CLUSTER":
				// Reading the slot map needs no fence: it touches no key.
			case w.cluster != nil && l.Node != emqOwner:
				// The fence's key lives on the {emq} slot: this node answered it MOVED (MONITOR
				// does not show it) and the fence ran on the owner, matched below.
				hidden = append(hidden, l)
				stage[conn] = 2
			default:
				add(RuleFence, fmt.Sprintf("connection %s: %s before the fence script ran", l.Client, cmd), l)
				stage[conn] = 2
			}
		}
		out = append(out, w.command(l, prev[conn] == "ASKING")...)
		prev[conn] = cmd
	}
	if w.cluster != nil {
		out = append(out, w.redirectedFences(lines, emqOwner, owned, hidden)...)
	}
	out = append(out, w.reloads(lines)...)
	// Keys inside port scripts.
	for _, l := range lines {
		if l.Client != "lua" || l.Script < 0 || l.Script >= len(lines) {
			continue
		}
		outer := lines[l.Script]
		if w.own(outer) {
			continue
		}
		out = append(out, w.scriptKey(outer, l)...)
	}
	return out
}

// reloads finds an EVALSHA retried after a SCRIPT LOAD that no NOSCRIPT asked for (canon §5.3,
// A4-1): three commands in a row on one connection, an EVALSHA that ran (its [lua] lines show)
// or whose script the node held when it was sent (loaded or run there earlier in the capture,
// no SCRIPT FLUSH since: it cannot have answered NOSCRIPT, whatever else it answered), a SCRIPT
// LOAD of its script, and the same EVALSHA again (its keys and arguments too), while no earlier
// send of that script on the connection may still await its retry. The first send ran, so the
// retry may apply an effect twice. The first EVALSHA must not itself follow a load of its
// script: with calls pipelined on one connection after a SCRIPT FLUSH, each NOSCRIPT's load and
// retry may follow another call's retry, which ran. A load that preloads a script (the cluster
// router's LoadBundle) has no retry after it.
func (w *Law) reloads(lines []Line) []Violation {
	ran := map[int]bool{}
	for _, l := range lines {
		if l.Client == "lua" {
			ran[l.Script] = true
		}
	}
	script := func(l Line) string { // the script an EVALSHA runs or a SCRIPT LOAD loads
		switch {
		case l.Cmd() == "EVALSHA":
			return strings.ToLower(l.Arg(1))
		case l.Cmd() == "SCRIPT" && strings.EqualFold(l.Arg(1), "LOAD"):
			sum := sha1.Sum([]byte(l.Arg(2)))
			return hex.EncodeToString(sum[:])
		}
		return ""
	}
	held := heldScripts(lines, ran, script)
	last := map[string][]int{} // node|client: the connection's last three commands
	// node|client|sha: sends of the script on the connection that may have met NOSCRIPT (they
	// neither ran nor found it held) and whose retry has not been seen yet. Identical calls
	// pipelined on one connection (a park's claims) are told apart by nothing else.
	waiting := map[string]int{}
	var out []Violation
	for i, l := range lines {
		if l.Client == "lua" || w.own(l) {
			continue
		}
		conn := l.Node + "|" + l.Client
		p := last[conn]
		last[conn] = append(p[max(0, len(p)-2):], i)
		if l.Cmd() != "EVALSHA" {
			continue
		}
		sha := script(l)
		afterLoad := len(p) > 0 && lines[p[len(p)-1]].Cmd() == "SCRIPT" && script(lines[p[len(p)-1]]) == sha
		owed := waiting[conn+"|"+sha]
		switch {
		case afterLoad && owed > 0:
			waiting[conn+"|"+sha]-- // the retry of a send that met NOSCRIPT
		case !ran[i] && !held[i]:
			waiting[conn+"|"+sha]++
		}
		if n := len(p); n >= 2 && afterLoad && owed == 0 {
			first := lines[p[n-2]]
			fresh := n < 3 || lines[p[n-3]].Cmd() == "EVALSHA" || script(lines[p[n-3]]) != sha
			// A retry resends its call: the same keys and arguments. With calls pipelined on one
			// connection, the EVALSHA after the load may be another call's retry (its NOSCRIPT
			// answered long before) behind a call of the same script that ran.
			same := slices.Equal(first.Args, l.Args)
			if first.Cmd() == "EVALSHA" && script(first) == sha && same && (ran[p[n-2]] || held[p[n-2]]) && fresh {
				out = append(out, Violation{Rule: RuleCommands, Lines: []Line{first, lines[p[n-1]], l},
					What: fmt.Sprintf("connection %s: EVALSHA %s retried after a SCRIPT LOAD, though its first send ran: a retry no NOSCRIPT asked for (SCRIPT LOAD and the one retry only after NOSCRIPT)", l.Client, sha)})
			}
		}
	}
	return out
}

// heldScripts marks each EVALSHA sent while its node held its script: loaded there (by anyone,
// the kit included) or run there earlier in lines, with no SCRIPT FLUSH on that node since.
func heldScripts(lines []Line, ran map[int]bool, script func(Line) string) map[int]bool {
	cache := map[string]bool{} // node|sha
	held := map[int]bool{}
	for i, l := range lines {
		if l.Client == "lua" {
			continue
		}
		switch {
		case l.Cmd() == "SCRIPT" && strings.EqualFold(l.Arg(1), "FLUSH"):
			for k := range cache {
				if strings.HasPrefix(k, l.Node+"|") {
					delete(cache, k)
				}
			}
		case l.Cmd() == "SCRIPT" && strings.EqualFold(l.Arg(1), "LOAD"):
			cache[l.Node+"|"+script(l)] = true
		case l.Cmd() == "EVALSHA":
			k := l.Node + "|" + script(l)
			held[i] = cache[k]
			if ran[i] {
				cache[k] = true
			}
		}
	}
	return held
}

// redirectedFences matches each connection whose fence a node redirected (hidden, in capture
// order) with a distinct run of the fence by the port on the {emq} slot's owner, stamped no
// later than that connection's first command; the fences that opened the owner's own
// connections (owned, by Seq) are theirs.
func (w *Law) redirectedFences(lines []Line, emqOwner string, owned map[int]bool, hidden []Line) []Violation {
	var fences []int64
	for _, l := range lines {
		if l.Client != "lua" && !w.own(l) && l.Node == emqOwner && l.Cmd() == "EVALSHA" && w.IsFence(l.Arg(1)) && !owned[l.Seq] {
			fences = append(fences, l.At)
		}
	}
	slices.Sort(fences)
	slices.SortStableFunc(hidden, func(a, b Line) int { return cmp.Compare(a.At, b.At) })
	var out []Violation
	j := 0
	for _, l := range hidden {
		if j < len(fences) && fences[j] <= l.At+fenceSlack {
			j++
			continue
		}
		out = append(out, Violation{Rule: RuleFence, What: fmt.Sprintf("connection %s on %s: %s with no fence run on the {emq} slot's owner %s before it (the node redirects the fence; the port must run it at the owner)", l.Client, l.Node, l.Cmd(), emqOwner), Lines: []Line{l}})
	}
	return out
}

// SlotMoved tells RedirectsLeft that the clause moved a slot away from node (a MONITOR label)
// after the port had read the slot map, or began to (StartMove): the port learns of the move
// from that node's MOVED, or its ASK while the slot is half way, one for each of its calls that
// went there first.
func (w *Law) SlotMoved(node string) {
	if w.movedFrom == nil {
		w.movedFrom = map[string]bool{}
	}
	w.movedFrom[node] = true
}

// RedirectsLeft checks INFO errorstats of every primary (reset when the clause opened): no
// CROSSSLOT and no ASK, and MOVED only on a node not owning the {emq} slot, at most once per
// port connection to it (its handshake's fence, redirected to the owner); a connection that
// only read the slot map (HELLO, CLUSTER) sent no fence. A node the clause moved a slot away
// from (SlotMoved) may answer MOVED or ASK any number of times.
func (w *Law) RedirectsLeft(lines []Line, stats map[string]map[string]int64) []Violation {
	if w.cluster == nil {
		return nil
	}
	emqOwner := w.cluster.owner(keys.Slot(keys.Bundle()))
	conns := map[string]map[string]bool{} // node → port connection → it read the slot map
	for _, l := range lines {
		if l.Client == "lua" || w.own(l) {
			continue
		}
		if conns[l.Node] == nil {
			conns[l.Node] = map[string]bool{}
		}
		conns[l.Node][l.Client] = conns[l.Node][l.Client] || l.Cmd() == "CLUSTER"
	}
	used := map[string]int{}
	for node, cs := range conns {
		for _, mapRead := range cs {
			if !mapRead {
				used[node]++
			}
		}
	}
	var out []Violation
	for _, node := range slices.Sorted(maps.Keys(stats)) {
		st := stats[node]
		if n := st["CROSSSLOT"]; n > 0 {
			out = append(out, Violation{Rule: RuleClusterNoLeft, What: fmt.Sprintf("primary %s answered CROSSSLOT %d time(s): a call named keys of more than one slot", node, n)})
		}
		if n := st["ASK"]; n > 0 && !w.movedFrom[node] {
			out = append(out, Violation{Rule: RuleClusterNoLeft, What: fmt.Sprintf("primary %s answered ASK %d time(s) with no slot moving: a call went to a node that does not own its slot", node, n)})
		}
		allowed := int64(used[node])
		if node == emqOwner {
			allowed = 0
		}
		if n := st["MOVED"]; n > allowed && !w.movedFrom[node] {
			out = append(out, Violation{Rule: RuleClusterNoLeft, What: fmt.Sprintf("primary %s answered MOVED %d time(s), more than the %d handshake fence(s) it may redirect: calls went to a node that does not own their slot", node, n, allowed)})
		}
	}
	return out
}

// command checks one command a port sent outside any script; asking says the connection's
// previous command was ASKING.
func (w *Law) command(l Line, asking bool) []Violation {
	var out []Violation
	add := func(rule RuleID, what string) { out = append(out, Violation{Rule: rule, What: what, Lines: []Line{l}}) }
	cmd := l.Cmd()
	sub := ""
	if len(l.Args) > 1 {
		sub = strings.ToUpper(l.Args[1])
	}
	ks, err := w.KeysOf(l.Args)
	if err != nil {
		add(RuleCommands, fmt.Sprintf("%s: cannot tell its keys: %v", cmd, err))
		return out
	}
	if w.cluster != nil && len(ks) > 0 {
		if v := coLocated(ks); v != "" {
			add(RuleClusterOneSlot, cmd+"'s keys "+v)
		} else if owner := w.cluster.ownerAt(keys.Slot(ks[0]), l); owner != l.Node && !asking {
			add(RuleClusterOwner, fmt.Sprintf("%s on slot %d reached %s, which does not own it (%s does)", cmd, keys.Slot(ks[0]), l.Node, owner))
		}
	}
	var parsed []keys.Parsed
	for _, k := range ks {
		p, err := keys.Parse(k)
		if err != nil {
			add(RuleKeysParse, fmt.Sprintf("%s touches %q, which does not parse: %v", cmd, k, err))
			return out
		}
		parsed = append(parsed, p)
	}
	switch {
	case cmd == "HELLO" || cmd == "PING":
	case w.cluster != nil && cmd == "ASKING":
	case w.cluster != nil && cmd == "CLUSTER":
		if sub != "SHARDS" && sub != "SLOTS" && sub != "NODES" && sub != "INFO" && sub != "MYID" {
			add(RuleCommands, "CLUSTER "+sub+" is not among the commands a port may send (a port reads the slot map: SHARDS, SLOTS, NODES, INFO, MYID)")
		}
	case cmd == "SELECT":
		if sub != "0" {
			add(RuleCommands, "SELECT of a database other than 0")
		}
	case cmd == "CLIENT":
		if sub != "SETNAME" && sub != "SETINFO" {
			add(RuleCommands, "CLIENT "+sub+" is not among the commands a port may send")
		}
	case cmd == "SCRIPT":
		if sub != "LOAD" {
			add(RuleCommands, "SCRIPT "+sub+" is not among the commands a port may send")
		}
	case cmd == "EVALSHA":
		if len(l.Args) < 2 {
			add(RuleEvalsha, "EVALSHA without a SHA1")
			break
		}
		if _, ok := w.scripts[strings.ToLower(l.Args[1])]; !ok {
			add(RuleEvalsha, fmt.Sprintf("EVALSHA %s is not a script of the bundle", l.Args[1]))
		}
		if v := coLocated(ks); v != "" {
			add(RuleKeysParse, "EVALSHA's KEYS "+v)
		}
		if _, argv, err := EvalKeys(l.Args); err == nil {
			for i, a := range argv {
				if strings.HasPrefix(a, "emq:{") || strings.HasPrefix(a, "{emq}:") {
					add(RuleDeclared, fmt.Sprintf("EVALSHA passes key material in ARGV[%d] = %q: a script could build an operand key from it", i+1, a))
				}
			}
		}
	case cmd == "EVAL" || cmd == "EVAL_RO" || cmd == "EVALSHA_RO" || cmd == "FCALL" || cmd == "FCALL_RO" || cmd == "FUNCTION":
		add(RuleEvalsha, cmd+" is never allowed: transitions are EVALSHA of bundle scripts")
	case cmd == "MULTI" || cmd == "EXEC" || cmd == "DISCARD" || cmd == "WATCH":
		add(RuleEvalsha, cmd+": a transaction is a loose command sequence, not a bundle script")
	case cmd == "BLPOP":
		for _, p := range parsed {
			if p.Kind != keys.KindWake {
				add(RuleCommands, fmt.Sprintf("BLPOP on %s: the only blocking pop is on a wake key", p.Key()))
			}
		}
	case slices.Contains(readOnly, cmd):
	case slices.Contains(minterCmds, cmd) && len(parsed) > 0 && allMinter(parsed):
	case len(parsed) > 0 && len(parsed) == len(ks) && allMinter(parsed):
		// A4 gives the minter keys their own short list: a command outside it and outside the
		// read-only ones is outside A4, not a state change to attribute to the scripts.
		add(RuleCommands, fmt.Sprintf("%s on %s: the minter keys take only %s", cmd, strings.Join(ks, " "), strings.Join(minterCmds, ", ")))
	default:
		if len(ks) > 0 {
			add(RuleEvalsha, fmt.Sprintf("loose %s on %s: a state change outside a bundle script, or a command outside A4", cmd, strings.Join(ks, " ")))
		} else {
			add(RuleCommands, cmd+" is not among the commands a port may send")
		}
	}
	return out
}

func allMinter(ps []keys.Parsed) bool {
	for _, p := range ps {
		if p.Kind != keys.KindMinter {
			return false
		}
	}
	return true
}

// coLocated says what is wrong when keys do not all answer one slot ("" when they do).
func coLocated(ks []string) string {
	for _, k := range ks[min(1, len(ks)):] {
		if keys.Slot(k) != keys.Slot(ks[0]) {
			return fmt.Sprintf("%q (slot %d) and %q (slot %d) answer different slots", ks[0], keys.Slot(ks[0]), k, keys.Slot(k))
		}
	}
	return ""
}

// scriptKey checks the keys one lua line of a port's script touches.
func (w *Law) scriptKey(outer, l Line) []Violation {
	var out []Violation
	add := func(rule RuleID, what string) {
		out = append(out, Violation{Rule: rule, What: what, Lines: []Line{outer, l}})
	}
	declared, argv, err := EvalKeys(outer.Args)
	if err != nil {
		return nil // the outer line's own check reports it
	}
	touched, err := w.KeysOf(l.Args)
	if err != nil {
		add(RuleDeclared, fmt.Sprintf("script line %s: cannot tell its keys: %v", l.Cmd(), err))
		return out
	}
	name := "script"
	if s, ok := w.scripts[strings.ToLower(outer.Args[1])]; ok {
		name = s.Name
	}
	for _, k := range touched {
		if w.cluster != nil && len(declared) > 0 && keys.Slot(k) != keys.Slot(declared[0]) {
			add(RuleClusterOneSlot, fmt.Sprintf("%s touches %q (slot %d) outside the slot of its KEYS (%d)", name, k, keys.Slot(k), keys.Slot(declared[0])))
		}
		if slices.Contains(declared, k) {
			continue
		}
		p, err := keys.Parse(k)
		if err != nil {
			add(RuleKeysParse, fmt.Sprintf("%s touches %q, which does not parse: %v", name, k, err))
			continue
		}
		if len(declared) == 0 {
			add(RuleDeclared, fmt.Sprintf("%s declares no KEYS but touches %q", name, k))
			continue
		}
		dq, derr := keys.Parse(declared[0])
		switch {
		case p.Kind != keys.KindJob && p.Kind != keys.KindLane:
			add(RuleDeclared, fmt.Sprintf("%s touches %q (the queue's %s key), a key it did not declare (only a job row or a lane key can be derived)", name, k, p.Kind))
		case derr != nil || dq.Queue != p.Queue:
			add(RuleDeclared, fmt.Sprintf("%s touches %q, outside the queue of its declared keys", name, k))
		case fromArgv(k, p, argv) != "":
			rule := RuleDeclared
			if p.Kind == keys.KindJob && slices.Contains(argv, p.ID) {
				rule = RuleArgvID
			}
			add(rule, fmt.Sprintf("%s touches %q, built from ARGV (%s) without declaring it in KEYS", name, k, fromArgv(k, p, argv)))
		}
	}
	return out
}

// fromArgv names the ARGV value an undeclared key was built from, or "".
func fromArgv(k string, p keys.Parsed, argv []string) string {
	for i, a := range argv {
		switch {
		case p.Kind == keys.KindJob && a == p.ID, p.Kind == keys.KindLane && a == p.Lane:
			return fmt.Sprintf("ARGV[%d] = %q is the key's id or lane", i+1, a)
		case len(a) >= 4 && strings.HasPrefix(k, a):
			return fmt.Sprintf("ARGV[%d] = %q is the key's prefix", i+1, a)
		}
	}
	return ""
}
