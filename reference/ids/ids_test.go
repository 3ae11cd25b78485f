package ids

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/echomq/kit/reference/emqerr"
)

func TestEncodeVector(t *testing.T) {
	if got := Encode("USR", 274557032793636864); got != "USR0KHTOWnGLuC" {
		t.Fatalf("Encode = %q, want USR0KHTOWnGLuC", got)
	}
	brand, sf, err := Parse("USR0KHTOWnGLuC")
	if err != nil || brand != "USR" || sf != 274557032793636864 {
		t.Fatalf("Parse = %q %d %v", brand, sf, err)
	}
}

func TestEncodeBounds(t *testing.T) {
	for _, sf := range []uint64{0, 1, 61, 62, 1<<63 - 1, 1 << 63, ^uint64(0)} {
		id := Encode(BrandJob, sf)
		if len(id) != Len {
			t.Fatalf("Encode(%d) = %q: length %d", sf, id, len(id))
		}
		got, err := ParseJob(id)
		if err != nil || got != sf {
			t.Fatalf("ParseJob(%q) = %d, %v; want %d", id, got, err, sf)
		}
	}
	if got := Encode(BrandJob, 0); got != "JOB00000000000" {
		t.Fatalf("Encode(0) = %q", got)
	}
}

func TestParseRefusals(t *testing.T) {
	max := Encode(BrandJob, ^uint64(0))
	cases := []struct {
		id   string
		want *emqerr.Error
	}{
		{"", emqerr.Key},
		{"JOB0KHTOWnGLu", emqerr.Key},     // 13 bytes
		{"JOB0KHTOWnGLuCC", emqerr.Key},   // 15 bytes
		{"JOB0KHTOWnGL-C", emqerr.Key},    // outside the alphabet
		{"JOB0KHTOWnGL C", emqerr.Key},    // space
		{"job0KHTOWnGLuC", emqerr.Key},    // brand not capitals
		{"J0B0KHTOWnGLuC", emqerr.Key},    // digit in brand
		{"JOBzzzzzzzzzzz", emqerr.Key},    // above 2^64-1
		{"JOB0KHTOWnGLu\xff", emqerr.Key}, // non-ASCII
		{"ORD0KHTOWnGLuC", emqerr.Kind},
		{"USR" + max[3:], emqerr.Kind},
	}
	for _, c := range cases {
		_, err := ParseJob(c.id)
		if !errors.Is(err, c.want) {
			t.Errorf("ParseJob(%q) = %v, want %s", c.id, err, c.want.Type)
		}
		var e *emqerr.Error
		if !errors.As(err, &e) || e.Message == "" {
			t.Errorf("ParseJob(%q): want a typed error with a message, got %#v", c.id, err)
		}
	}
	// One past the maximum must overflow; the maximum itself must not.
	if _, err := ParseJob(max); err != nil {
		t.Fatalf("max id %q: %v", max, err)
	}
	over := []byte(max)
	for i := len(over) - 1; i >= BrandLen; i-- { // add 1 in base62
		if over[i] != 'z' {
			over[i] = Alphabet[strings.IndexByte(Alphabet, over[i])+1]
			break
		}
		over[i] = '0'
	}
	if _, err := ParseJob(string(over)); !errors.Is(err, emqerr.Key) {
		t.Fatalf("max+1 %q: %v, want EMQKEY", over, err)
	}
}

// Byte order of ids equals numeric order of snowflakes, for random pairs and near neighbours.
func TestByteOrderIsNumericOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(a, b uint64) {
		ea, eb := Encode(BrandJob, a), Encode(BrandJob, b)
		if (a < b) != (ea < eb) || (a == b) != (ea == eb) {
			t.Fatalf("order mismatch: %d %q vs %d %q", a, ea, b, eb)
		}
	}
	for i := 0; i < 100000; i++ {
		a := r.Uint64() >> r.UintN(64)
		b := r.Uint64() >> r.UintN(64)
		check(a, b)
		check(a, a+1)
		check(a, a^1)
	}
}

func TestComposeSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 10000; i++ {
		ms, w, s := r.Uint64N(MaxMillis+1), r.IntN(MaxWorker+1), r.IntN(MaxSequence+1)
		gms, gw, gs := Split(Compose(ms, w, s))
		if gms != ms || gw != w || gs != s {
			t.Fatalf("Split(Compose(%d,%d,%d)) = %d,%d,%d", ms, w, s, gms, gw, gs)
		}
	}
	sf := Compose(1000, 7, 9)
	if !Time(sf).Equal(Epoch.Add(time.Second)) {
		t.Fatalf("Time = %v", Time(sf))
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Compose accepted worker 1024")
		}
	}()
	Compose(0, 1024, 0)
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"USR0KHTOWnGLuC", "JOB00000000000", "JOBzzzzzzzzzzz", "", "ORD0KHTOWnGLuC"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		brand, sf, err := Parse(id)
		if err != nil {
			var e *emqerr.Error
			if !errors.As(err, &e) || e.Type != emqerr.TypeKey {
				t.Fatalf("Parse(%q): untyped error %v", id, err)
			}
			return
		}
		if got := Encode(brand, sf); got != id {
			t.Fatalf("Encode(Parse(%q)) = %q", id, got)
		}
	})
}
