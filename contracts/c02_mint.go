package contracts

import (
	"fmt"
	"strings"
	"time"

	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/ids"
	"github.com/echomq/kit/reference/keys"
)

// c02 is contract C02: mint.
var c02 = Contract{ID: "C02", Name: "mint",
	Rule: "enqueue writes exactly the three-field row (pending, 0, payload) under a 14-byte JOB id from a leased minter; every key written parses and co-locates (slot vectors of §2)",
	specs: func(s spec) {
		s.clause("three-field-row", clauseOpts{}, func(t *T) {
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
			t.cover(ruleEnqueue)
			for _, k := range t.allKeys() {
				p, _ := keys.Parse(k)
				if p.Queue == "orders" && k != jobKey(q, id) && k != q.Pending() && k != q.Wake() {
					t.fail(ruleEnqueue, "enqueue writes the row, pending and the wake, nothing else", "it also wrote "+k)
				}
			}
			// A delayed enqueue: scheduled at server TIME + delay_ms.
			m := t.mark()
			id2 := t.enqueueWith(protocol.EnqueueArgs{Queue: "orders", PayloadB64: b64("later"), DelayMS: 60000})
			after := t.now()
			row2 := t.hash(jobKey(q, id2))
			t.check(row2["state"] == "scheduled" && row2["attempts"] == "0" && row2["payload"] == "later" && len(row2) == 3, ruleRow,
				"a delayed job's row {state: scheduled, attempts: 0, payload}", "%q", row2)
			due, ok := t.zscore(q.Scheduled(), id2)
			t.check(ok && due >= before+60000 && due <= after+60000, ruleEnqueue,
				fmt.Sprintf("due time in scheduled within [%d, %d] (server TIME + 60000)", before+60000, after+60000), "in scheduled: %v, due %d", ok, due)
			t.durationOnWire(m, lua.Enqueue, 60000)
		})
		s.clause("leased-minter", clauseOpts{}, func(t *T) {
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
		s.clause("keys-parse-and-co-locate", clauseOpts{}, func(t *T) {
			vectors := map[string]int{"orders": 105, "fills": 4165, "payments": 8507}
			id := jobID(1 << 40)
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
					t.ok(err, ruleGrammar, "key "+typ)
					t.check(k.Key == want, ruleGrammar, "key "+want, "%q", k.Key)
					s, err := t.D.Slot(t.ctx, protocol.SlotArgs{Key: k.Key})
					t.ok(err, ruleGrammar, "slot")
					t.check(s.Slot == slot, ruleGrammar, fmt.Sprintf("slot(%s) = %d", k.Key, slot), "%d", s.Slot)
				}
			}
			s, err := t.D.Slot(t.ctx, protocol.SlotArgs{Key: "123456789"})
			t.ok(err, ruleGrammar, "slot")
			t.check(s.Slot == 12739, ruleGrammar, "slot(123456789) = CRC16 12739", "%d", s.Slot)
			t.enqueue("orders", "one")
			t.enqueue("fills", "two")
		})
	},
}
