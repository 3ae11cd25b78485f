package mutant

import (
	"context"
	"strings"

	"github.com/echomq/kit/drivers"
	"github.com/echomq/kit/protocol"
	"github.com/echomq/kit/reference/bus"
	"github.com/echomq/kit/reference/keys"
)

// minterKeyMutants write the minter's lease key outside the grammar, and the slot op hashes with
// another CRC: each breaks one sentence of the keyspace's table (§2.2, §2.3).
var minterKeyMutants = []Spec{
	{Name: "minter-key-padded", Contract: "C02", Rule: "wire-keys-parse", Defect: "the minter leases {emq}:minter:<w> with two leading zeros on w ({emq}:minter:007), not in canonical decimal",
		Go: minterKey(func(w string) string { return "{emq}:minter:00" + w })},
	{Name: "minter-key-untagged", Contract: "C02", Rule: "wire-keys-parse", Defect: "the minter leases emq:minter:<w>, without the deployment keys' tag {emq}",
		Go: minterKey(func(w string) string { return "emq:minter:" + w })},
	{Name: "slot-crc-ccitt", Contract: "C02", Rule: "grammar", Defect: "the port's slot function is CRC16/CCITT-FALSE (init 0xFFFF; 123456789 → 10673), not the cluster's CRC16/XMODEM (12739)",
		Go: front(func(d drivers.Driver) drivers.Driver { return ccittSlotFront{d} })},
}

// minterKey rewrites the lease key {emq}:minter:<w> of every loose command (the minter's; no
// script touches it) to key(w), the same key for the same w, so the lease still works.
func minterKey(key func(w string) string) func(*bus.Options) Wrap {
	return seams(func(s *bus.Seams) {
		s.Hook = chain(s.Hook, func(args []any) []any {
			if len(args) < 2 || strings.HasPrefix(strings.ToUpper(text(args[0])), "EVAL") {
				return args
			}
			var out []any
			for i, a := range args {
				if w, ok := strings.CutPrefix(text(a), "{emq}:minter:"); ok && i > 0 {
					if out == nil {
						out = append([]any(nil), args...)
					}
					out[i] = key(w)
				}
			}
			if out == nil {
				return args
			}
			return out
		})
	})
}

// ccittSlotFront hashes the key's tag with CRC16/CCITT-FALSE.
type ccittSlotFront struct{ drivers.Driver }

func (f ccittSlotFront) Slot(_ context.Context, a protocol.SlotArgs) (protocol.SlotResult, error) {
	crc := uint16(0xFFFF)
	for _, b := range []byte(keys.HashTag(a.Key)) {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return protocol.SlotResult{Slot: int(crc % 16384)}, nil
}

// handshakeMutants get the handshake's first command wrong, and the brand of a minted id.
var handshakeMutants = []Spec{
	{Name: "hello-bare", Contract: "C01", Rule: "wire-fence-first", Defect: "every connection opens with a bare HELLO (the server's default protocol, RESP2 here) instead of HELLO 2",
		Go: seams(func(s *bus.Seams) {
			s.Hook = chain(s.Hook, func(args []any) []any {
				if len(args) == 2 && strings.EqualFold(text(args[0]), "HELLO") && text(args[1]) == "2" {
					return []any{args[0]}
				}
				return args
			})
		})},
	{Name: "mint-brand-joc", Contract: "C02", Rule: "id-format", Defect: "the mint op issues its ids under the brand JOC, not JOB",
		Go: front(func(d drivers.Driver) drivers.Driver { return brandFront{d} })},
}

// brandFront answers mint with each id under the brand JOC.
type brandFront struct{ drivers.Driver }

func (f brandFront) Mint(ctx context.Context, a protocol.MintArgs) (protocol.MintResult, error) {
	r, err := f.Driver.Mint(ctx, a)
	for _, ids := range r.IDs {
		for i, id := range ids {
			if strings.HasPrefix(id, "JOB") {
				ids[i] = "JOC" + id[3:]
			}
		}
	}
	return r, err
}
