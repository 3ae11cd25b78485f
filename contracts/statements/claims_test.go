package statements_test

import (
	"strings"
	"testing"

	"github.com/echomq/kit/contracts/statements"
)

// part is a small Part B: the op table, the fields table and the section's general rules, in the
// documents' own layout. {ttl} is the minter_ttl_ms row's domain, {note} the hello row's note,
// {scope} the section's closing sentence, {limit} morgue's default in its op row.
const part = "## Part B\n\n" +
	"| op | request fields | result | notes |\n|---|---|---|---|\n" +
	"| `hello` | `valkey` (host:port), optional `minter_ttl_ms` | `name` [B-27] | connect. [B-28] `minter_ttl_ms` (a test aid, capability `minter_ttl`): lease for that many ms; {note} [B-32] [B-33] |\n" +
	"| `morgue` | optional `limit` (default {limit}) [B-65] | `jobs` [B-66] | reads only. [B-67] |\n" +
	"| `clock` | optional `set_ms` (Unix ms), `scale` (default 1) [B-78] | `{}` | a test aid, only for a port declaring capability `clock`. [B-79] Other ports answer `UNSUPPORTED`. [B-81] |\n\n" +
	"### Fields and their domains\n\n" +
	"- A field that is present is held to its domain whatever its value. [B-90]\n" +
	"{scope}\n\n" +
	"| op | field | domain | when absent |\n|---|---|---|---|\n" +
	"| `hello` | `minter_ttl_ms` | {ttl} [B-104] | the port's own lease time [B-105] |\n" +
	"| `morgue` | `limit` | integer 1..10000 [B-194] | default `100` [B-195] |\n" +
	"| `clock` | `scale` | integer 1..1000000 [B-236] | default `1` [B-237] |\n"

func doc(r map[string]string) []byte {
	s := part
	for k, v := range r {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return []byte(s)
}

func found(src []byte) []string {
	var out []string
	for _, c := range statements.Contradictions(statements.Claims("PROTOCOL.md", src), func(string) []string { return nil }) {
		out = append(out, c.String())
	}
	return out
}

// TestContradictionsFound: the reader finds the contradictions of issue 30 in the text as it was
// (a port without the aid ignores minter_ttl_ms, the table and B-90 hold it to 3..1e9; clock is
// UNSUPPORTED for other ports, B-90 holds its fields to their domains), a default the op row
// and the table give differently, and nothing once the text says whom each rule binds.
func TestContradictionsFound(t *testing.T) {
	then := doc(map[string]string{"note": "a port without the capability ignores it.", "ttl": "integer 3..1e9", "scope": "", "limit": "100"})
	got := strings.Join(found(then), "\n")
	for _, want := range []string{
		"hello.minter_ttl_ms: one says a port without capability minter_ttl ignores the field whatever its value, the other holds it to a domain (any port)",
		"[B-32 B-33]", "[B-104]", "[B-90]",
		"op clock: one says a port without capability clock answers the op UNSUPPORTED",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the contradictions of the text as it was lack %q:\n%s", want, got)
		}
	}
	now := doc(map[string]string{
		"note":  "a port without the capability ignores it, whatever its value.",
		"ttl":   "integer 3..1e9, for a port declaring `minter_ttl` (others ignore the field, whatever its value)",
		"scope": "- Every rule of this section binds the ops and the fields a port offers. [B-279]",
		"limit": "100",
	})
	if got := found(now); len(got) > 0 {
		t.Errorf("the text as it is now still contradicts itself:\n%s", strings.Join(got, "\n"))
	}
	other := doc(map[string]string{"note": "", "ttl": "integer 3..1e9, for a port declaring `minter_ttl`",
		"scope": "- Every rule of this section binds the ops and the fields a port offers. [B-279]", "limit": "1000"})
	if got := strings.Join(found(other), "\n"); !strings.Contains(got, "morgue.limit: one says 1000, the other 100") {
		t.Errorf("a default given twice differently is not found:\n%s", got)
	}
}

// TestQuantitiesCompared: a quantity of the canon two documents state differently is found.
func TestQuantitiesCompared(t *testing.T) {
	canon := []byte("## §3\n\n- 10 bits of minter **worker id** (0–1023). [§3.1-4]\n- Renewal: the minter renews every `ttl/3`. [§3.4-6]\n")
	partA := []byte("| # | question | answer |\n|---|---|---|\n| A9 | Minter lease | worker ids 0–1024, renewed at ttl/2. [A9-1] |\n")
	claims := append(statements.Claims("CANON.md", canon), statements.Claims("PROTOCOL.md", partA)...)
	var got []string
	for _, c := range statements.Contradictions(claims, nil) {
		got = append(got, c.Why)
	}
	for _, want := range []string{"worker-id: one says 0..1023, the other 0..1024", "renew-fraction: one says 3, the other 2"} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("lacks %q: %v", want, got)
		}
	}
}
