package contracts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/contracts/internal/wire"
	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// c02 is contract C02: mint.
var c02 = Contract{ID: "C02", Name: "mint",
	Rule: "enqueue writes exactly the three-field row (pending, 0, payload) under a 14-byte JOB id from a leased minter; every key written parses and co-locates (slot vectors of §2)",
	clauses: []clause{
		{name: "mint-bound-and-defaults", body: mintBoundAndDefaults},
		{name: "lease-lost-by-own-clock", body: leaseLostByOwnClock, noHello: true},
		{name: "lease-lost-across-a-wall-step", body: leaseLostAcrossAWallStep, noHello: true, wallClock: true},
		{name: "renewals-answered-late", body: renewalsAnsweredLate, noHello: true, only: standaloneOnly},
		{name: "enqueue-batch-rows", body: enqueueBatchRows},
		{name: "enqueue-batch-cut-at-every-byte", body: enqueueBatchCutAtEveryByte, noHello: true, only: standaloneOnly},
		fieldsClause(fieldGroup{[]string{"mint", "enqueue", "enqueue_batch"}, ownField}),
		{name: "three-field-row", body: threeFieldRow},
		{name: "leased-minter", body: leasedMinter},
		{name: "keys-parse-and-co-locate", body: keysParseAndCoLocate},
		{name: "slot-of-every-brace-shape", body: slotOfEveryBraceShape},
		{name: "ids-decode", body: idsDecode},
		{name: "lease-contended", body: leaseContended, noHello: true},
		{name: "lease-range-ends", body: leaseRangeEnds, noHello: true},
		{name: "lease-renewed-and-lost", body: leaseRenewedAndLost, noHello: true},
		{name: "lease-renewed-at-the-range-ends", body: leaseRenewedAtTheRangeEnds, noHello: true},
		{name: "lease-lost-at-a-refused-renewal", body: leaseLostAtARefusedRenewal, noHello: true},
		{name: "reconnect-after-lost-lease", body: reconnectAfterLostLease, noHello: true},
		{name: "close-spares-a-taken-lease", body: closeSparesATakenLease},
		{name: "owner-tokens-differ", body: ownerTokensDiffer},
		{name: "lease-released-on-close", body: leaseReleasedOnClose},
		{name: "release-cut-mints-nothing-more", body: releaseCutMintsNothingMore, only: standaloneOnly},
	},
}

func threeFieldRow(t *T) {
	q := t.q("orders")
	payload := "pay\x00load\xff\n"
	before := t.now()
	id := t.enqueue("orders", payload)
	t.validJob(id)
	row := t.hash(jobKey(q, id))
	want := map[string]string{"state": "pending", "attempts": "0", "payload": payload}
	t.check(fmt.Sprint(row) == fmt.Sprint(want), rules.Row, fmt.Sprintf("row %q", want), "row %q", row)
	score, ok := t.zscore(q.Pending(), id)
	t.check(ok && score == 0, rules.Enqueue, "the id in pending with score 0", "in pending: %v, score %d", ok, score)
	t.check(t.llen(q.Wake()) == 1, rules.Wake, "the enqueue armed the wake (one token)", "wake length %d", t.llen(q.Wake()))
	t.cover(rules.Enqueue)
	for _, k := range t.allKeys() {
		p, _ := keys.Parse(k)
		if p.Queue == "orders" && k != jobKey(q, id) && k != q.Pending() && k != q.Wake() {
			t.fail(rules.Enqueue, "enqueue writes the row, pending and the wake, nothing else", "it also wrote "+k)
		}
	}
	// A delayed enqueue: scheduled at server TIME + delay_ms.
	m := t.mark()
	id2 := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("later"), DelayMS: 60000})
	after := t.now()
	row2 := t.hash(jobKey(q, id2))
	t.check(row2["state"] == "scheduled" && row2["attempts"] == "0" && row2["payload"] == "later" && len(row2) == 3, rules.Row,
		"a delayed job's row {state: scheduled, attempts: 0, payload}", "%q", row2)
	due, ok := t.zscore(q.Scheduled(), id2)
	t.check(ok && due >= before+60000 && due <= after+60000, rules.Enqueue,
		fmt.Sprintf("due time in scheduled within [%d, %d] (server TIME + 60000)", before+60000, after+60000), "in scheduled: %v, due %d", ok, due)
	t.durationOnWire(m, lua.Enqueue, 60000)
}

func leasedMinter(t *T) {
	id := t.enqueue("orders", "x")
	sf := t.validJob(id)
	_, worker, _ := ids.Split(sf)
	key, _ := keys.Minter(worker)
	v, err := t.admin.do(t.ctx, "PTTL", key)
	if err != nil {
		t.harness("PTTL: %v", err)
	}
	t.check(v.Int > 0, rules.Minter, fmt.Sprintf("a live lease %s (with a TTL) on the id's worker %d", key, worker), "PTTL %d", v.Int)
	leased := false
	for _, l := range t.portLines(0) {
		if l.Cmd() == "SET" && argAt(l, 1) == key {
			opts := strings.ToUpper(strings.Join(l.Args[3:], " "))
			leased = leased || (strings.Contains(opts, "NX") && strings.Contains(opts, "PX"))
		}
	}
	t.check(leased, rules.Minter, "SET "+key+" <owner> NX PX <ttl> on the wire", "no such lease command from the port")
	mintAt := ids.Time(sf)
	server := time.UnixMilli(t.now())
	t.check(mintAt.Sub(server).Abs() < time.Minute, rules.IDs, "the snowflake's milliseconds are the mint time", "mint time %s, server time %s", mintAt.UTC(), server.UTC())
}

func keysParseAndCoLocate(t *T) {
	vectors := map[string]int{"orders": 105, "fills": 4165, "payments": 8507}
	id := jobID(1 << 40)
	m := t.mark()
	for qn, slot := range vectors {
		q := t.q(qn)
		for _, typ := range []string{"pending", "active", "scheduled", "dead", "errors", "ckpt", "meta", "wake", "ring", "lanes", "laneof", "job", "lane"} {
			a := protocol.KeyArgs{Queue: qn, Type: typ}
			want := q.Prefix() + typ
			switch typ {
			case "job":
				a.ID, want = id, jobKey(q, id)
			case "lane":
				a.Lane, want = "east", laneKey(q, "east")
			}
			k, err := t.D.Key(t.ctx, a)
			t.ok(err, rules.Grammar, "key "+typ)
			t.check(k.Key == want, rules.Grammar, "key "+want, "%q", k.Key)
			s, err := t.D.Slot(t.ctx, protocol.SlotArgs{Key: k.Key})
			t.ok(err, rules.Grammar, "slot")
			t.check(s.Slot == slot, rules.Grammar, fmt.Sprintf("slot(%s) = %d", k.Key, slot), "%d", s.Slot)
		}
	}
	s, err := t.D.Slot(t.ctx, protocol.SlotArgs{Key: "123456789"})
	t.ok(err, rules.Grammar, "slot")
	t.check(s.Slot == 12739, rules.Grammar, "slot(123456789) = CRC16 12739", "%d", s.Slot)
	// The deployment keys share the tag emq (canon §2.3); a key is its bytes, non-ASCII too.
	// A brace pair with nothing between them, or a '{' with no '}' after it, is no hash tag: the
	// whole key is hashed (B-46, Valkey Cluster's rule; CLUSTER KEYSLOT on Valkey 8.1 answers these).
	for key, want := range map[string]int{"{emq}:bundle": 9051, "{emq}:minter:7": 9051, "é": 10180,
		"emq:{}:pending": 7387, "{}{orders}": 12660, "emq:{orders": 15602} {
		s, err := t.D.Slot(t.ctx, protocol.SlotArgs{Key: key})
		t.ok(err, rules.Grammar, "slot")
		t.check(s.Slot == want, rules.Grammar, fmt.Sprintf("slot(%s) = %d", key, want), "%d", s.Slot)
	}
	// The key builder and the slot function are the port's own: no byte reaches the server.
	t.cover(rules.KeyOpsOffline)
	if ls := t.portCommands(m); len(ls) > 0 {
		t.fail(rules.KeyOpsOffline, "key and slot send nothing to the server", fmt.Sprintf("%d command(s) reached it", len(ls)), ls...)
	}
	t.enqueue("orders", "one")
	t.enqueue("fills", "two")
}

// slotOfEveryBraceShape: the slot op against Valkey's own CLUSTER KEYSLOT (B-46) on every key of
// one to six bytes over '{', '}', 'a' (1092 keys): a '}' before the first '{', a tag closed
// twice, nested and empty tags, a '{' never closed. A fixed table of vectors let a port that
// took the first '}' of the whole key certify. The oracle is a server, so the reference cannot
// share a defect with it: on a cluster the cluster, standalone the lone cluster-enabled Valkey
// C01 presents to the port; a run given none (-valkey without it) falls back on the kit's own
// slot function rather than leaving C02 uncertified for a server C02 does not test. Both sides
// are pipelined: a thousand round trips to an interpreter on a loaded machine took 26 s.
func slotOfEveryBraceShape(t *T) {
	var oracle *wire.Conn
	by := "the server's CLUSTER KEYSLOT"
	switch {
	case t.cluster():
		oracle = t.admin.Nodes[0].C
	case t.cfg.ClusterValkey != nil:
		a, err := dialAdmin(t.ctx, t.needServer(ServerClusterValkey, t.cfg.ClusterValkey))
		if err != nil {
			t.harness("connect to the cluster-enabled Valkey: %v", err)
		}
		defer a.Close()
		oracle = a.Nodes[0].C
	default:
		by = "the kit's slot function (no cluster-enabled Valkey given)"
	}
	var shapes []string
	for last := []string{""}; len(shapes) < 1092; {
		var next []string
		for _, k := range last {
			next = append(next, k+"{", k+"}", k+"a")
		}
		shapes, last = append(shapes, next...), next
	}
	want := t.keyslots(oracle, shapes)
	reqs := make([]drivers.RawRequest, len(shapes))
	for i, k := range shapes {
		reqs[i] = request("slot", "key", k)
	}
	replies, err := drivers.Pipeline(t.ctx, t.D, reqs)
	t.ok(err, rules.Grammar, fmt.Sprintf("%d slot requests", len(reqs)))
	t.cover(rules.Grammar)
	for i, r := range replies {
		t.ok(r.Err, rules.Grammar, "slot "+shapes[i])
		var got protocol.SlotResult
		decodeInto(t, r.Result, &got, "slot "+shapes[i])
		t.check(int64(got.Slot) == want[i], rules.Grammar,
			fmt.Sprintf("slot(%s) = %d, as %s hashes it (B-46: the bytes between the first '{' and the first '}' after it, when any, else the whole key)", shapes[i], want[i], by),
			"%d", got.Slot)
	}
}

// keyslots is each key's slot by CLUSTER KEYSLOT on oracle, one pipeline; by the kit's own slot
// function when oracle is nil.
func (t *T) keyslots(oracle *wire.Conn, ks []string) []int64 {
	out := make([]int64, len(ks))
	if oracle == nil {
		for i, k := range ks {
			out[i] = int64(keys.Slot(k))
		}
		return out
	}
	cmds := make([][]any, len(ks))
	for i, k := range ks {
		cmds[i] = []any{"CLUSTER", "KEYSLOT", k}
	}
	vs, err := oracle.Pipeline(t.ctx, cmds...)
	if err != nil {
		t.harness("CLUSTER KEYSLOT: %v", err)
	}
	for i, v := range vs {
		if out[i], err = v.Int64(); err != nil {
			t.harness("CLUSTER KEYSLOT %q: %v", ks[i], err)
		}
	}
	return out
}

func idsDecode(t *T) {
	before := t.now()
	list := t.mintN(4000, rules.IDAlphabet)
	list = append(list, t.enqueue("orders", "minted by enqueue"))
	after := t.now()
	t.decodedIDs(list, t.portWorker(rules.IDWorker), before, after, 2*time.Second)
}

func leaseContended(t *T) {
	// Another minter holds every worker id but one: the port must find and lease that one.
	const free = 613
	var taken []int
	for w := range ids.MaxWorker + 1 {
		if w != free {
			taken = append(taken, w)
		}
	}
	t.takeWorkers(taken)
	t.helloWith(protocol.HelloArgs{})
	list := t.mintN(50, rules.LeaseFree)
	list = append(list, t.enqueue("orders", "under the free worker id"))
	t.cover(rules.LeaseFree)
	for _, id := range list {
		if _, w, _ := ids.Split(t.validJob(id)); w != free {
			t.fail(rules.LeaseFree, fmt.Sprintf("every id minted under worker %d, the only one not leased by another minter", free),
				fmt.Sprintf("%s minted under worker %d, leased by another minter", id, w))
		}
	}
	mine := t.minterLeases()[free]
	t.check(mine != "" && mine != harnessOwner, rules.LeaseFree, fmt.Sprintf("the port holds the lease on worker %d", free), "{emq}:minter:%d holds %q", free, mine)
	t.harnessLeasesIntact(taken, rules.LeaseFree)
	// Now all 1024 are leased: a second session must fail to mint at all, and only once it
	// has tried every worker id (§3.4-4, §3.4-5): a scan one short of a full turn misses the
	// id just before its random start, which a test with one id free finds once in 1024.
	first := t.portConnections()
	from := t.mark()
	d2 := t.start()
	if _, err := d2.Hello(t.ctx, t.helloArgs()); err == nil {
		m, err := d2.Mint(t.ctx, protocol.MintArgs{N: 1})
		t.check(err != nil, rules.LeaseFree, "with all 1024 worker ids leased, hello or the first mint fails", "it minted %v", m.IDs)
	}
	missed := t.workersNotTried(from, first)
	t.check(len(missed) == 0, rules.LeaseFree, "with all 1024 worker ids leased, a second session tries every one of 0–1023 (a command on each {emq}:minter:<w>) before it gives up",
		"%d never tried: %s", len(missed), ranges(missed))
	t.harnessLeasesIntact(taken, rules.LeaseFree)
	after := t.minterLeases()[free]
	t.check(after == mine, rules.LeaseFree, fmt.Sprintf("the first session's lease on worker %d left as it was", free), "{emq}:minter:%d holds %q, was %q", free, after, mine)
}

func leaseRangeEnds(t *T) {
	// The scan covers 0–1023 (canon §3.4): with only an end of the range free, a fresh
	// session leases that end and mints under it.
	for _, free := range []int{ids.MaxWorker, 0} {
		t.leaseOnlyFree(free)
	}
}

// leaseRenewedAtTheRangeEnds: a minter renews its lease every ttl/3 whatever worker id it holds
// (canon §3.4-6, A9), the ends of 0–1023 too. lease-renewed-and-lost watches the renewals of the
// id the port picks, at random (§3.4-4), so a port that could not renew worker 0 or 1023 (a
// guard that takes 0 for "no lease held", say) certified but for one run in 1024, its lease
// lapsing a ttl after it was taken. Here the harness leases every other worker id, so the port
// leases an end, and its renewals on the wire and on the server, and a mint after them, are
// watched there, at each end in a fresh session, under leaseRenewed's scales (a busy machine's
// stall is tried again under a longer lease).
func leaseRenewedAtTheRangeEnds(t *T) {
	for i, end := range []int{0, ids.MaxWorker} {
		if i > 0 {
			t.nextSession() // releases the other end's lease; the next hello is this end's
		}
		t.leaseRenewed(end)
	}
}

// leaseRenewedAndLost: another minter takes the port's worker id away; the port must not mint
// under it again, nor take it back. The first mint after the loss comes from lostCallers callers
// at once (B-41: they share the port's one minter), so a port whose callers each replace the
// lost minter leases several worker ids, and keeps the extra leases renewed for good.
func leaseRenewedAndLost(t *T) {
	prev, w, ttl := t.leaseRenewed(-1)
	k, _ := keys.Minter(w)
	// Another minter takes the worker id away, in one SET (with a DEL first, the port could
	// rightly lease the freed id again in between). Within a ttl the port's renewal is
	// refused (or, unrenewed, its lease runs out by its own clock): from then on it must
	// not mint under that id, and must never take the lease back.
	t.do("SET", k, harnessOwner, "PX", harnessLeaseMS)
	t.pause(time.Duration(ttl+50) * time.Millisecond)
	owner := t.minterLeases()[w]
	t.check(owner == harnessOwner, rules.LeaseLost, "a lost lease is not taken back: "+k+" still the other minter's", "it holds %q", owner)
	from := t.mark()
	m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 5, Parallel: lostCallers})
	t.cover(rules.LeaseLost)
	if err != nil {
		// A9: the port's failure, INTERNAL — neither a canon refusal nor a reply that breaks
		// the conversation (a mint list holding something other than ids).
		t.check(t.answeredInternal(err), rules.LeaseLost,
			fmt.Sprintf("after losing worker %d, a mint that fails answers INTERNAL", w), "%v", err)
		m, err = t.mintWhileLeasing(from, w, err)
	}
	if err == nil {
		// It leased another free worker id itself (canon §3.4): every id is under a lease
		// the port holds now, and above every id it minted before. A key the port took with
		// SET … NX may be empty by the time it is read (a 300 ms lease on a loaded machine, its
		// renewal late): that is no mint without a lease; another minter's key still is.
		leases := t.minterLeases()
		for _, l := range m.IDs {
			last := prev // each caller's list ascends from above every id minted before
			for _, id := range l {
				_, got, _ := ids.Split(t.validJob(id))
				if got == w || (leases[got] == "" && !t.acquiredSince(0, got)) || leases[got] == harnessOwner || id <= last {
					t.fail(rules.LeaseLost, fmt.Sprintf("after losing worker %d, the minter mints no id under it: a mint fails INTERNAL, or its ids are under a worker id it leased since, each list ascending from above %s", w, prev),
						fmt.Sprintf("%s minted under worker %d (lease %q), after %s", id, got, leases[got], last))
				}
				last = id
			}
		}
		t.oneLeaseAfterTheLoss(from, ttl)
		// The lease it took is renewed as the first was (§3.4-6): a minter whose renewals
		// started with its first lease only lets the second lapse while it runs. The wait
		// bounds only how long a port that never renews it takes to fail.
		if len(m.IDs) > 0 && len(m.IDs[0]) > 0 {
			_, w2, _ := ids.Split(t.validJob(m.IDs[0][0]))
			k2, _ := keys.Minter(w2)
			t.check(t.renewalWithin(from, k2, 10*time.Second), rules.LeaseRenewed,
				fmt.Sprintf("the lease on worker %d, taken after worker %d was lost, is renewed too: SET %s … IFEQ on the wire", w2, w, k2), "none within 10 s")
		}
	}
	// Every worker id now leased by another minter, the port's own included: it can lease no
	// other, and once its lease has run out by its own clock a mint answers INTERNAL (canon
	// §3.4-9), never a canon refusal (EMQSERVER, say).
	every := make([]int, ids.MaxWorker+1)
	for i := range every {
		every[i] = i
	}
	t.takeWorkers(every)
	t.pause(time.Duration(ttl+50) * time.Millisecond) // the port's last renewal was before the take
	_, err = t.D.Mint(t.ctx, protocol.MintArgs{N: 1})
	t.check(t.answeredInternal(err), rules.LeaseLost, "with every worker id leased by another minter, a mint answers INTERNAL", "%v", err)
	// Closing releases only the port's own lease: the other minter's stays.
	d := t.D
	t.D = nil // closed here, not again at the end of the clause
	t.ok(d.Close(t.ctx), rules.Close, "close")
	owner = t.minterLeases()[w]
	t.check(owner == harnessOwner, rules.LeaseReleased, "close releases the port's own lease only: "+k+" still the other minter's", "it holds %q", owner)
}

// lostCallers is how many callers send lease-renewed-and-lost's first mint after the loss.
const lostCallers = 4

// oneLeaseAfterTheLoss checks that the callers of a mint that met a lost lease replaced it once
// (B-41: they mint from the port's one leased minter): of the worker ids the port acquired
// since from (SET … NX on the wire), at most one is held both now and a lease time and a half
// later. A second one held across that is a minter leaked and renewed for good; a lease that
// lapsed on a busy machine and was replaced is held at one of the two reads only.
func (t *T) oneLeaseAfterTheLoss(from int, ttl int64) {
	held := func() map[int]bool {
		out := map[int]bool{}
		for x, owner := range t.minterLeases() {
			if owner != harnessOwner && t.acquiredSince(from, x) {
				out[x] = true
			}
		}
		return out
	}
	first := held()
	t.pause(time.Duration(ttl*3/2) * time.Millisecond)
	var both []int
	for x := range held() {
		if first[x] {
			both = append(both, x)
		}
	}
	slices.Sort(both)
	t.check(len(both) <= 1, rules.Minter, fmt.Sprintf("%d callers that meet a lost lease at once replace it once: they mint from the port's one leased minter (B-41), so the port holds one new worker id", lostCallers),
		"it holds %d worker ids it leased since the loss, across %d ms: %v", len(both), ttl*3/2, both)
}

// leaseLostAtARefusedRenewal is C02's, for a port that offers minter_ttl (§3.4-7, A9-5): a
// refused renewal loses the lease at once, not when the minter's own clock says it ran out.
// lease-renewed-and-lost mints a whole ttl after the theft, when both have happened, so a port
// that ignored the refusal and minted on until its local expiry certified. Here the lease is 12
// s: another minter takes the key, the kit waits for the port's renewal to show on the wire
// (refused: the key is no longer the port's; within ttl/3, 4 s) and 2 s more for the port to
// read the refusal, then mints, at most 6 s after the theft and at least 2 s before the lease
// could run out by the port's clock (its last renewal was at most 4 s before the theft). A slow
// machine that mints later only makes the check weaker.
func leaseLostAtARefusedRenewal(t *T) {
	const ttl = 12000
	t.helloWith(protocol.HelloArgs{MinterTTLMS: ttl})
	if !t.hasCap(protocol.CapMinterTTL) {
		t.notRun("the port does not offer minter_ttl: with its own lease time the refused renewal and the lease's end cannot be told apart in a clause")
	}
	prev := t.mintN(1, rules.LeaseLost)[0]
	w := t.portWorker(rules.LeaseLost)
	k, _ := keys.Minter(w)
	t.do("SET", k, harnessOwner, "PX", harnessLeaseMS)
	from := t.mark() // after the theft: a renewal from here on ran against the other minter's key
	t.cover(rules.LeaseLost)
	if !t.renewalTried(from, k, ttl) {
		t.fail(rules.LeaseRenewed, fmt.Sprintf("the port renews its lease on %s every ttl/3 (%d ms)", k, ttl/3), "no renewal of it on the wire within the ttl after another minter took it")
	}
	t.pause(2 * time.Second)
	m, err := t.D.Mint(t.ctx, protocol.MintArgs{N: 1})
	if err != nil {
		t.check(t.answeredInternal(err), rules.LeaseLost, fmt.Sprintf("after its renewal on worker %d was refused, a mint that fails answers INTERNAL", w), "%v", err)
		return
	}
	for _, id := range m.IDs[0] {
		_, got, _ := ids.Split(t.validJob(id))
		t.check(got != w && id > prev, rules.LeaseLost,
			fmt.Sprintf("after its renewal on worker %d was refused (another minter holds the key), the minter mints nothing more under it, though its own clock gives the lease seconds more: a mint fails INTERNAL, or mints under a worker id it leased since, above %s", w, prev),
			"%s under worker %d", id, got)
	}
}

// renewalTried waits, up to ttl, for the port's renewal of key (SET key … IFEQ) on the wire
// since mark from.
func (t *T) renewalTried(from int, key string, ttl int64) bool {
	return t.renewalWithin(from, key, time.Duration(ttl)*time.Millisecond)
}

// renewalWithin waits, up to d, for the port's renewal of key on the wire since mark from.
func (t *T) renewalWithin(from int, key string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if t.setSince(from, key, "IFEQ") {
			return true
		}
	}
	return false
}

// mintWhileLeasing follows a mint that answered INTERNAL (err) after worker w was lost: INTERNAL
// is right only while the port holds no lease (§3.4-9), so while it holds one it leased itself
// since from, the mint is sent again until one mints, for up to 30 s. A port whose process is
// starved may see the lease it just took lapse by its own clock before it mints, and lease once
// more; one that holds a lease and answers INTERNAL all that time fails. It returns the mint that
// minted, or the last INTERNAL of a port that holds no lease.
func (t *T) mintWhileLeasing(from, w int, err error) (protocol.MintResult, error) {
	for until := time.Now().Add(30 * time.Second); ; {
		held := -1
		for x, owner := range t.minterLeases() {
			if owner != "" && owner != harnessOwner && t.acquiredSince(from, x) {
				held = x
			}
		}
		if held < 0 {
			return protocol.MintResult{}, err
		}
		if time.Now().After(until) {
			t.fail(rules.LeaseLost, fmt.Sprintf("after losing worker %d, a mint answers INTERNAL only while the port holds no lease: one that leased another worker id itself mints under it", w),
				fmt.Sprintf("for 30 s every mint answered INTERNAL (last: %v) while the port held worker %d, which it leased itself", err, held))
		}
		time.Sleep(100 * time.Millisecond) // paces the retries; the wait is bounded by the 30 s
		m, e := t.D.Mint(t.ctx, protocol.MintArgs{N: 5})
		if e == nil {
			return m, nil
		}
		if !t.answeredInternal(e) {
			t.fail(rules.LeaseLost, fmt.Sprintf("after losing worker %d, a mint that fails answers INTERNAL", w), e.Error())
		}
		err = e
	}
}

func reconnectAfterLostLease(t *T) {
	// The port can lease only worker 700; its clock (when scriptable) barely moves, so
	// the ids before and after the reconnect share a millisecond.
	const first = 700
	var taken, below []int
	for w := range ids.MaxWorker + 1 {
		if w != first {
			taken = append(taken, w)
		}
		if w < first {
			below = append(below, w)
		}
	}
	t.takeWorkers(taken)
	t.helloWith(protocol.HelloArgs{})
	if c, ok := t.D.(drivers.Clocker); ok && t.hasCap(protocol.CapClock) {
		t.setClock(c, t.now()+5000, 200, rules.LeaseRelet)
	}
	before := t.mintN(3, rules.LeaseRelet)
	// First a reconnect while 700 is still the port's and every other id is leased elsewhere:
	// renewing is then the one way A9-7 leaves, so the reconnect succeeds and the port mints on
	// under 700, above the ids before it (a port that gave a renewed lease up for another id
	// would find none free).
	t.ok(t.D.Reconnect(t.ctx), rules.LeaseRelet, fmt.Sprintf("reconnect while the port holds worker %d and every other worker id is leased elsewhere", first))
	for _, id := range t.mintN(3, rules.LeaseRelet) {
		_, w, _ := ids.Split(t.validJob(id))
		t.check(w == first && id > before[len(before)-1], rules.LeaseRelet,
			fmt.Sprintf("after a reconnect that could only renew the lease on worker %d, ids under %d above %s", first, first, before[len(before)-1]),
			"%s under worker %d", id, w)
		before = append(before, id)
	}
	if owner := t.minterLeases()[first]; owner == "" || owner == harnessOwner {
		t.fail(rules.LeaseRelet, fmt.Sprintf("after the reconnect, the port still holds worker %d", first), fmt.Sprintf("it holds %q", owner))
	}
	// While the port is connected another minter takes 700 away, and 0–699 come free.
	// A reconnect renews the lease or leases another id: here it must find 700 lost,
	// and its new, lower worker id must not mint below the ids of 700.
	// The clock is set back to the last id's millisecond, 4 s long, so the next mints fall in it
	// however long the two reconnects took: a port whose new, lower worker id carried on in that
	// millisecond mints below; a correct one waits for the next (at most 4 s).
	if c, ok := t.D.(drivers.Clocker); ok && t.hasCap(protocol.CapClock) {
		ms, _, _ := ids.Split(t.validJob(before[len(before)-1]))
		t.setClock(c, protocol.EpochMS+int64(ms), 4000, rules.LeaseRelet)
	}
	k, _ := keys.Minter(first)
	t.do("SET", k, harnessOwner, "PX", harnessLeaseMS)
	t.freeWorkers(below)
	t.ok(t.D.Reconnect(t.ctx), rules.LeaseRelet, "reconnect after the lease was taken away")
	after := t.mintN(3, rules.LeaseRelet)
	t.cover(rules.LeaseRelet)
	leases := t.minterLeases()
	prev := before[len(before)-1]
	for _, id := range after {
		_, w, _ := ids.Split(t.validJob(id))
		if w >= first || leases[w] == "" || leases[w] == harnessOwner {
			t.fail(rules.LeaseRelet, fmt.Sprintf("after the reconnect, ids under a newly leased worker id (one of the free 0–%d), never under %d, lost", first-1, first),
				fmt.Sprintf("%s under worker %d, whose lease holds %q", id, w, leases[w]))
		}
		if id <= prev {
			t.fail(rules.LeaseRelet, "after the reconnect, no id smaller than one minted before", fmt.Sprintf("%s after %s", id, prev))
		}
		prev = id
	}
	t.check(leases[first] == harnessOwner, rules.LeaseRelet, fmt.Sprintf("the other minter still holds worker %d", first), "it holds %q", leases[first])
}

func closeSparesATakenLease(t *T) {
	// Another minter took the port's worker id (its lease lapsed, say) just before close:
	// the release is the port's own lease only, a compare-and-release, never a DEL.
	t.mintN(1, rules.LeaseReleased)
	k, _ := keys.Minter(t.portWorker(rules.LeaseReleased))
	t.do("SET", k, harnessOwner, "PX", harnessLeaseMS)
	d := t.D
	t.D = nil // closed here, not again at the end of the clause
	t.ok(d.Close(t.ctx), rules.Close, "close")
	owner, _, _ := t.do("GET", k)
	t.check(len(owner) == 1 && owner[0] == harnessOwner, rules.LeaseReleased, "close releases the port's own lease only: "+k+" still the other minter's", "it holds %q", owner)
}

func ownerTokensDiffer(t *T) {
	// Two sessions of the port, two minters: two worker ids under two owner tokens.
	t.mintN(1, rules.LeaseOwner)
	d2 := t.start()
	_, err := d2.Hello(t.ctx, t.helloArgs())
	t.ok(err, rules.LeaseOwner, "a second session's hello")
	_, err = d2.Mint(t.ctx, protocol.MintArgs{N: 1})
	t.ok(err, rules.LeaseOwner, "a second session's mint")
	leases := t.minterLeases()
	tokens := map[string]bool{}
	for _, owner := range leases {
		tokens[owner] = true
	}
	t.check(len(leases) == 2 && len(tokens) == 2, rules.LeaseOwner, "two sessions hold two leases under two different owner tokens", "leases %v", leases)
}

func leaseReleasedOnClose(t *T) {
	t.mintN(1, rules.LeaseReleased)
	k, _ := keys.Minter(t.portWorker(rules.LeaseReleased))
	d := t.D
	t.D = nil // closed here, not again at the end of the clause
	t.ok(d.Close(t.ctx), rules.Close, "close")
	p := t.releasedOnClose(k)
	t.check(p == -2, rules.LeaseReleased, "close released the minter lease: "+k+" gone within a second of the port's connections closing", "it is still there with PTTL %d", p)
}

// releaseCutMintsNothingMore is C02's, on a standalone server only: the port's close meets a
// loss in the middle of its release (the server drops the connection its release was sent on,
// held by CLIENT PAUSE WRITE, before answering it), and then, as when a release ran and its
// reply was lost, another minter holds the worker id. The close may answer INTERNAL (B-282);
// a port that goes on serving after it has given its lease up, or may have, mints nothing more
// under that worker id (canon §3.4-1, §3.4-10, A9-5): a mint fails INTERNAL, or its ids are
// under a worker id the port leased since.
func releaseCutMintsNothingMore(t *T) {
	t.mintN(1, rules.LeaseLost)
	w := t.portWorker(rules.LeaseLost)
	k, _ := keys.Minter(w)
	t.do("CLIENT", "PAUSE", 10000, "WRITE")
	defer func() { _, _ = t.admin.do(t.ctx, "CLIENT", "UNPAUSE") }()
	closed := make(chan error, 1)
	go func() {
		defer t.recoverPanic()
		_, err := drivers.Raw(t.ctx, t.D, "close", nil)
		closed <- err
	}()
	// The release is a write (A4: SET, DEL or UNLINK on the minter key): the pause holds it.
	var err error
	answered := false
	for until := time.Now().Add(5 * time.Second); time.Now().Before(until); time.Sleep(10 * time.Millisecond) {
		held := false
		for _, c := range t.portClients() {
			held = held || strings.Contains(c["flags"], "b")
		}
		if held {
			break
		}
		select {
		case err = <-closed:
			answered = true
		default:
		}
		if answered {
			break
		}
	}
	cmds := [][]any{}
	for _, c := range t.portClients() {
		cmds = append(cmds, []any{"CLIENT", "KILL", "ID", c["id"]})
	}
	cmds = append(cmds, []any{"CLIENT", "UNPAUSE"}, []any{"SET", k, harnessOwner, "PX", harnessLeaseMS})
	if _, perr := t.admin.pipeline(t.ctx, cmds...); perr != nil {
		t.harness("CLIENT KILL, UNPAUSE and SET %s: %v", k, perr)
	}
	if !answered {
		err = <-closed
	}
	d := t.D
	t.D = nil // the session is over either way; reaped here
	defer func() { _ = d.Close(t.ctx) }()
	if err == nil {
		return // the port closed (B-24: it exits); nothing is left to mint
	}
	m, err := d.Mint(t.ctx, protocol.MintArgs{N: 5})
	t.cover(rules.LeaseLost)
	if err != nil {
		return // INTERNAL, or the port ended with its session
	}
	leases := t.minterLeases()
	for _, l := range m.IDs {
		for _, id := range l {
			_, got, _ := ids.Split(t.validJob(id))
			if got == w || leases[got] == "" || leases[got] == harnessOwner {
				t.fail(rules.LeaseLost, fmt.Sprintf("after a close whose release met a loss, and worker %d taken by another minter, a mint fails INTERNAL or mints under a worker id the port leased since, never under %d", w, w),
					fmt.Sprintf("%s minted under worker %d (lease %q)", id, got, leases[got]))
			}
		}
	}
}
