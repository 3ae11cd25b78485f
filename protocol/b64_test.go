package protocol

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"testing"
)

// TestIsB64IsThePattern holds the scan to the schema's pattern over the edges and over random
// strings of the alphabet, padding and a few strangers.
func TestIsB64IsThePattern(t *testing.T) {
	re := regexp.MustCompile(B64Pattern)
	cases := []string{"", "=", "==", "===", "====", "QQ==", "QUI=", "QUJD", "QQ=", "QQ", "Q===", "QU=I", "QQ==QQ==", "a-b_", "QQ==\n", "QUJD\nQUJD", "QUJD====", "Q\x00JD"}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ABCxyz019+/=-_ \n"
	for range 20000 {
		b := make([]byte, r.IntN(13))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if IsB64(c) != re.MatchString(c) {
			t.Errorf("IsB64(%q) = %v, the pattern says %v", c, IsB64(c), re.MatchString(c))
		}
	}
}

// TestSchemaB64IsThePattern: the published schema's $defs/b64 is B64Pattern, so the kit's
// validator's fast path for it (drivers/subprocess) decides the schema's own pattern.
func TestSchemaB64IsThePattern(t *testing.T) {
	var doc struct {
		Defs struct {
			B64 struct {
				Pattern string `json:"pattern"`
			} `json:"b64"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Defs.B64.Pattern != B64Pattern {
		t.Errorf("the schema's $defs/b64 pattern is %q, B64Pattern %q", doc.Defs.B64.Pattern, B64Pattern)
	}
}
