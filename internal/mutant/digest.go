package mutant

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/lua"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
)

// digestMutants compute the bundle digest against A1 and name it as they computed it: the fence
// runs with it (on a fresh deployment it installs it) and hello reports it.
var digestMutants = []Spec{
	{Name: "digest-unsorted", Contract: "C01", Rule: "version", Defect: "the bundle digest hashes the name:sha1 lines in reverse name order, not sorted by name: the fence runs with it and hello reports it",
		Go: wrongDigest(func(lines []string) []string { slices.Reverse(lines); return lines })},
}

// wrongDigest computes the digest over the bundle's sorted lines as order leaves them, runs the
// fence with it (a hook on the fence's ARGV[2]) and reports it in hello (a front).
func wrongDigest(order func(lines []string) []string) func(*bus.Options) Wrap {
	return func(opt *bus.Options) Wrap {
		b, err := lua.Load()
		if err != nil {
			panic(err) // the embedded bundle loads, or nothing in the kit runs
		}
		var lines []string
		for _, s := range b.Scripts() {
			sum := sha1.Sum([]byte(s.Source))
			lines = append(lines, s.Name+":"+hex.EncodeToString(sum[:])+"\n")
		}
		slices.Sort(lines)
		var all []byte
		for _, l := range order(lines) {
			all = append(all, l...)
		}
		sum := sha1.Sum(all)
		wrong, right := hex.EncodeToString(sum[:]), b.Digest()
		_, sha := script(lua.Fence, nil)
		opt.Test.Hook = chain(opt.Test.Hook, func(args []any) []any {
			n, ok := evalShaOf(args, sha)
			if !ok || len(args) < 3+n+2 || text(args[3+n+1]) != right {
				return args
			}
			out := slices.Clone(args)
			out[3+n+1] = wrong
			return out
		})
		return func(d drivers.Driver) drivers.Driver { return digestFront{d, wrong} }
	}
}

// digestFront reports the port's digest in hello.
type digestFront struct {
	drivers.Driver
	digest string
}

func (f digestFront) Hello(ctx context.Context, a protocol.HelloArgs) (protocol.HelloResult, error) {
	h, err := f.Driver.Hello(ctx, a)
	h.Digest = f.digest
	return h, err
}
