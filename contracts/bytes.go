package contracts

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/echomq/kit/contracts/rules"
	"github.com/echomq/kit/protocol"
)

// oddPayloads are byte strings a port must carry unchanged: NUL, the high half, invalid UTF-8,
// nothing at all, and 64 KiB of every byte value.
func oddPayloads() []string {
	var high strings.Builder
	for b := 0x80; b <= 0xff; b++ {
		high.WriteByte(byte(b))
	}
	var big strings.Builder
	for i := 0; i < 64<<10; i++ {
		big.WriteByte(byte(i*7 + i>>8))
	}
	return []string{
		"\x00", "a\x00b\x00", high.String(), "\xc3\x28 \xff\xfe \xed\xa0\x80 \xf0\x28\x8c", "",
		"trailing space and newline \r\n", big.String(),
	}
}

// short names a byte string in a failure message without printing 64 KiB.
func short(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q… (%d bytes)", s[:40], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// claimedBytes checks a claim reply's payload against want, byte for byte.
func (t *T) claimedBytes(c *protocol.ClaimResult, id, want string, rule rules.Rule) {
	t.check(c != nil, rule, "a claim of "+id, "an empty reply")
	got, err := base64.StdEncoding.DecodeString(c.PayloadB64)
	t.check(c.ID == id && err == nil && string(got) == want, rule,
		fmt.Sprintf("%s with payload %s", id, short(want)),
		"%s with payload %s (payload_b64 %s, %v)", c.ID, short(string(got)), short(c.PayloadB64), err)
}

// checkpointBytes checks a redelivery's checkpoint_b64 against want, byte for byte.
func (t *T) checkpointBytes(c *protocol.ClaimResult, want string) {
	t.check(c.CheckpointB64 != nil, rules.ClaimCheckpointBytes, "checkpoint_b64 "+short(want)+" on the redelivery", "null")
	got, err := base64.StdEncoding.DecodeString(*c.CheckpointB64)
	t.check(err == nil && string(got) == want, rules.ClaimCheckpointBytes,
		"checkpoint_b64 "+short(want)+" on the redelivery", "%s (%v)", short(string(got)), err)
}
