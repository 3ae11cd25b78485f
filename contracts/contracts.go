// Package contracts is the fourteen wire contracts' shared facts: their ids, names and the canon
// clause each one enforces, and the port protocol's machine-readable schema. The Ginkgo specs
// that check them live in contracts/suite; the runner is cmd/emq-conform.
package contracts

import (
	"fmt"
	"strings"
)

// Contract is one of the fourteen: its id (C01…C14), short name and what the canon says a port
// must show (PROTOCOL.md §7).
type Contract struct {
	ID   string
	Name string
	Rule string
}

// Title is "C09 retry".
func (c Contract) Title() string { return c.ID + " " + c.Name }

// WireLaw is the canon's wire law (§7), which holds in every contract.
const WireLaw = "the fence runs before anything else; every transition is an EVALSHA of a bundle SHA1 " +
	"(never EVAL of edited source, never a loose command sequence); every key any command or script " +
	"touches parses under §2 and every key of one queue answers one slot; no script touches a key it " +
	"neither declared nor derived by the grammar"

var all = []Contract{
	{"C01", "fence", "HELLO and the bundle fence precede any other command; wrong bundle version → EMQVERSION; wrong-kind server → EMQSERVER; the fence runs again after a reconnect"},
	{"C02", "mint", "enqueue writes exactly the three-field row (pending, 0, payload) under a 14-byte JOB id from a leased minter; every key written parses and co-locates (slot vectors of §2)"},
	{"C03", "duplicate", "a second enqueue of the same id answers duplicate and changes nothing, byte for byte"},
	{"C04", "kind", "a wrong-kind id (EMQKIND), a malformed id, a bad queue or lane name (EMQKEY) is refused before any command reaches the server"},
	{"C05", "order", "ids minted in sequence, even within one millisecond and across a pool of connections, sort in mint order; claims come oldest first"},
	{"C06", "claim", "token 1 on first claim; payload returned; state active; lease = server TIME + lease_ms in active; empty or paused queue → empty reply; after SCRIPT FLUSH the claim still happens exactly once"},
	{"C07", "stale", "a wrong token, or a lease that has passed, is refused EMQSTALE and the row survives untouched; the live token still settles; extend moves the deadline"},
	{"C08", "complete", "the right token retires the job everywhere: no row, no set membership, no error, no checkpoint, no lane count left"},
	{"C09", "retry", "retry with backoff parks the job in scheduled with its last error; promote on the server clock returns it; the next claim mints token 2"},
	{"C10", "dead", "at max attempts the job goes to the morgue with its last error, browsable; revive returns it to pending; purge removes it"},
	{"C11", "reap", "an expired lease is returned by one server-clock scan; the zombie's complete is EMQSTALE; a checkpoint written before the crash is read by the redelivery, and the new holder's complete succeeds (one job, two lives, one counter)"},
	{"C12", "rotate", "lane claims rotate strictly across serviceable lanes; after every step the ring equals the serviceable set; starvation ≤ N−1"},
	{"C13", "pause & limit", "a paused lane keeps its backlog and leaves the ring, resume returns it; a lane at its ceiling answers empty and reopens on complete; a queue-wide pause is atomic with the claim"},
	{"C14", "park", "an idle consumer sends nothing but one blocking pop on the wake key; an enqueue wakes it promptly; a burst wakes parked consumers one after another; the wake list never exceeds one"},
}

// All returns the fourteen contracts in canon order.
func All() []Contract { return append([]Contract(nil), all...) }

// Lookup finds a contract by id ("C09", case-insensitive).
func Lookup(id string) (Contract, bool) {
	for _, c := range all {
		if strings.EqualFold(c.ID, id) {
			return c, true
		}
	}
	return Contract{}, false
}

// ParseID checks a contract id and returns it in canonical form ("c9" is not accepted: ids are
// C01…C14).
func ParseID(id string) (string, error) {
	c, ok := Lookup(strings.TrimSpace(id))
	if !ok {
		return "", fmt.Errorf("contracts: unknown contract id %q (want C01…C14)", id)
	}
	return c.ID, nil
}

// KitVersion is the conformance kit's version, reported in every certification.
const KitVersion = "0.1.0"
