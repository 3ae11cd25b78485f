package slotmap_test

import (
	"errors"
	"testing"

	"github.com/echomq/kit/reference/resp"
	"github.com/echomq/kit/reference/slotmap"
)

func bulk(s string) resp.Value        { return resp.Value{Type: resp.BulkString, Str: []byte(s)} }
func num(n int64) resp.Value          { return resp.Value{Type: resp.Integer, Int: n} }
func arr(vs ...resp.Value) resp.Value { return resp.Value{Type: resp.Array, Elems: vs} }

// node is one entry of a shard's "nodes" list.
func node(id, ip string, port int64, role string) resp.Value {
	return arr(bulk("id"), bulk(id), bulk("port"), num(port), bulk("ip"), bulk(ip), bulk("endpoint"), bulk(ip), bulk("role"), bulk(role))
}

func TestParse(t *testing.T) {
	reply := arr(
		arr(bulk("slots"), arr(num(8192), num(16383)), bulk("nodes"), arr(node("b", "10.0.0.2", 7001, "master"), node("r", "10.0.0.9", 7009, "replica"))),
		arr(bulk("slots"), arr(num(0), num(100), num(101), num(8191)), bulk("nodes"), arr(node("a", "", 7000, "primary"))),
		arr(bulk("slots"), arr(), bulk("nodes"), arr(node("c", "10.0.0.3", 7002, "master"))), // owns nothing
	)
	shards, err := slotmap.Parse(reply, "127.0.0.1:7000")
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 2 || shards[0].Primary != "127.0.0.1:7000" || shards[0].ID != "a" || len(shards[0].Slots) != 2 ||
		shards[1].Primary != "10.0.0.2:7001" || shards[1].Slots[0] != [2]int{8192, 16383} {
		t.Fatalf("%+v", shards)
	}
	owners := slotmap.Owners(shards)
	if owners[0] != "127.0.0.1:7000" || owners[8191] != "127.0.0.1:7000" || owners[8192] != "10.0.0.2:7001" || owners[16383] != "10.0.0.2:7001" {
		t.Fatalf("owners: %q %q %q %q", owners[0], owners[8191], owners[8192], owners[16383])
	}
	if o := slotmap.Owner(shards, 9000); o != "10.0.0.2:7001" {
		t.Fatalf("owner of 9000: %q", o)
	}
	if _, err := slotmap.Parse(arr(), "x:1"); !errors.Is(err, slotmap.ErrNoPrimary) {
		t.Fatalf("an empty map: %v", err)
	}
}
