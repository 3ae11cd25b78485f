// Package ids encodes, parses and mints the canon's branded ids (CANON.md §3): a three-capital
// brand followed by a 64-bit snowflake in fixed-width base62, so byte order is numeric order.
package ids

import (
	"fmt"
	"time"

	"github.com/echomq/kit/reference/emqerr"
)

// Alphabet is base62 in ASCII order, which is what makes byte order equal numeric order.
const Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

const (
	// BrandJob is the brand of a job id.
	BrandJob = "JOB"
	// BrandLen is the width of a brand.
	BrandLen = 3
	// BodyLen is the width of the base62 snowflake; 62^11 > 2^64, so every uint64 fits.
	BodyLen = 11
	// Len is the width of an id.
	Len = BrandLen + BodyLen
)

// Snowflake layout: 42 bits of ms since Epoch | 10 bits of worker | 12 bits of sequence.
const (
	WorkerBits   = 10
	SequenceBits = 12
	MaxWorker    = 1<<WorkerBits - 1   // 1023
	MaxSequence  = 1<<SequenceBits - 1 // 4095
	MaxMillis    = 1<<42 - 1
)

// Epoch is the zero of the snowflake's millisecond field.
var Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// digit maps a byte to its base62 value, or -1 outside the alphabet.
var digit = func() (d [256]int8) {
	for i := range d {
		d[i] = -1
	}
	for i := 0; i < len(Alphabet); i++ {
		d[Alphabet[i]] = int8(i)
	}
	return d
}()

// Encode renders brand followed by the snowflake in 11 base62 characters. The brand is written
// as given; use ValidBrand first when it comes from outside.
func Encode(brand string, snowflake uint64) string {
	var b [BodyLen]byte
	for i := BodyLen - 1; i >= 0; i-- {
		b[i] = Alphabet[snowflake%62]
		snowflake /= 62
	}
	return brand + string(b[:])
}

// ValidBrand reports whether s is three ASCII capitals.
func ValidBrand(s string) bool {
	if len(s) != BrandLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// Parse splits a well-formed id into its brand and snowflake. A wrong length, a brand that is not
// three capitals, a character outside the alphabet or a body above 2^64-1 is EMQKEY.
func Parse(id string) (brand string, snowflake uint64, err error) {
	if len(id) != Len {
		return "", 0, &emqerr.Error{Type: emqerr.TypeKey, Message: fmt.Sprintf("id %q: length %d, want %d", id, len(id), Len)}
	}
	brand = id[:BrandLen]
	if !ValidBrand(brand) {
		return "", 0, &emqerr.Error{Type: emqerr.TypeKey, Message: fmt.Sprintf("id %q: brand must be three capitals", id)}
	}
	var v uint64
	for i := BrandLen; i < Len; i++ {
		d := digit[id[i]]
		if d < 0 {
			return "", 0, &emqerr.Error{Type: emqerr.TypeKey, Message: fmt.Sprintf("id %q: byte %d outside base62", id, i)}
		}
		if v > (^uint64(0)-uint64(d))/62 {
			return "", 0, &emqerr.Error{Type: emqerr.TypeKey, Message: fmt.Sprintf("id %q: snowflake overflows 64 bits", id)}
		}
		v = v*62 + uint64(d)
	}
	return brand, v, nil
}

// ParseJob parses an id that must be a JOB id: malformed is EMQKEY, well-formed under another
// brand is EMQKIND.
func ParseJob(id string) (uint64, error) {
	brand, sf, err := Parse(id)
	if err != nil {
		return 0, err
	}
	if brand != BrandJob {
		return 0, &emqerr.Error{Type: emqerr.TypeKind, Message: fmt.Sprintf("id %q: brand %s, want %s", id, brand, BrandJob)}
	}
	return sf, nil
}

// Compose packs a snowflake. It panics on out-of-range fields: callers own their ranges.
func Compose(ms uint64, worker, seq int) uint64 {
	if ms > MaxMillis || worker < 0 || worker > MaxWorker || seq < 0 || seq > MaxSequence {
		panic(fmt.Sprintf("ids: snowflake field out of range (ms=%d worker=%d seq=%d)", ms, worker, seq))
	}
	return ms<<(WorkerBits+SequenceBits) | uint64(worker)<<SequenceBits | uint64(seq)
}

// Split unpacks a snowflake.
func Split(sf uint64) (ms uint64, worker, seq int) {
	return sf >> (WorkerBits + SequenceBits), int(sf >> SequenceBits & MaxWorker), int(sf & MaxSequence)
}

// Time is the mint time of a snowflake.
func Time(sf uint64) time.Time {
	ms, _, _ := Split(sf)
	return Epoch.Add(time.Duration(ms) * time.Millisecond)
}
