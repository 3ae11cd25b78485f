package keys

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/echomq/kit/reference/emqerr"
	"github.com/echomq/kit/reference/ids"
)

const jobID = "JOB0KHTOWnGLuC"

func mustQueue(t testing.TB, name string) Q {
	t.Helper()
	q, err := Queue(name)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestBuild(t *testing.T) {
	q := mustQueue(t, "orders")
	got := map[string]string{
		q.Pending(): "emq:{orders}:pending", q.Active(): "emq:{orders}:active",
		q.Scheduled(): "emq:{orders}:scheduled", q.Dead(): "emq:{orders}:dead",
		q.Errors(): "emq:{orders}:errors", q.Ckpt(): "emq:{orders}:ckpt", q.Meta(): "emq:{orders}:meta",
		q.Wake(): "emq:{orders}:wake", q.Ring(): "emq:{orders}:ring", q.Lanes(): "emq:{orders}:lanes",
		q.LaneOf(): "emq:{orders}:laneof", Bundle(): "{emq}:bundle",
	}
	for k, want := range got {
		if k != want {
			t.Errorf("built %q, want %q", k, want)
		}
	}
	if len(got) != 12 {
		t.Fatalf("builders collide: %d distinct keys", len(got))
	}
	if k, err := q.Job(jobID); err != nil || k != "emq:{orders}:job:"+jobID {
		t.Fatalf("Job = %q, %v", k, err)
	}
	if k, err := q.Lane("tenant-7"); err != nil || k != "emq:{orders}:lane:tenant-7" {
		t.Fatalf("Lane = %q, %v", k, err)
	}
	if k, err := Minter(1023); err != nil || k != "{emq}:minter:1023" {
		t.Fatalf("Minter = %q, %v", k, err)
	}
	for _, k := range queueKinds {
		key, err := q.Key(k)
		if err != nil || key != q.Prefix()+string(k) {
			t.Fatalf("Key(%s) = %q, %v", k, key, err)
		}
	}
	if _, err := q.Key(KindJob); err == nil {
		t.Fatal("Key(job) accepted a parameterised kind")
	}
}

func TestBuildRefusals(t *testing.T) {
	for _, name := range []string{"", "Orders", "a b", "a:b", "a{b}", "q/1", "é", strings.Repeat("a", 65), "a\x00"} {
		if _, err := Queue(name); !errors.Is(err, emqerr.Key) {
			t.Errorf("Queue(%q) = %v, want EMQKEY", name, err)
		}
	}
	for _, name := range []string{"a", "a.b-c_d", "0", strings.Repeat("z", 64)} {
		if _, err := Queue(name); err != nil {
			t.Errorf("Queue(%q) = %v", name, err)
		}
	}
	q := mustQueue(t, "orders")
	for _, g := range []string{"", "G", "a:b", strings.Repeat("a", 65)} {
		if _, err := q.Lane(g); !errors.Is(err, emqerr.Key) {
			t.Errorf("Lane(%q) = %v, want EMQKEY", g, err)
		}
	}
	for id, want := range map[string]*emqerr.Error{
		"ORD0KHTOWnGLuC": emqerr.Kind, "USR0KHTOWnGLuC": emqerr.Kind,
		"JOB0KHTOWnGLu": emqerr.Key, "JOB0KHTOWnGL_C": emqerr.Key, "": emqerr.Key, "job0KHTOWnGLuC": emqerr.Key,
	} {
		if _, err := q.Job(id); !errors.Is(err, want) {
			t.Errorf("Job(%q) = %v, want %s", id, err, want.Type)
		}
	}
	for _, w := range []int{-1, 1024} {
		if _, err := Minter(w); !errors.Is(err, emqerr.Key) {
			t.Errorf("Minter(%d) = %v, want EMQKEY", w, err)
		}
	}
}

func TestParse(t *testing.T) {
	cases := map[string]Parsed{
		"emq:{orders}:pending":      {Kind: KindPending, Queue: "orders"},
		"emq:{a.b-c_d}:laneof":      {Kind: KindLaneOf, Queue: "a.b-c_d"},
		"emq:{orders}:job:" + jobID: {Kind: KindJob, Queue: "orders", ID: jobID},
		"emq:{orders}:lane:t1":      {Kind: KindLane, Queue: "orders", Lane: "t1"},
		"{emq}:bundle":              {Kind: KindBundle},
		"{emq}:minter:0":            {Kind: KindMinter},
		"{emq}:minter:1023":         {Kind: KindMinter, Worker: 1023},
	}
	for key, want := range cases {
		got, err := Parse(key)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", key, got, err, want)
		}
	}
	foreignKeys := []string{
		"", "emq", "emq:{orders}", "emq:{orders}:", "emq:{orders}:pendin", "emq:{orders}:pending:x",
		"emq:{Orders}:pending", "emq:{}:pending", "emq:{orders}pending", "emq:orders:pending",
		"emq:{orders}:job:", "emq:{orders}:job:JOB0KHTOWnGLu", "emq:{orders}:lane:", "emq:{orders}:lane:A",
		"{emq}:bundle:x", "{emq}:minter:", "{emq}:minter:1024", "{emq}:minter:-1", "{emq}:minter:007",
		"{emq}:minter:+7", "{emq}:other", "bull:orders:wait", "asynq:{orders}:pending",
		"emq:{" + strings.Repeat("a", 65) + "}:pending", "emq:{a}:b}:pending",
	}
	for _, key := range foreignKeys {
		_, err := Parse(key)
		if !errors.Is(err, ErrForeign) || !errors.Is(err, emqerr.Key) {
			t.Errorf("Parse(%q) = %v, want a foreign EMQKEY", key, err)
		}
		var fe *ForeignError
		if !errors.As(err, &fe) || fe.Key != key {
			t.Errorf("Parse(%q): want *ForeignError naming the key, got %#v", key, err)
		}
	}
	_, err := Parse("emq:{orders}:job:ORD0KHTOWnGLuC")
	if !errors.Is(err, ErrForeign) || !errors.Is(err, emqerr.Kind) {
		t.Fatalf("wrong-brand row key: %v, want foreign EMQKIND", err)
	}
}

func TestSlotVectors(t *testing.T) {
	if got := CRC16("123456789"); got != 12739 {
		t.Fatalf("CRC16(123456789) = %d, want 12739", got)
	}
	for q, want := range map[string]uint16{"orders": 105, "fills": 4165, "payments": 8507} {
		if got := Slot(mustQueue(t, q).Pending()); got != want {
			t.Errorf("slot of {%s} = %d, want %d", q, got, want)
		}
		if got := Slot("{" + q + "}"); got != want {
			t.Errorf("Slot({%s}) = %d, want %d", q, got, want)
		}
	}
	// Hash-tag edge cases of the cluster spec.
	for key, tag := range map[string]string{
		"{user1000}.following": "user1000", "foo{}{bar}": "foo{}{bar}", "foo{{bar}}zap": "{bar",
		"foo{bar}{zap}": "bar", "nobraces": "nobraces", "{emq}:bundle": "emq", "open{only": "open{only",
	} {
		if got := HashTag(key); got != tag {
			t.Errorf("HashTag(%q) = %q, want %q", key, got, tag)
		}
	}
}

// allKeys builds every key kind of one queue, with a job and a lane.
func allKeys(t testing.TB, q Q, id, lane string) []string {
	t.Helper()
	out := []string{q.Pending(), q.Active(), q.Scheduled(), q.Dead(), q.Errors(), q.Ckpt(), q.Meta(),
		q.Wake(), q.Ring(), q.Lanes(), q.LaneOf()}
	jk, err := q.Job(id)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := q.Lane(lane)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, jk, lk)
}

const nameAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789_.-"

func randName(r *rand.Rand) string {
	b := make([]byte, 1+r.IntN(MaxName))
	for i := range b {
		b[i] = nameAlphabet[r.IntN(len(nameAlphabet))]
	}
	return string(b)
}

// Every built key parses back to what built it, and all keys of one queue share one slot.
func TestRoundTripAndCoLocation(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 2000; i++ {
		name, lane := randName(r), randName(r)
		id := ids.Encode(ids.BrandJob, r.Uint64())
		q := mustQueue(t, name)
		slot := Slot(q.Pending())
		for _, key := range allKeys(t, q, id, lane) {
			p, err := Parse(key)
			if err != nil {
				t.Fatalf("built %q does not parse: %v", key, err)
			}
			if p.Queue != name || p.Key() != key {
				t.Fatalf("Parse(%q) = %+v", key, p)
			}
			if p.Kind == KindJob && p.ID != id || p.Kind == KindLane && p.Lane != lane {
				t.Fatalf("Parse(%q) = %+v: parameter lost", key, p)
			}
			if Slot(key) != slot {
				t.Fatalf("%q in slot %d, queue %q in %d", key, Slot(key), name, slot)
			}
		}
	}
	for w := 0; w <= ids.MaxWorker; w++ {
		k, _ := Minter(w)
		p, err := Parse(k)
		if err != nil || p.Kind != KindMinter || p.Worker != w || p.Key() != k {
			t.Fatalf("Parse(%q) = %+v, %v", k, p, err)
		}
		if Slot(k) != Slot(Bundle()) {
			t.Fatalf("minter key %q not co-located with the bundle", k)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"emq:{orders}:pending", "emq:{orders}:job:" + jobID, "emq:{o}:lane:g",
		"{emq}:bundle", "{emq}:minter:12", "emq:{", "emq:{}:", "{emq}:minter:01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		p, err := Parse(key)
		if err != nil {
			if !errors.Is(err, ErrForeign) {
				t.Fatalf("Parse(%q): error %v is not ErrForeign", key, err)
			}
			return
		}
		if p.Key() != key {
			t.Fatalf("Parse(%q).Key() = %q", key, p.Key())
		}
		if p.Queue != "" {
			q, err := Queue(p.Queue)
			if err != nil || Slot(key) != Slot(q.Pending()) {
				t.Fatalf("Parse(%q): queue %q invalid or slot differs", key, p.Queue)
			}
		}
	})
}
