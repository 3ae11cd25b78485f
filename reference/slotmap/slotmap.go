// Package slotmap reads a Valkey Cluster's slot map from a CLUSTER SHARDS reply: the primaries
// that own slots and the slot ranges of each. It is the one reader the bus's router
// (reference/cluster) and the kit's machinery (internal/engines, internal/mutant) share. The
// judge (contracts/internal/wire) keeps a reader of its own, so that it does not lean on the
// code it judges.
package slotmap

import (
	"errors"
	"net"
	"slices"
	"strconv"

	"github.com/echomq/kit/reference/resp"
)

// Slots is the number of hash slots a cluster divides among its primaries.
const Slots = 16384

// ErrNoPrimary: the reply names no primary owning slots.
var ErrNoPrimary = errors.New("slotmap: CLUSTER SHARDS names no primary owning slots")

// Shard is one primary and the slots it owns.
type Shard struct {
	Primary string   // host:port
	ID      string   // its node id
	Slots   [][2]int // inclusive slot ranges, in the reply's order
}

// Parse reads a CLUSTER SHARDS reply given by the node at asked: the shards whose primary owns
// slots, sorted by their first slot. A primary that never met a peer does not know its own
// address (its ip is empty): it is the node that was asked.
func Parse(v resp.Value, asked string) ([]Shard, error) {
	var out []Shard
	for _, shard := range v.Elems {
		f := fields(shard)
		var sh Shard
		ss := f["slots"].Elems
		for i := 0; i+1 < len(ss); i += 2 {
			lo, err1 := ss[i].Int64()
			hi, err2 := ss[i+1].Int64()
			if err1 == nil && err2 == nil && lo <= hi && lo >= 0 && hi < Slots {
				sh.Slots = append(sh.Slots, [2]int{int(lo), int(hi)})
			}
		}
		for _, n := range f["nodes"].Elems {
			nf := fields(n)
			if role := nf["role"].Text(); role != "master" && role != "primary" {
				continue
			}
			ip := nf["ip"].Text()
			if ip == "" {
				ip = nf["endpoint"].Text()
			}
			if ip == "" {
				ip, _, _ = net.SplitHostPort(asked)
			}
			port, _ := nf["port"].Int64()
			sh.Primary = net.JoinHostPort(ip, strconv.FormatInt(port, 10))
			sh.ID = nf["id"].Text()
		}
		if len(sh.Slots) > 0 && sh.Primary != "" {
			out = append(out, sh)
		}
	}
	if len(out) == 0 {
		return nil, ErrNoPrimary
	}
	slices.SortFunc(out, func(a, b Shard) int { return a.Slots[0][0] - b.Slots[0][0] })
	return out, nil
}

// Owners is the slot → primary (host:port) table of shards; "" for a slot no shard owns.
func Owners(shards []Shard) []string {
	owner := make([]string, Slots)
	for _, sh := range shards {
		for _, r := range sh.Slots {
			for s := r[0]; s <= r[1]; s++ {
				owner[s] = sh.Primary
			}
		}
	}
	return owner
}

// Owner is the primary owning slot ("" if none does).
func Owner(shards []Shard, slot int) string {
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if slot >= r[0] && slot <= r[1] {
				return sh.Primary
			}
		}
	}
	return ""
}

// fields reads a RESP2 flat key/value array.
func fields(v resp.Value) map[string]resp.Value {
	m := map[string]resp.Value{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[v.Elems[i].Text()] = v.Elems[i+1]
	}
	return m
}
