package contracts

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/contracts/verdict"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// harnessOwner is the owner token the harness leases worker ids under, to contend with a port.
const harnessOwner = "emq-harness-contender"

// harnessLeaseMS is how long the harness's own leases last: longer than any clause (each starts
// with FLUSHALL), so none lapses while a starved machine runs the clause. At 20 s one lapsed
// under a port's two starts, and the port rightly leased the freed id.
const harnessLeaseMS = 120000

// leaseTTLForClauses is the minter lease a clause asks a port for (hello's minter_ttl_ms): short
// enough to see a renewal (ttl/3) within the clause.
const leaseTTLForClauses = 300

// minterLeases reads every {emq}:minter:<w> key: worker id → owner token (one KEYS, one MGET).
func (t *T) minterLeases() map[int]string {
	ks, _, _ := t.do("KEYS", "{emq}:minter:*")
	ks = slices.DeleteFunc(ks, func(k string) bool { return k == "" })
	out := map[int]string{}
	if len(ks) == 0 {
		return out
	}
	args := []any{"MGET"}
	for _, k := range ks {
		args = append(args, k)
	}
	vs, _, _ := t.do(args...)
	for i, k := range ks {
		w, err := strconv.Atoi(strings.TrimPrefix(k, "{emq}:minter:"))
		if err != nil || w < 0 || w > ids.MaxWorker {
			t.fail(rules.Minter, "minter leases only on {emq}:minter:<0–1023>", "a lease key "+k)
		}
		if i < len(vs) && vs[i] != "" {
			out[w] = vs[i]
		}
	}
	return out
}

// portWorker is the one worker id leased by someone other than the harness: the port's.
func (t *T) portWorker(rule rules.Rule) int {
	ws := t.portWorkers()
	t.check(len(ws) == 1, rule, "exactly one minter lease {emq}:minter:<w> held by the port", "leases held by the port on worker ids %v", ws)
	return ws[0]
}

// portWorkers lists the worker ids whose minter lease the port holds.
func (t *T) portWorkers() []int {
	var ws []int
	for w, owner := range t.minterLeases() {
		if owner != harnessOwner {
			ws = append(ws, w)
		}
	}
	return ws
}

// takeWorkers leases worker ids for the harness (as another minter would), pipelined, with a
// TTL long enough to outlive the clause.
func (t *T) takeWorkers(workers []int) {
	var cmds [][]any
	for _, w := range workers {
		k, _ := keys.Minter(w)
		cmds = append(cmds, []any{"SET", k, harnessOwner, "PX", harnessLeaseMS})
	}
	if _, err := t.admin.pipeline(t.ctx, cmds...); err != nil {
		t.harness("lease worker ids: %v", err)
	}
}

// takeAllBut leases every worker id but w to the harness.
func (t *T) takeAllBut(w int) {
	var taken []int
	for o := range ids.MaxWorker + 1 {
		if o != w {
			taken = append(taken, o)
		}
	}
	t.takeWorkers(taken)
}

// leaseOnlyFree leases every worker id but free to the harness, then has a fresh session mint
// under free, the one id left, and closes it (releasing its lease).
func (t *T) leaseOnlyFree(free int) {
	t.takeAllBut(free)
	t.freeWorkers([]int{free}) // an earlier call may have leased it
	expected := fmt.Sprintf("with only worker id %d free, a fresh session leases it and mints under it", free)
	d := t.start()
	defer d.Close(t.ctx)
	if _, err := d.Hello(t.ctx, t.helloArgs()); err != nil {
		t.failErr(rules.LeaseFree, expected, "hello", err)
		return
	}
	m, err := d.Mint(t.ctx, protocol.MintArgs{N: 20})
	if err != nil {
		t.failErr(rules.LeaseFree, expected, "mint n=20", err)
		return
	}
	if len(m.IDs) != 1 || len(m.IDs[0]) != 20 {
		t.fail(rules.LeaseFree, expected, fmt.Sprintf("mint n=20 answered %d lists", len(m.IDs)))
		return
	}
	t.cover(rules.LeaseFree)
	for _, id := range m.IDs[0] {
		if _, w, _ := ids.Split(t.validJob(id)); w != free {
			t.fail(rules.LeaseFree, expected, fmt.Sprintf("%s minted under worker %d, leased by another minter", id, w))
			return
		}
	}
	mine := t.minterLeases()[free]
	t.check(mine != "" && mine != harnessOwner, rules.LeaseFree, expected, "{emq}:minter:%d holds %q", free, mine)
}

// portConnections are the port's connections open now, each as node|addr (as MONITOR names
// a line's client).
func (t *T) portConnections() map[string]bool {
	open := map[string]bool{}
	for _, c := range t.portClients() {
		open[c["node"]+"|"+c["addr"]] = true
	}
	return open
}

// workersNotTried lists, in order, the worker ids whose minter key no command of the port's
// after from named on a connection other than those of skip (another session's).
func (t *T) workersNotTried(from int, skip map[string]bool) []int {
	tried := map[int]bool{}
	for _, l := range t.portLines(from) {
		if l.Client == "lua" || skip[l.Node+"|"+l.Client] || len(l.Args) < 2 {
			continue
		}
		if s, ok := strings.CutPrefix(l.Args[1], "{emq}:minter:"); ok {
			if w, err := strconv.Atoi(s); err == nil {
				tried[w] = true
			}
		}
	}
	var missed []int
	for w := range ids.MaxWorker + 1 {
		if !tried[w] {
			missed = append(missed, w)
		}
	}
	return missed
}

// ranges writes ascending ints as runs (1-3, 7).
func ranges(ns []int) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		} else {
			parts = append(parts, strconv.Itoa(ns[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// freeWorkers drops the harness's leases on these worker ids, pipelined.
func (t *T) freeWorkers(workers []int) {
	var cmds [][]any
	for _, w := range workers {
		k, _ := keys.Minter(w)
		cmds = append(cmds, []any{"DEL", k})
	}
	if _, err := t.admin.pipeline(t.ctx, cmds...); err != nil {
		t.harness("free worker ids: %v", err)
	}
}

// harnessLeasesIntact checks that the port overwrote none of the harness's leases.
func (t *T) harnessLeasesIntact(taken []int, rule rules.Rule) {
	leases := t.minterLeases()
	t.cover(rule)
	for _, w := range taken {
		if leases[w] != harnessOwner {
			t.fail(rule, fmt.Sprintf("the lease on worker %d (another minter's) left as it was", w), fmt.Sprintf("{emq}:minter:%d holds %q", w, leases[w]))
		}
	}
}

// leaseTTL is the PX of the port's first SET {emq}:minter:<w> … NX PX <ttl> on the wire since from.
func (t *T) leaseTTL(worker, from int) int64 {
	k, _ := keys.Minter(worker)
	for _, l := range t.portLines(from) {
		if l.Cmd() != "SET" || argAt(l, 1) != k {
			continue
		}
		if n, ok := linePX(l); ok {
			return n
		}
	}
	t.fail(rules.LeaseFree, "SET "+k+" <owner> NX PX <ttl> on the wire", "no such lease command from the port")
	return 0
}

// linePX is the PX option of a SET line, if it has one.
func linePX(l Line) (int64, bool) {
	for i := 3; i+1 < len(l.Args); i++ {
		if strings.EqualFold(l.Args[i], "PX") {
			if n, err := strconv.ParseInt(l.Args[i+1], 10, 64); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// leaseScales are the minter leases (hello's minter_ttl_ms) C02 watches renewals under, shortest
// first: a renewal every ttl/3 is the rule at any lease, and a machine too busy to run the
// port's 100 ms timer on time fails a 300 ms lease's cadence but not a 4.8 s one's.
var leaseScales = []int64{leaseTTLForClauses, 4 * leaseTTLForClauses, 16 * leaseTTLForClauses}

// leaseRenewed says hello asking for a short minter lease, mints, and checks the port renews the
// lease about every ttl/3 (canon §3.4), on the wire and on the server. A try that saw no renewal
// in time is tried again in a fresh session under the next, longer lease of leaseScales; a port
// that renews too seldom, or never, fails at every scale. So does a lease lapsed before its
// first look (a busy machine's stall longer than a short lease): below the last scale it is
// tried again. With only >= 0, every other worker id is leased to the harness before each
// hello, so the port leases only (an end of the range, say) and its renewals are watched there;
// with only < 0 the port leases the id it picks. It returns the last id the session that passed
// minted, its worker id and its lease time.
func (t *T) leaseRenewed(only int) (prev string, w int, ttl int64) {
	for i := 0; ; i++ {
		ask, from := leaseScales[i], t.mark()
		if only >= 0 {
			t.takeAllBut(only)
			t.freeWorkers([]int{only}) // an earlier session's lease on it, released or not
		}
		t.helloWith(protocol.HelloArgs{MinterTTLMS: ask})
		if i < len(leaseScales)-1 {
			// The leases are read once: a short lease whose renewal came late on a busy machine
			// may lapse between two reads, and is then tried again under a longer one.
			m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 1})
			ws := t.portWorkers()
			if err != nil || len(m.IDs) != 1 || len(m.IDs[0]) != 1 || len(ws) != 1 {
				t.nextSession()
				continue
			}
			prev, w = m.IDs[0][0], ws[0]
		} else {
			prev = t.mintN(1, rules.LeaseRenewed)[0]
			w = t.portWorker(rules.LeaseRenewed)
		}
		if only >= 0 && w != only {
			t.fail(rules.LeaseFree, fmt.Sprintf("with only worker id %d free, the port leases it", only), fmt.Sprintf("it minted under worker %d", w))
		}
		k, _ := keys.Minter(w)
		mine := t.minterLeases()[w]
		ttl = t.leaseTTL(w, from)
		if t.hasCap(protocol.CapMinterTTL) {
			t.check(ttl == ask, rules.AidTTL, fmt.Sprintf("a port declaring minter_ttl leases for hello's minter_ttl_ms, PX %d", ask), "PX %d", ttl)
		}
		if ttl > max(1500, ask) {
			t.notRun("the port leases its worker id for %d ms and does not honour hello's minter_ttl_ms: renewal and loss take too long to observe", ttl)
		}
		cadence, seen := t.renewalCadence(k, ttl), t.renewalSeen(k, mine, ttl)
		after, got := "", "not tried: the renewals were not seen"
		if cadence && seen {
			after, got = t.mintsStill(w, prev)
		}
		if (cadence && seen && after != "") || i == len(leaseScales)-1 {
			t.check(cadence, rules.LeaseRenewed,
				fmt.Sprintf("renewals of %s about every ttl/3: their median gap on the wire at most ttl/2 (%d ms), under leases of %v ms", k, ttl/2, leaseScales[:i+1]), "renewals further apart")
			t.check(seen, rules.LeaseRenewed,
				fmt.Sprintf("the lease renewed every ttl/3: within a %d ms lease, %s's PTTL grows back while it stays the port's", ttl, k),
				"no renewal: PTTL %d, owner %q (was %q)", t.pttl(k), t.minterLeases()[w], mine)
			t.check(after != "", rules.LeaseRenewed,
				fmt.Sprintf("a renewed lease is still the minter's: after the renewals a mint succeeds under worker %d, above %s", w, prev), "%s", got)
			return after, w, ttl
		}
		t.nextSession()
	}
}

// nextSession closes the session and starts another, which the clause says hello in.
func (t *T) nextSession() {
	d := t.D
	t.D = nil // the next session is the clause's
	t.ok(d.Close(t.ctx), rules.Close, "close")
	t.D = t.start()
}

// mintsStill mints one id after the renewals: it must come under worker w, above prev (a
// minter that took a renewal for a loss stops minting while its renewals still reach the wire).
// It returns the id, or "" and what happened instead.
func (t *T) mintsStill(w int, prev string) (string, string) {
	m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 1})
	switch {
	case err != nil:
		return "", "mint: " + err.Error()
	case len(m.IDs) != 1 || len(m.IDs[0]) != 1:
		return "", fmt.Sprintf("mint n=1 answered %v", m.IDs)
	}
	id := m.IDs[0][0]
	if _, got, _ := ids.Split(t.validJob(id)); got != w || id <= prev {
		return "", fmt.Sprintf("%s under worker %d", id, got)
	}
	return id, ""
}

// renewalCadence watches the port's renewals of key (SET … IFEQ) for about four lease times and
// tells whether their median gap is at most ttl/2: a port renews every ttl/3 (canon §3.4). The
// median, read from the server's MONITOR times, stands a busy machine's late timer or two.
func (t *T) renewalCadence(key string, ttl int64) bool {
	m := t.mark()
	t.pause(time.Duration(4*ttl) * time.Millisecond)
	var at []int64 // µs, the server's
	for _, l := range t.portLines(m) {
		if l.Cmd() == "SET" && argAt(l, 1) == key && slices.ContainsFunc(l.Args, func(a string) bool { return strings.EqualFold(a, "IFEQ") }) {
			at = append(at, l.At)
		}
	}
	if len(at) < 3 {
		return false
	}
	gaps := make([]int64, 0, len(at)-1)
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i]-at[i-1])
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2] <= ttl*1000/2
}

// releasedOnClose waits until the server has closed every connection of the port (after a
// close; a port that keeps one open is waited for a few seconds, the driver's business to flag),
// so that the server has run every command the port sent, then up to a second more for key to
// go: a release by SET … IFEQ … PX 1 leaves the key its last millisecond. It returns key's PTTL
// (-2: gone). A lease left to run out keeps its TTL, 30 s by default, far past the wait.
func (t *T) releasedOnClose(key string) int64 {
	for deadline := time.Now().Add(5 * time.Second); len(t.portClients()) > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	p := t.pttl(key)
	for deadline := time.Now().Add(time.Second); p != -2 && time.Now().Before(deadline); p = t.pttl(key) {
		time.Sleep(5 * time.Millisecond)
	}
	return p
}

// pttl is the remaining time of a key in ms (-2: no key).
func (t *T) pttl(key string) int64 {
	_, n, _ := t.do("PTTL", key)
	return n
}

// mintN mints n ids from one caller.
func (t *T) mintN(n int, rule rules.Rule) []string {
	m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: n})
	t.ok(err, rule, fmt.Sprintf("mint n=%d", n))
	t.check(len(m.IDs) == 1 && len(m.IDs[0]) == n, rule, fmt.Sprintf("one list of %d ids", n), "%d lists", len(m.IDs))
	return m.IDs[0]
}

// sinceEpochMS is a server TIME in ms as milliseconds since the snowflake epoch.
func sinceEpochMS(unixMS int64) int64 { return unixMS - ids.Epoch.UnixMilli() }

// decodedIDs checks ids minted by one minter between two server TIMEs against canon §3: each a
// JOB id whose snowflake decodes (alphabet 0-9A-Za-z) to strictly increasing values in mint
// order, under the worker id the port leased, at a millisecond since 2024-01-01 close to the
// server's clock. slack allows for the port's clock against the server's.
func (t *T) decodedIDs(list []string, worker int, before, after int64, slack time.Duration) {
	lo, hi := sinceEpochMS(before)-slack.Milliseconds(), sinceEpochMS(after)+slack.Milliseconds()
	t.cover(rules.IDAlphabet, rules.IDWorker, rules.IDEpoch)
	var prev uint64
	for i, id := range list {
		sf := t.validJob(id)
		ms, w, _ := ids.Split(sf)
		if i > 0 && sf <= prev {
			t.fail(rules.IDAlphabet, "ids decode (base62, alphabet 0-9A-Za-z in that order) to strictly increasing snowflakes in mint order",
				fmt.Sprintf("id %d %s decodes to %d, not above %s's %d", i, id, sf, list[i-1], prev))
		}
		prev = sf
		if w != worker {
			t.fail(rules.IDWorker, fmt.Sprintf("the 10 worker bits of every id equal the leased worker id %d", worker),
				fmt.Sprintf("id %d %s decodes to worker %d", i, id, w))
		}
		if int64(ms) < lo || int64(ms) > hi {
			t.fail(rules.IDEpoch, fmt.Sprintf("the 42 millisecond bits count from 2024-01-01: within [%d, %d] (server TIME ± %s)", lo, hi, slack),
				fmt.Sprintf("id %d %s decodes to millisecond %d (%s)", i, id, ms, ids.Time(sf).UTC().Format(time.RFC3339Nano)))
		}
	}
}

// hasCap reports whether the port declared a capability in hello.
func (t *T) hasCap(c string) bool { return slices.Contains(t.Hello.Capabilities, c) }

// helloWith says hello for a noHello clause with extra arguments, as open would.
func (t *T) helloWith(a protocol.HelloArgs) {
	t.helloUnder(a, rules.HelloOp, "hello against Valkey 8.1 succeeds")
}

// helloUnder is helloWith with a failure reported under rule; a.Valkey, when set, is dialled
// instead of the server (C01 replies-cut-at-every-byte's relay).
func (t *T) helloUnder(a protocol.HelloArgs, rule rules.Rule, expected string) {
	if a.Valkey == "" {
		a.Valkey = t.cfg.Valkey
	}
	a.Cluster = t.cluster()
	h, err := t.D.Hello(t.ctx, a)
	if err != nil {
		t.notClusterPort(err)
		t.failErr(rule, expected, "hello", err)
	}
	t.Hello = h
	t.clusterDeclared(h)
	t.claimed(h)
}

// notRun skips the rest of a clause the port offers no way to exercise, visibly.
// The clause is reported NOT RUN (not offered), never PASS.
func (t *T) notRun(format string, a ...any) {
	t.skip(verdict.StatusNotOffered, fmt.Sprintf(format, a...))
}

// clocker is the port's clock op, or NOT RUN when the port does not offer it (A11 is checked
// only for ports that declare the "clock" capability).
func (t *T) clocker() drivers.Clocker {
	c, ok := t.D.(drivers.Clocker)
	if !t.hasCap(protocol.CapClock) || !ok {
		t.notRun("the port does not offer the clock op (capability %q): its minter clock cannot be scripted", protocol.CapClock)
	}
	return c
}

// setClock scripts the port's minter clock to unixMS, advancing 1 ms per scale real ms.
func (t *T) setClock(c drivers.Clocker, unixMS, scale int64, rule rules.Rule) {
	t.ok(c.Clock(t.ctx, protocol.ClockArgs{SetMS: unixMS, Scale: scale}), rule, fmt.Sprintf("clock set_ms=%d scale=%d", unixMS, scale))
}

// renewalSeen polls a lease's PTTL until it grows back by more than a tenth of the TTL (a
// renewal) while the key still holds owner; false once the lease is gone or another's, or after
// a whole TTL without a renewal (the port renews at ttl/3).
func (t *T) renewalSeen(key, owner string, ttl int64) bool {
	low := t.pttl(key)
	for deadline := time.Now().Add(time.Duration(ttl) * time.Millisecond); time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		p := t.pttl(key)
		if v, _, ok := t.do("GET", key); p < 0 || !ok || len(v) != 1 || v[0] != owner {
			return false
		}
		if p > low+ttl/10 {
			return true
		}
		low = min(low, p)
	}
	return false
}
