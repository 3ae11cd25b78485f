package suite

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
	. "github.com/onsi/ginkgo/v2"
)

func c01(cfg *Config) {
	Describe("C01 fence", Label("C01"), func() {
		clause(cfg, "C01", "C01/fence/hello-and-fence-first", clauseOpts{}, func(t *T) {
			b := t.cfg.Bundle
			t.check(t.Hello.Bundle == lua.Version && t.Hello.Digest == b.Digest(), ruleHello,
				fmt.Sprintf("hello names bundle %s with digest %s", lua.Version, b.Digest()),
				"bundle %q digest %q", t.Hello.Bundle, t.Hello.Digest)
			t.enqueue("orders", "after the fence")
			order, conns := byClient(t.portLines(0))
			t.check(len(order) > 0, ruleFence, "the port's connections show on the wire", "no command from the port at all")
			for _, c := range order {
				ls := conns[c]
				t.check(ls[0].Cmd() == "HELLO", ruleFence, "HELLO 2 is the first command of every connection", "connection %s began with %s", c, ls[0])
				fenced := false
				for _, l := range ls[1:] {
					if l.Cmd() == "SCRIPT" {
						continue
					}
					fenced = l.Cmd() == "EVALSHA" && len(l.Args) == 6 && l.Args[1] == b.MustScript(lua.Fence).SHA1 &&
						l.Args[2] == "1" && l.Args[3] == keys.Bundle() && l.Args[4] == lua.Version && l.Args[5] == b.Digest()
					if !fenced {
						t.fail(ruleFence, "the fence script (KEYS {emq}:bundle, ARGV version and digest) right after HELLO", "connection "+c+" sent "+l.String(), ls[:min(len(ls), 4)]...)
					}
					break
				}
			}
			got := t.hash(keys.Bundle())
			t.check(got["version"] == lua.Version && got["digest"] == b.Digest() && len(got) == 2, ruleVersion,
				"the fence installed {emq}:bundle = {version, digest}", "%v", got)
		})

		refusedFence := func(t *T, version, digest string) {
			t.do("HSET", keys.Bundle(), "version", version, "digest", digest)
			before := t.snapshot()
			_, err := t.D.Hello(t.ctx, drivers.HelloArgs{Valkey: t.cfg.Valkey})
			t.refused(err, emqerr.Version, ruleVersion, fmt.Sprintf("hello against a deployment of %s/%s", version, digest[:8]))
			d := diff(before, t.snapshot())
			t.check(d == "", ruleVersion, "a refused fence changes nothing", "%s", d)
			fence := t.cfg.Bundle.MustScript(lua.Fence).SHA1
			for _, l := range t.portCommands(0) {
				if c := l.Cmd(); c == "HELLO" || (c == "SCRIPT" && strings.EqualFold(l.Args[1], "load")) || (c == "EVALSHA" && l.Args[1] == fence) {
					continue
				}
				t.fail(`canon §1.2: "A mismatch is a typed refusal, never a degraded session"`, "nothing but HELLO and the fence from a refused port", "the port sent "+l.String())
			}
		}
		clause(cfg, "C01", "C01/fence/wrong-bundle-version-refused", clauseOpts{noHello: true}, func(t *T) {
			refusedFence(t, "echomq:1.9.0", t.cfg.Bundle.Digest())
		})
		clause(cfg, "C01", "C01/fence/wrong-bundle-digest-refused", clauseOpts{noHello: true}, func(t *T) {
			sum := sha1.Sum([]byte("another bundle"))
			refusedFence(t, lua.Version, hex.EncodeToString(sum[:]))
		})
		clause(cfg, "C01", "C01/fence/wrong-kind-server-refused", clauseOpts{noHello: true}, func(t *T) {
			if t.cfg.WrongKind == nil {
				t.harness("no wrong-kind server configured")
			}
			addr, stop, err := t.cfg.WrongKind(t.ctx)
			if err != nil {
				t.harness("start a Redis 7 for the wrong-kind check: %v", err)
			}
			t.stops = append(t.stops, stop)
			admin, err := dial(t.ctx, addr)
			if err != nil {
				t.harness("connect to the wrong-kind server: %v", err)
			}
			defer admin.Close()
			mon, err := startMonitor(t.ctx, addr)
			if err != nil {
				t.harness("MONITOR on the wrong-kind server: %v", err)
			}
			defer mon.Close()
			_, err = t.D.Hello(t.ctx, drivers.HelloArgs{Valkey: addr})
			t.refused(err, emqerr.Server, ruleServer, "hello against a Redis 7 server")
			if err := mon.sync(t.ctx, admin, 1); err != nil {
				t.harness("%v", err)
			}
			for _, l := range mon.snapshot() {
				if l.Client == admin.local || l.Client == mon.local || l.Client == "lua" || l.Cmd() == "HELLO" {
					continue
				}
				t.fail(ruleServer, "nothing but HELLO reaches a server of the wrong kind", "the port sent "+l.String())
			}
		})
		clause(cfg, "C01", "C01/fence/fence-again-after-reconnect", clauseOpts{}, func(t *T) {
			t.enqueue("orders", "before")
			m := t.mark()
			before, _ := byClient(t.portLines(0))
			t.ok(t.D.Reconnect(t.ctx), ruleReconnect, "reconnect")
			t.enqueue("orders", "after")
			order, conns := byClient(t.portLines(m))
			fence := t.cfg.Bundle.MustScript(lua.Fence).SHA1
			fresh := 0
			for _, c := range order {
				ls := conns[c]
				if slices.Contains(before, c) {
					// An old connection may only finish a pending blocking pop or minter upkeep;
					// every line it sends after the reconnect is checked, not only its first.
					for _, l := range ls {
						if l.Cmd() != "BLPOP" && !strings.HasPrefix(argAt(l, 1), "{emq}:minter:") {
							t.fail(ruleReconnect, "reconnect drops every connection", "connection "+c+" from before the reconnect still sent "+l.String())
						}
					}
					continue
				}
				fresh++
				t.check(ls[0].Cmd() == "HELLO", ruleReconnect, "HELLO 2 first on a reconnected connection", "connection %s began with %s", c, ls[0])
				for _, l := range ls[1:] {
					if l.Cmd() == "SCRIPT" {
						continue
					}
					t.check(l.Cmd() == "EVALSHA" && argAt(l, 1) == fence, ruleReconnect, "the fence right after HELLO on a reconnected connection", "connection %s sent %s", c, l)
					break
				}
			}
			t.check(fresh > 0, ruleReconnect, "new connections after reconnect, each fenced", "no new connection showed on the wire")
		})
	})
}

func argAt(l Line, i int) string {
	if i < len(l.Args) {
		return l.Args[i]
	}
	return ""
}

// validJob checks a port-minted id against canon §3.
func (t *T) validJob(id string) uint64 {
	sf, err := ids.ParseJob(id)
	if err != nil || len(id) != 14 || !strings.HasPrefix(id, "JOB") {
		t.fail(ruleIDs, "a 14-byte JOB id", fmt.Sprintf("%q (%v)", id, err))
	}
	return sf
}

func c02(cfg *Config) {
	Describe("C02 mint", Label("C02"), func() {
		clause(cfg, "C02", "C02/mint/three-field-row", clauseOpts{}, func(t *T) {
			q := t.q("orders")
			payload := "pay\x00load\xff\n"
			before := t.now()
			id := t.enqueue("orders", payload)
			t.validJob(id)
			row := t.hash(jobKey(q, id))
			want := map[string]string{"state": "pending", "attempts": "0", "payload": payload}
			t.check(fmt.Sprint(row) == fmt.Sprint(want), ruleRow, fmt.Sprintf("row %q", want), "row %q", row)
			score, ok := t.zscore(q.Pending(), id)
			t.check(ok && score == 0, ruleEnqueue, "the id in pending with score 0", "in pending: %v, score %d", ok, score)
			t.check(t.llen(q.Wake()) == 1, ruleWake, "the enqueue armed the wake (one token)", "wake length %d", t.llen(q.Wake()))
			for _, k := range t.allKeys() {
				p, _ := keys.Parse(k)
				if p.Queue == "orders" && k != jobKey(q, id) && k != q.Pending() && k != q.Wake() {
					t.fail(ruleEnqueue, "enqueue writes the row, pending and the wake, nothing else", "it also wrote "+k)
				}
			}
			// A delayed enqueue: scheduled at server TIME + delay_ms.
			m := t.mark()
			id2 := t.enqueueWith(drivers.EnqueueArgs{Queue: "orders", PayloadB64: b64("later"), DelayMS: 60000})
			after := t.now()
			row2 := t.hash(jobKey(q, id2))
			t.check(row2["state"] == "scheduled" && row2["attempts"] == "0" && row2["payload"] == "later" && len(row2) == 3, ruleRow,
				"a delayed job's row {state: scheduled, attempts: 0, payload}", "%q", row2)
			due, ok := t.zscore(q.Scheduled(), id2)
			t.check(ok && due >= before+60000 && due <= after+60000, ruleEnqueue,
				fmt.Sprintf("due time in scheduled within [%d, %d] (server TIME + 60000)", before+60000, after+60000), "in scheduled: %v, due %d", ok, due)
			t.durationOnWire(m, lua.Enqueue, 60000)
		})
		clause(cfg, "C02", "C02/mint/leased-minter", clauseOpts{}, func(t *T) {
			id := t.enqueue("orders", "x")
			sf := t.validJob(id)
			_, worker, _ := ids.Split(sf)
			key, _ := keys.Minter(worker)
			v, err := t.admin.do(t.ctx, "PTTL", key)
			if err != nil {
				t.harness("PTTL: %v", err)
			}
			t.check(v.Int > 0, ruleMinter, fmt.Sprintf("a live lease %s (with a TTL) on the id's worker %d", key, worker), "PTTL %d", v.Int)
			leased := false
			for _, l := range t.portLines(0) {
				if l.Cmd() == "SET" && argAt(l, 1) == key {
					opts := strings.ToUpper(strings.Join(l.Args[3:], " "))
					leased = leased || (strings.Contains(opts, "NX") && strings.Contains(opts, "PX"))
				}
			}
			t.check(leased, ruleMinter, "SET "+key+" <owner> NX PX <ttl> on the wire", "no such lease command from the port")
			mintAt := ids.Time(sf)
			server := time.UnixMilli(t.now())
			t.check(mintAt.Sub(server).Abs() < time.Minute, ruleIDs, "the snowflake's milliseconds are the mint time", "mint time %s, server time %s", mintAt.UTC(), server.UTC())
		})
		clause(cfg, "C02", "C02/mint/keys-parse-and-co-locate", clauseOpts{}, func(t *T) {
			vectors := map[string]int{"orders": 105, "fills": 4165, "payments": 8507}
			id := jobID(1 << 40)
			for qn, slot := range vectors {
				q := t.q(qn)
				for _, typ := range []string{"pending", "active", "scheduled", "dead", "errors", "ckpt", "meta", "wake", "ring", "lanes", "laneof", "job", "lane"} {
					a := drivers.KeyArgs{Queue: qn, Type: typ}
					want := q.Prefix() + typ
					switch typ {
					case "job":
						a.ID, want = id, jobKey(q, id)
					case "lane":
						a.Lane, want = "east", laneKey(q, "east")
					}
					k, err := t.D.Key(t.ctx, a)
					t.ok(err, ruleGrammar, "key "+typ)
					t.check(k.Key == want, ruleGrammar, "key "+want, "%q", k.Key)
					s, err := t.D.Slot(t.ctx, drivers.SlotArgs{Key: k.Key})
					t.ok(err, ruleGrammar, "slot")
					t.check(s.Slot == slot, ruleGrammar, fmt.Sprintf("slot(%s) = %d", k.Key, slot), "%d", s.Slot)
				}
			}
			s, err := t.D.Slot(t.ctx, drivers.SlotArgs{Key: "123456789"})
			t.ok(err, ruleGrammar, "slot")
			t.check(s.Slot == 12739, ruleGrammar, "slot(123456789) = CRC16 12739", "%d", s.Slot)
			t.enqueue("orders", "one")
			t.enqueue("fills", "two")
		})
	})
}

func c03(cfg *Config) {
	Describe("C03 duplicate", Label("C03"), func() {
		dup := func(t *T, id string, delay int64) {
			before := t.snapshot()
			r, err := t.D.Enqueue(t.ctx, drivers.EnqueueArgs{Queue: "orders", ID: id, PayloadB64: b64("second payload"), DelayMS: delay})
			t.ok(err, ruleEnqueue, "enqueue of a duplicate id")
			t.check(!r.Created && r.ID == id, ruleEnqueue, "the duplicate answers created: false with the same id", "created %v id %s", r.Created, r.ID)
			d := diff(before, t.snapshot())
			t.check(d == "", ruleEnqueue, "a duplicate enqueue changes nothing, byte for byte", "%s", d)
		}
		mintOne := func(t *T) string {
			m, err := t.D.Mint(t.ctx, drivers.MintArgs{N: 1})
			t.ok(err, ruleIDs, "mint")
			t.check(len(m.IDs) == 1 && len(m.IDs[0]) == 1, ruleIDs, "mint n=1 answers one list of one id", "%v", m.IDs)
			t.validJob(m.IDs[0][0])
			return m.IDs[0][0]
		}
		clause(cfg, "C03", "C03/duplicate/second-enqueue-changes-nothing", clauseOpts{}, func(t *T) {
			id := mintOne(t)
			got := t.enqueueWith(drivers.EnqueueArgs{Queue: "orders", ID: id, PayloadB64: b64("first payload")})
			t.check(got == id, ruleEnqueue, "enqueue with an id keeps it", "answered id %s for %s", got, id)
			dup(t, id, 0)
			dup(t, id, 5000)
		})
		clause(cfg, "C03", "C03/duplicate/duplicate-of-claimed-job", clauseOpts{}, func(t *T) {
			id := mintOne(t)
			t.enqueueWith(drivers.EnqueueArgs{Queue: "orders", ID: id, PayloadB64: b64("first payload")})
			c := t.mustClaim("orders", 30000)
			t.check(c.ID == id, ruleClaim, "the claim returns the only job", "%s", c.ID)
			dup(t, id, 0)
			t.complete("orders", id, c.Token)
		})
	})
}

func c04(cfg *Config) {
	Describe("C04 kind", Label("C04"), func() {
		// noWire checks that nothing but minter upkeep reached the server since m.
		noWire := func(t *T, m int, what string) {
			if ls := t.portCommands(m); len(ls) > 0 {
				t.fail(ruleKeyBuilder, what+" is refused before any command reaches the server", fmt.Sprintf("%d command(s) reached the server", len(ls)), ls...)
			}
		}
		refuse := func(t *T, want *emqerr.Error, what string, err error) {
			t.refused(err, want, ruleKeyBuilder, what)
		}
		clause(cfg, "C04", "C04/kind/wrong-brand-refused-before-server", clauseOpts{}, func(t *T) {
			ord := ids.Encode("ORD", 1<<40)
			m := t.mark()
			_, err := t.D.Enqueue(t.ctx, drivers.EnqueueArgs{Queue: "orders", ID: ord, PayloadB64: b64("x")})
			refuse(t, emqerr.Kind, "enqueue of "+ord, err)
			_, err = t.D.Key(t.ctx, drivers.KeyArgs{Queue: "orders", Type: "job", ID: ord})
			refuse(t, emqerr.Kind, "the job key of "+ord, err)
			refuse(t, emqerr.Kind, "complete of "+ord, t.D.Complete(t.ctx, fa("orders", ord, 1)))
			_, err = t.D.Extend(t.ctx, drivers.ExtendArgs{FenceArgs: fa("orders", ord, 1), LeaseMS: 1000})
			refuse(t, emqerr.Kind, "extend of "+ord, err)
			_, err = t.D.Revive(t.ctx, drivers.JobArgs{Queue: "orders", ID: ord})
			refuse(t, emqerr.Kind, "revive of "+ord, err)
			noWire(t, m, "a wrong-kind id")
		})
		clause(cfg, "C04", "C04/kind/malformed-id-refused", clauseOpts{}, func(t *T) {
			m := t.mark()
			for _, bad := range []string{"JOB123", "JOB0000000000!", "JOB00000000000A", "JOB000000 000A", "JOB"} {
				_, err := t.D.Enqueue(t.ctx, drivers.EnqueueArgs{Queue: "orders", ID: bad, PayloadB64: b64("x")})
				refuse(t, emqerr.Key, fmt.Sprintf("enqueue of malformed id %q", bad), err)
				_, err = t.D.Key(t.ctx, drivers.KeyArgs{Queue: "orders", Type: "job", ID: bad})
				refuse(t, emqerr.Key, fmt.Sprintf("the job key of malformed id %q", bad), err)
				refuse(t, emqerr.Key, fmt.Sprintf("complete of malformed id %q", bad), t.D.Complete(t.ctx, fa("orders", bad, 1)))
			}
			noWire(t, m, "a malformed id")
		})
		clause(cfg, "C04", "C04/kind/bad-queue-name-refused", clauseOpts{}, func(t *T) {
			m := t.mark()
			for _, bad := range []string{"Orders", "a b", "a:b", "{x}", "ü", strings.Repeat("q", 65), "orders}:x"} {
				_, err := t.D.Enqueue(t.ctx, drivers.EnqueueArgs{Queue: bad, PayloadB64: b64("x")})
				refuse(t, emqerr.Key, fmt.Sprintf("enqueue on queue %q", bad), err)
				_, err = t.D.Claim(t.ctx, drivers.ClaimArgs{Queue: bad, LeaseMS: 1000})
				refuse(t, emqerr.Key, fmt.Sprintf("claim on queue %q", bad), err)
				_, err = t.D.Key(t.ctx, drivers.KeyArgs{Queue: bad, Type: "pending"})
				refuse(t, emqerr.Key, fmt.Sprintf("the pending key of queue %q", bad), err)
			}
			noWire(t, m, "a bad queue name")
			// The grammar's edge is accepted: 64 bytes of the alphabet.
			long := strings.Repeat("a", 62) + ".-"
			t.enqueue(long, "edge")
		})
		clause(cfg, "C04", "C04/kind/bad-lane-name-refused", clauseOpts{}, func(t *T) {
			m := t.mark()
			for _, bad := range []string{"East", "a b", "a:b", strings.Repeat("g", 65)} {
				_, err := t.D.Enqueue(t.ctx, drivers.EnqueueArgs{Queue: "orders", Lane: bad, PayloadB64: b64("x")})
				refuse(t, emqerr.Key, fmt.Sprintf("lane enqueue into lane %q", bad), err)
				refuse(t, emqerr.Key, fmt.Sprintf("lane_pause of lane %q", bad), t.D.LanePause(t.ctx, drivers.QueueArgs{Queue: "orders", Lane: bad}))
				refuse(t, emqerr.Key, fmt.Sprintf("lane_ceiling of lane %q", bad), t.D.LaneCeiling(t.ctx, drivers.QueueArgs{Queue: "orders", Lane: bad, Ceiling: 1}))
				_, err = t.D.Key(t.ctx, drivers.KeyArgs{Queue: "orders", Type: "lane", Lane: bad})
				refuse(t, emqerr.Key, fmt.Sprintf("the key of lane %q", bad), err)
			}
			noWire(t, m, "a bad lane name")
		})
	})
}

func c05(cfg *Config) {
	Describe("C05 order", Label("C05"), func() {
		increasing := func(t *T, list []string, what string) {
			for i, id := range list {
				t.validJob(id)
				if i > 0 && id <= list[i-1] {
					t.fail(ruleMintOrder, what+": each id sorts after the one minted before it", fmt.Sprintf("id %d %s after %s", i, id, list[i-1]))
				}
			}
		}
		clause(cfg, "C05", "C05/order/one-caller-strictly-increasing", clauseOpts{}, func(t *T) {
			m, err := t.D.Mint(t.ctx, drivers.MintArgs{N: 5000})
			t.ok(err, ruleMintOrder, "mint")
			t.check(len(m.IDs) == 1 && len(m.IDs[0]) == 5000, ruleMintOrder, "one list of 5000 ids", "%d lists", len(m.IDs))
			increasing(t, m.IDs[0], "one caller")
			perMS := map[uint64]int{}
			most := 0
			for _, id := range m.IDs[0] {
				sf, _ := ids.ParseJob(id)
				ms, _, _ := ids.Split(sf)
				perMS[ms]++
				most = max(most, perMS[ms])
			}
			t.check(most > 1, ruleMintOrder, "several ids within one millisecond (the sequence bits in use)", "every id in its own millisecond; the check could not exercise the sequence")
		})
		clause(cfg, "C05", "C05/order/parallel-callers", clauseOpts{}, func(t *T) {
			m, err := t.D.Mint(t.ctx, drivers.MintArgs{N: 1000, Parallel: 4})
			t.ok(err, ruleMintOrder, "mint")
			t.check(len(m.IDs) == 4, ruleMintOrder, "four lists, one per caller", "%d lists", len(m.IDs))
			seen := map[string]bool{}
			for i, l := range m.IDs {
				t.check(len(l) == 1000, ruleMintOrder, "1000 ids per caller", "caller %d got %d", i, len(l))
				increasing(t, l, fmt.Sprintf("caller %d", i))
				for _, id := range l {
					t.check(!seen[id], ruleMintOrder, "ids never repeat across callers", "%s minted twice", id)
					seen[id] = true
				}
			}
		})
		clause(cfg, "C05", "C05/order/claims-oldest-first", clauseOpts{}, func(t *T) {
			m, err := t.D.Mint(t.ctx, drivers.MintArgs{N: 6})
			t.ok(err, ruleMintOrder, "mint")
			t.check(len(m.IDs) == 1 && len(m.IDs[0]) == 6, ruleMintOrder, "mint n=6 answers one list of six ids", "%v", m.IDs)
			minted := m.IDs[0]
			for _, i := range []int{5, 3, 1, 0, 2, 4} {
				t.enqueueWith(drivers.EnqueueArgs{Queue: "orders", ID: minted[i], PayloadB64: b64(fmt.Sprint(i))})
			}
			var got []string
			for range minted {
				c := t.mustClaim("orders", 30000)
				got = append(got, c.ID)
			}
			t.check(strings.Join(got, ",") == strings.Join(minted, ","), ruleMintOrder, "claims in mint order "+strings.Join(minted, ","), "%s", strings.Join(got, ","))
			t.check(t.claim("orders", 30000) == nil, ruleClaim, "an empty reply once the queue is drained", "another job")
		})
	})
}
