package mutation

import (
	"math/rand/v2"
	"sort"
)

// Sample picks n of the mutants, reproducibly: the same mutants, seed and n give the same
// sample on every machine, whatever order the tool listed them in (they are ordered by key
// first). n ≤ 0, or n at least the count, takes them all. The sample keeps that key order.
func Sample(ms []Mutant, n int, seed uint64) []Mutant {
	out := append([]Mutant(nil), ms...)
	sort.Slice(out, func(i, j int) bool { return less(out[i].Key(), out[j].Key()) })
	if n <= 0 || n >= len(out) {
		return out
	}
	r := rand.New(rand.NewPCG(seed, 0x656d712d6d757461)) // "emq-muta": a fixed second word
	picked := r.Perm(len(out))[:n]
	sort.Ints(picked)
	sample := make([]Mutant, n)
	for i, p := range picked {
		sample[i] = out[p]
	}
	return sample
}

func less(a, b Key) bool {
	switch {
	case a.Port != b.Port:
		return a.Port < b.Port
	case a.File != b.File:
		return a.File < b.File
	case a.Mutator != b.Mutator:
		return a.Mutator < b.Mutator
	case a.Was != b.Was:
		return a.Was < b.Was
	case a.Now != b.Now:
		return a.Now < b.Now
	}
	return a.N < b.N
}
