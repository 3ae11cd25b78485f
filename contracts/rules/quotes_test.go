package rules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/echomq/kit/contracts/statements"
)

// unquotedRules are the rules whose Quote quotes no document: plain descriptions of what the
// harness itself defines. Every other rule quotes the words of the place it cites.
var unquotedRules = map[string]string{}

// TestRuleQuotesAreInTheDocuments: every rule's Quote quotes the document it cites. A failure
// prints `RULE: canon §4.2 retry: "…"`, and a reader must find those words where the line says
// they are written. Each fragment between double quotes ("…" or “…”) is split at its ellipses;
// every piece of two words or more must appear, once markdown, statement tags, case, spacing
// and typographic quotes and dashes are set aside, in a place the quote cites before the
// fragment: canon §N (that section of CANON.md, its subsections included), A<n> (that row of
// PROTOCOL.md's Part A), Part B, PROTOCOL.md (the whole file), C<nn> (the contract table of canon
// §7), lua/README.md, or a script (lua <name>, <name>.lua: its header).
func TestRuleQuotesAreInTheDocuments(t *testing.T) {
	docs := loadQuoteDocs(t)
	rules := allRules(t)
	if len(rules) < 100 {
		t.Fatalf("found only %d rules: the rule lists are not all read", len(rules))
	}
	bad := 0
	for _, r := range rules {
		why, unquoted := unquotedRules[r.ID]
		switch {
		case len(quoteFragments(r.Quote)) == 0 && unquoted:
			if strings.TrimSpace(why) == "" {
				t.Errorf("rule %s is listed as quoting nothing without a reason", r.ID)
			}
			continue
		case unquoted:
			t.Errorf("rule %s is listed as quoting nothing, but it quotes: %s", r.ID, r.Quote)
		}
		for _, m := range docs.misquotes(t, r) {
			bad++
			t.Errorf("rule %s: %s\n\tquote: %s", r.ID, m, r.Quote)
		}
	}
	t.Logf("%d rules, %d misquoted pieces", len(rules), bad)
}

// TestRuleQuoteCheck: the check itself finds a misquote, reads citations as written, and sets
// aside only what it says it does.
func TestRuleQuoteCheck(t *testing.T) {
	docs := loadQuoteDocs(t)
	for _, c := range []struct {
		quote string
		ok    bool
	}{
		{`canon §4.2 retry: "fenced; if attempts ≥ max_attempts exactly as fail (A8); otherwise back to pending"`, true},
		{`canon §4 retry: "fenced; attempts ≥ max_attempts → as fail; …"`, false}, // the wording before CANON.md's rewrite
		{`canon §4.2 retry: "the error kept as the last error"; "last error kept"`, false},
		{`canon §4.4: "the error kept as the last error"`, false},            // in §4.2, not §4.4
		{`canon §4: "the error kept as the last error"`, true},               // §4.2 is part of §4
		{`canon §4.2 enqueue: "(idempotent by id). Otherwise writes"`, true}, // a tag sits between
		{`contracts/PROTOCOL.md A3: "The checkpoint … is removed by complete and purge"`, true},
		{`contracts/PROTOCOL.md A4: "The checkpoint … is removed by complete and purge"`, false},
		{`canon §7: "C14 | park" — A14: "a lane already in the ring keeps its place"`, true},
		{`canon §5.1 / A12: "a server that rejects HELLO or answers anything else"`, true},
		{`A12 — canon §5.1: "a server that rejects HELLO or answers anything else"`, false}, // A12's words, not §5.1's
		{`C13: "a paused lane keeps its backlog"`, true},
		{`lua reap: "A bounded scan of at most limit ids"`, true},
		{`lua promote: "A bounded scan of at most limit ids"`, false},
		{`contracts/PROTOCOL.md Part B: “enqueue with "id": "" or "lane": "" is EMQKEY”`, true},
		{`contracts/PROTOCOL.md Part B: “enqueue with "id": "" is EMQKEY”`, false},
		{`"the error kept as the last error"`, false}, // cites nothing
		{`canon §4.2: "he error kept"`, false},        // at word boundaries only
	} {
		if got := docs.misquotes(t, Rule{"probe", c.quote}); (len(got) == 0) != c.ok {
			t.Errorf("%s: misquotes %q, want ok=%v", c.quote, got, c.ok)
		}
	}
}

// misquotes are the pieces of a rule's quote that are not where the quote says they are.
func (d *quoteDocs) misquotes(t *testing.T, r Rule) []string {
	t.Helper()
	frags := quoteFragments(r.Quote)
	if len(frags) == 0 {
		return []string{"quotes nothing (no text between double quotes)"}
	}
	var bad []string
	var cited []place
	for _, f := range frags {
		if ps := citations(f.before); len(ps) > 0 {
			cited = ps
		}
		if len(cited) == 0 {
			bad = append(bad, fmt.Sprintf("the fragment %q cites no document before it", f.text))
			continue
		}
		for _, piece := range pieces(f.text) {
			if len(strings.Fields(piece)) < 2 {
				continue // a lone word is no quotation to check
			}
			if !slices.ContainsFunc(cited, func(p place) bool { return containsWords(d.text(t, p), piece) }) {
				bad = append(bad, fmt.Sprintf("%q is not in %s", piece, placeNames(cited)))
			}
		}
	}
	return bad
}

// allRules is every rule the kit has: the lists the contracts evaluate (the wire law's rules
// among them) and any Rule{…} literal declared in this package's sources or in the contracts'
// (which must be in one of those lists).
func allRules(t *testing.T) []Rule {
	t.Helper()
	listed := slices.Concat(All(), Cluster(), Wire(), Session())
	byID := map[string]Rule{}
	for _, r := range listed {
		if o, ok := byID[r.ID]; ok && o.Quote != r.Quote {
			t.Errorf("rule id %s has two quotes: %s | %s", r.ID, o.Quote, r.Quote)
		}
		byID[r.ID] = r
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	clauses, err := filepath.Glob("../*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, clauses...)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if !isRuleType(lit.Type) || len(lit.Elts) != 2 {
				return true
			}
			b, ok := lit.Elts[0].(*ast.BasicLit)
			if !ok || b.Kind != token.STRING {
				return true
			}
			if id, err := strconv.Unquote(b.Value); err == nil {
				if _, known := byID[id]; !known {
					t.Errorf("%s: rule %s is declared but in none of the rule lists", fset.Position(lit.Pos()), id)
				}
			}
			return true
		})
	}
	rs := make([]Rule, 0, len(byID))
	for _, r := range byID {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b Rule) int { return strings.Compare(a.ID, b.ID) })
	return rs
}

// isRuleType tells the type of a Rule literal: Rule here, rules.Rule in the contracts.
func isRuleType(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "Rule"
	case *ast.SelectorExpr:
		pkg, ok := e.X.(*ast.Ident)
		return ok && pkg.Name == "rules" && e.Sel.Name == "Rule"
	}
	return false
}

// fragment is a quoted fragment of a Quote and the unquoted text between it and the fragment
// before (where a new citation is written).
type fragment struct{ before, text string }

// quoteFragments are the quoted fragments of a quote: text between “ and ” (which may hold
// straight quotes of the document's own), else between two straight double quotes.
func quoteFragments(q string) []fragment {
	var out []fragment
	last := 0
	for i := 0; i < len(q); {
		var open, close string
		switch {
		case strings.HasPrefix(q[i:], "“"):
			open, close = "“", "”"
		case q[i] == '"':
			open, close = `"`, `"`
		default:
			_, w := utf8.DecodeRuneInString(q[i:])
			i += w
			continue
		}
		j := strings.Index(q[i+len(open):], close)
		if j < 0 {
			out = append(out, fragment{q[last:i], q[i+len(open):]}) // unbalanced: the rest, so it fails visibly
			return out
		}
		text := q[i+len(open) : i+len(open)+j]
		out = append(out, fragment{q[last:i], text})
		i += len(open) + j + len(close)
		last = i
	}
	return out
}

// pieces splits a fragment at its ellipses.
func pieces(f string) []string {
	f = strings.ReplaceAll(f, "...", "…")
	var out []string
	for _, p := range strings.Split(f, "…") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// place is where a quote says a fragment is written.
type place struct {
	doc     string // "canon", "protocol", "partA", "partB", "lua"
	section string // canon: "4.2"; partA: "7"; lua: a file name
}

func (p place) String() string {
	switch p.doc {
	case "canon":
		return "contracts/CANON.md §" + p.section
	case "protocol":
		return "contracts/PROTOCOL.md"
	case "partA":
		return "contracts/PROTOCOL.md A" + p.section
	case "partB":
		return "contracts/PROTOCOL.md Part B"
	}
	return "lua/" + p.section
}

func placeNames(ps []place) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, " or ")
}

var citation = regexp.MustCompile(`(canon\s+)?§(\d+(?:\.\d+)*)|\bA(\d+)\b|\bPart B\b|(?:contracts/)?PROTOCOL\.md|\blua/README(?:\.md)?|\blua\s+([a-z_]+)\b|\b([a-z_]+)\.lua\b|\bC(\d\d)\b`)

// citations are the places the unquoted text before a fragment cites: those of its last clause
// (after a ";" or a " — ") that cites any, or none when it cites nothing (the fragment then
// continues the places of the one before).
func citations(before string) []place {
	segs := regexp.MustCompile(`;| — `).Split(before, -1)
	for i := len(segs) - 1; i >= 0; i-- {
		var ps []place
		whole := false
		for _, m := range citation.FindAllStringSubmatch(segs[i], -1) {
			switch {
			case m[2] != "":
				ps = append(ps, place{"canon", m[2]})
			case m[3] != "":
				ps = append(ps, place{"partA", m[3]})
			case m[0] == "Part B":
				ps = append(ps, place{"partB", ""})
			case strings.HasSuffix(m[0], "PROTOCOL.md"):
				whole = true
			case strings.HasPrefix(m[0], "lua/README"):
				ps = append(ps, place{"lua", "README.md"})
			case m[4] != "":
				ps = append(ps, place{"lua", m[4] + ".lua"})
			case m[5] != "":
				ps = append(ps, place{"lua", m[5] + ".lua"})
			case m[6] != "":
				ps = append(ps, place{"canon", "7"})
			}
		}
		// PROTOCOL.md names the whole file only when no part or item of it is named beside it.
		if whole && !slices.ContainsFunc(ps, func(p place) bool { return p.doc == "partA" || p.doc == "partB" }) {
			ps = append(ps, place{"protocol", ""})
		}
		if len(ps) > 0 {
			return ps
		}
	}
	return nil
}

// quoteDocs are the documents rules cite, read once.
type quoteDocs struct {
	canon, protocol string
	cache           map[place]string
}

func loadQuoteDocs(t *testing.T) *quoteDocs {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return &quoteDocs{canon: read("../CANON.md"), protocol: read("../PROTOCOL.md"), cache: map[place]string{}}
}

var canonHeading = regexp.MustCompile(`(?m)^#+ §(\d+(?:\.\d+)*) `)

// text is the normalised text of a place; a place that does not exist fails t.
func (d *quoteDocs) text(t *testing.T, p place) string {
	t.Helper()
	if s, ok := d.cache[p]; ok {
		return s
	}
	var s string
	switch p.doc {
	case "canon":
		// The section and its subsections: from its heading to the next heading that is not one
		// of its subsections.
		locs := canonHeading.FindAllStringSubmatchIndex(d.canon, -1)
		for i, l := range locs {
			num := d.canon[l[2]:l[3]]
			if num != p.section && !strings.HasPrefix(num, p.section+".") {
				continue
			}
			end := len(d.canon)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			s += d.canon[l[0]:end] + "\n"
		}
	case "protocol":
		s = d.protocol
	case "partA":
		row := regexp.MustCompile(`(?m)^\| A` + p.section + ` \|(.*)$`).FindStringSubmatch(d.protocol)
		if row != nil {
			s = row[1]
		}
	case "partB":
		_, rest, _ := strings.Cut(d.protocol, "\n## Part B")
		s, _, _ = strings.Cut(rest, "\n## ")
	case "lua":
		b, err := os.ReadFile(filepath.Join("..", "..", "lua", p.section))
		switch {
		case err != nil:
		case p.section == "README.md":
			s = string(b)
		default:
			// A script's header: its leading comment lines.
			for _, line := range strings.Split(string(b), "\n") {
				if !strings.HasPrefix(line, "--") {
					break
				}
				s += strings.TrimPrefix(line, "--") + "\n"
			}
		}
	}
	if s == "" {
		t.Errorf("a rule cites %s, which does not exist", p)
	}
	s = normalizeQuote(s)
	d.cache[p] = s
	return s
}

var quoteFolds = strings.NewReplacer("`", "", "*", "", "“", `"`, "”", `"`, "‘", "'", "’", "'",
	"—", "-", "–", "-", "−", "-", "\u00a0", " ")

// tagBefore is a statement tag and the space before it (a tag sits after its sentence's stop).
var tagBefore = regexp.MustCompile(`\s*` + statements.Tag.String())

// normalizeQuote sets aside what a reader does not see or does not read as a difference:
// markdown backticks and emphasis, statement tags, spacing, typographic quotes and dashes, case.
func normalizeQuote(s string) string {
	s = tagBefore.ReplaceAllString(s, "")
	s = quoteFolds.Replace(s)
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// containsWords tells whether piece occurs in text (normalised) at word boundaries.
func containsWords(text, piece string) bool {
	piece = normalizeQuote(piece)
	for off := 0; ; {
		i := strings.Index(text[off:], piece)
		if i < 0 {
			return false
		}
		i += off
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[i+len(piece):])
		first, _ := utf8.DecodeRuneInString(piece)
		last, _ := utf8.DecodeLastRuneInString(piece)
		if (!wordRune(first) || !wordRune(before)) && (!wordRune(last) || !wordRune(after)) {
			return true
		}
		off = i + 1
	}
}

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
