package statements

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

// A Claim is what one statement says of one subject, in a form two statements can be compared
// in: the documents contradict themselves when two claims on the same subject, for ports that can
// both be the same port, cannot both hold (Contradictions).
//
// Subjects are an op's field ("hello.minter_ttl_ms", "enqueue_batch.jobs[].delay_ms"), a whole
// op ("op clock"), a field in every op that passes it to a script ("*.lease_ms"), every field of
// every op ("*"), or a named quantity of the canon ("worker-id", "min-version", …).
type Claim struct {
	Subject string
	Kind    ClaimKind
	Value   string // normalised: "3..1000000000", "1000", "<="
	// Scope is the ports the claim binds: "" every port; "cap:X" a port declaring capability X;
	// "!cap:X" one that does not; "cap:*" a port declaring whatever the op or field needs.
	Scope string
	ID    string // the statement's id
	Doc   string
	Text  string // the sentence, cell or row the claim was read from
}

// ClaimKind is what a claim says of its subject.
type ClaimKind string

const (
	// KindRange: an integer (or a list's length) within lo..hi; Value "lo..hi".
	KindRange ClaimKind = "range"
	// KindMin: at least Value (a bound written alone, "n ≥ 1 … n = 0 removes").
	KindMin ClaimKind = "min"
	// KindRequired: absent is refused; Value "when type=job" for a conditional one.
	KindRequired ClaimKind = "required"
	// KindDefault: absent means Value.
	KindDefault ClaimKind = "default"
	// KindOptional: absent has a meaning of its own (Value says it).
	KindOptional ClaimKind = "optional"
	// KindIgnored: a present field changes nothing, whatever its value.
	KindIgnored ClaimKind = "ignored"
	// KindUnsupported: the op is answered UNSUPPORTED, whatever its fields.
	KindUnsupported ClaimKind = "unsupported"
	// KindStrict: every present field is held to its domain, whatever its value.
	KindStrict ClaimKind = "strict"
	// KindEqual: a named quantity has this value (Value), whoever states it.
	KindEqual ClaimKind = "equal"
)

// Contradiction is two claims that cannot both hold.
type Contradiction struct {
	A, B Claim
	Why  string
}

func (c Contradiction) String() string {
	return c.Why + ":\n    [" + c.A.ID + "] " + c.A.Doc + ": " + clip(c.A.Text) + "\n    [" + c.B.ID + "] " + c.B.Doc + ": " + clip(c.B.Text)
}

func clip(s string) string {
	if r := []rune(s); len(r) > 220 {
		return string(r[:220]) + "…"
	}
	return s
}

// Claims reads what a markdown document's statements claim: its fields table and op table (a
// table headed "| op | field | domain | when absent |" or "| op | request fields | … |"), the
// ranges Part A's rows give fields, the rules a section states for every field, and the
// quantities of the canon written in its sentences. Only tagged text claims anything.
func Claims(doc string, src []byte) []Claim {
	var out []Claim
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var header []string
	inCode := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```"):
			inCode = !inCode
		case inCode:
		case !strings.HasPrefix(line, "|"):
			header = nil
		case strings.Trim(line, "|-: ") == "": // a table's separator row
		case header == nil:
			header = cells(line)
		default:
			out = append(out, rowClaims(doc, header, line)...)
		}
	}
	return append(out, sentenceClaims(doc, src, Units(doc, src))...)
}

// sentenceClaims reads the tagged sentences (not table rows) for general rules, scoped by their
// section, and every tagged unit for the canon's quantities.
func sentenceClaims(doc string, src []byte, units []Unit) []Claim {
	lines := strings.Split(string(src), "\n")
	sectionOf := func(line int) int { // the line of the heading above
		for i := line - 1; i > 0; i-- {
			if strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#") {
				return i
			}
		}
		return 0
	}
	scopes := map[int]string{}
	for _, u := range units {
		if len(u.Tags) > 0 && sectionScope.MatchString(u.Text) {
			scopes[sectionOf(u.Line)] = "cap:*"
		}
	}
	var out []Claim
	for _, u := range units {
		if len(u.Tags) == 0 {
			continue
		}
		id := u.Tags[0]
		if !strings.HasPrefix(u.Text, "|") && strict.MatchString(u.Text) {
			out = append(out, Claim{Subject: "*", Kind: KindStrict, Scope: scopes[sectionOf(u.Line)], ID: id, Doc: doc, Text: u.Text})
		}
		out = append(out, quantities(doc, id, u.Text)...)
	}
	return out
}

var (
	// strict is a rule that holds every present field to its domain, or every malformed request
	// to EMQARG, whatever else holds.
	strict = regexp.MustCompile(`(?i)(held to its domain whatever its value|is ` + "`?" + `EMQARG` + "`?" + ` whatever else)`)
	// sectionScope is a sentence that binds its section's rules to what the port offers.
	sectionScope = regexp.MustCompile(`(?i)every rule of this section (binds|is about|holds for) [^.]*\b(offers|declares)\b`)
)

// cells splits a table row into its cells, trimmed.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
	var out []string
	for _, c := range strings.Split(row, "|") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

// rowClaims reads one row of a table whose header it knows.
func rowClaims(doc string, header []string, row string) []Claim {
	cs := cells(row)
	switch {
	case len(header) == 4 && header[0] == "op" && header[1] == "field" && len(cs) == 4:
		return fieldRow(doc, cs)
	case len(header) == 4 && header[0] == "op" && header[1] == "request fields" && len(cs) == 4:
		return opRow(doc, cs)
	case len(header) >= 3 && header[0] == "#" && len(cs) >= 3:
		return partARow(doc, cs)
	}
	return nil
}

// tagsOf is the statement ids written in s.
func tagsOf(s string) []string {
	var out []string
	for _, m := range Tag.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func untag(s string) string { return strings.TrimSpace(Tag.ReplaceAllString(s, "")) }

// firstTag is the ids written in s, or the row's first when s has none.
func firstTag(s, row string) string {
	if t := tagsOf(s); len(t) > 0 {
		return strings.Join(t, " ")
	}
	if t := tagsOf(row); len(t) > 0 {
		return t[0]
	}
	return ""
}

var (
	intRange  = regexp.MustCompile(`(?:integer|list of) (\d[\de]*)\.\.(\d[\de]*)`)
	declaring = regexp.MustCompile("for a port declaring `([a-z_]+)`")
	defaultIs = regexp.MustCompile("default `?([^`)\\s]+)`?")
	backtick  = regexp.MustCompile("`([^`]+)`")
)

// fieldRow reads a row of the fields table: | op | field | domain | when absent |.
func fieldRow(doc string, cs []string) []Claim {
	op, field := strings.Trim(cs[0], "`"), strings.Trim(cs[1], "`")
	subject := op + "." + field
	var out []Claim
	scope := ""
	if m := declaring.FindStringSubmatch(cs[2]); m != nil {
		scope = "cap:" + m[1]
	}
	if m := intRange.FindStringSubmatch(cs[2]); m != nil {
		out = append(out, Claim{Subject: subject, Kind: KindRange, Value: numRange(m[1], m[2]), Scope: scope, ID: firstTag(cs[2], ""), Doc: doc, Text: untag(strings.Join(cs, " | "))})
	}
	absent := untag(cs[3])
	c := Claim{Subject: subject, Scope: scope, ID: firstTag(cs[3], cs[2]), Doc: doc, Text: untag(strings.Join(cs, " | "))}
	switch {
	case absent == "EMQARG":
		c.Kind = KindRequired
	case strings.HasPrefix(absent, "EMQARG when"):
		c.Kind, c.Value = KindRequired, "when"
	case defaultIs.MatchString(absent):
		c.Kind, c.Value = KindDefault, num(defaultIs.FindStringSubmatch(absent)[1])
	default:
		c.Kind, c.Value = KindOptional, absent
	}
	return append(out, c)
}

// opRow reads a row of the op table: | op | request fields | result | notes |. The request
// fields say which are optional (each one marked "optional", or given a default), their
// defaults and ranges; the notes say which fields a port ignores and when the op is answered
// UNSUPPORTED.
func opRow(doc string, cs []string) []Claim {
	var ops []string
	for _, m := range backtick.FindAllStringSubmatch(cs[0], -1) {
		ops = append(ops, m[1])
	}
	text := untag(strings.Join(cs, " | "))
	var out []Claim
	for _, item := range topLevel(cs[1]) {
		out = append(out, requestItem(doc, ops, item, firstTag(item, cs[1]), text)...)
	}
	capability := ""
	if m := regexp.MustCompile("capability `([a-z_]+)`").FindStringSubmatch(cs[3]); m != nil {
		capability = m[1]
	}
	for _, s := range splitSentences(cs[3]) {
		id := firstTag(s, cs[3])
		plain := untag(s)
		if m := regexp.MustCompile("capability `([a-z_]+)`").FindStringSubmatch(s); m != nil {
			capability = m[1]
		}
		for _, op := range ops {
			switch {
			case regexp.MustCompile(`(?i)\bignores it\b`).MatchString(plain):
				if f := firstField(plain); f != "" {
					out = append(out, Claim{Subject: op + "." + f, Kind: KindIgnored, Scope: "!cap:" + capability, ID: id, Doc: doc, Text: plain})
				}
			case regexp.MustCompile("(?i)^other ports answer `?UNSUPPORTED").MatchString(plain):
				out = append(out, Claim{Subject: "op " + op, Kind: KindUnsupported, Scope: "!cap:" + capability, ID: id, Doc: doc, Text: plain})
			}
		}
	}
	return out
}

// firstField is the first backticked name in s that reads as a field (lower case, underscores).
func firstField(s string) string {
	for _, m := range backtick.FindAllStringSubmatch(s, -1) {
		if regexp.MustCompile(`^[a-z][a-z_]*$`).MatchString(m[1]) {
			return m[1]
		}
	}
	return ""
}

// requestItem reads one item of an op row's request fields: "optional `limit` (default 1000)",
// "`n` (required, may be 0)", "`n` (1..1000)", "`id` (for `job`)", "`jobs`: 1..1000 objects
// `{payload_b64, id (optional), delay_ms (default 0)}`". A field neither marked optional nor
// given a default nor a condition is required.
func requestItem(doc string, ops []string, item, id, row string) []Claim {
	m := regexp.MustCompile("^(optional )?`([a-z_]+)`(.*)$").FindStringSubmatch(untag(item))
	if m == nil {
		return nil
	}
	field, rest := m[2], m[3]
	var out []Claim
	for _, op := range ops {
		subject := op + "." + field
		c := Claim{Subject: subject, ID: id, Doc: doc, Text: row}
		switch {
		case defaultIs.MatchString(rest) && !strings.Contains(rest, "{"):
			c.Kind, c.Value = KindDefault, num(defaultIs.FindStringSubmatch(rest)[1])
		case m[1] != "":
			c.Kind = KindOptional
		case regexp.MustCompile("^ \\(for `").MatchString(rest):
			c.Kind, c.Value = KindRequired, "when"
		default:
			c.Kind = KindRequired
		}
		out = append(out, c)
		if r := regexp.MustCompile(`(\d[\de]*)\.\.(\d[\de]*)`).FindStringSubmatch(rest); r != nil {
			out = append(out, Claim{Subject: subject, Kind: KindRange, Value: numRange(r[1], r[2]), ID: id, Doc: doc, Text: row})
		}
		if i := strings.Index(rest, "{"); i >= 0 {
			out = append(out, listItems(doc, subject, strings.Trim(rest[i:], "{}` "), id, row)...)
		}
	}
	return out
}

// listItems reads a list's item fields: "payload_b64, id (optional), delay_ms (default 0)".
func listItems(doc, list, items, id, row string) []Claim {
	var out []Claim
	for _, it := range topLevel(items) {
		name, rest, _ := strings.Cut(strings.TrimSpace(it), " ")
		c := Claim{Subject: list + "[]." + name, ID: id, Doc: doc, Text: row}
		switch {
		case defaultIs.MatchString(rest):
			c.Kind, c.Value = KindDefault, num(defaultIs.FindStringSubmatch(rest)[1])
		case strings.Contains(rest, "optional"):
			c.Kind = KindOptional
		default:
			c.Kind = KindRequired
		}
		out = append(out, c)
	}
	return out
}

// partARow reads the ranges a row of Part A gives fields: "`lease_ms` 1..1e14", "tokens
// 1..1e14", and a bound written alone ("`lane_ceiling n`: n ≥ 1 …; n = 0 removes").
func partARow(doc string, cs []string) []Claim {
	answer := cs[2]
	var out []Claim
	for _, s := range splitSentences(answer) {
		id, plain := firstTag(s, answer), untag(s)
		for _, m := range regexp.MustCompile("(?:`([a-z_]+)`|(tokens)) (\\d[\\de]*)\\.\\.(\\d[\\de]*)").FindAllStringSubmatch(plain, -1) {
			field := m[1]
			if m[2] != "" {
				field = "token"
			}
			out = append(out, Claim{Subject: "*." + field, Kind: KindRange, Value: numRange(m[3], m[4]), ID: id, Doc: doc, Text: plain})
		}
		out = append(out, ceilingBound(doc, id, plain)...)
	}
	return out
}

// ceilingBound reads "lane_ceiling n … n = 0 removes the ceiling" as lane_ceiling's ceiling ≥ 0.
func ceilingBound(doc, id, s string) []Claim {
	if strings.Contains(s, "lane_ceiling") && regexp.MustCompile(`n = 0 removes`).MatchString(s) {
		return []Claim{{Subject: "lane_ceiling.ceiling", Kind: KindMin, Value: "0", ID: id, Doc: doc, Text: s}}
	}
	return nil
}

// HeaderClaims reads a script header's argument ranges as claims on the op that passes them
// (op; a batch script's per-job arguments are the op's "jobs[]." fields when list is true).
func HeaderClaims(h Header, op string, fields map[string]bool) []Claim {
	var out []Claim
	for i, a := range h.Args {
		m := regexp.MustCompile(`^([a-z_]+)\b.*?integer (\d[\de]*)\.\.(\d[\de]*)`).FindStringSubmatch(a)
		if m == nil {
			continue
		}
		subject := op + "." + m[1]
		if !fields[subject] && fields[op+".jobs[]."+m[1]] {
			subject = op + ".jobs[]." + m[1]
		}
		out = append(out, Claim{Subject: subject, Kind: KindRange, Value: numRange(m[2], m[3]),
			ID: h.Script + ".lua:ARGV" + strconv.Itoa(i+1), Doc: "lua/" + h.Script + ".lua", Text: "ARGV[" + strconv.Itoa(i+1) + "] -> " + a})
	}
	return out
}

// topLevel splits a list at its commas outside parentheses, braces and backticks.
func topLevel(s string) []string {
	var out []string
	depth, tick, start := 0, false, 0
	for i, r := range s {
		switch {
		case r == '`':
			tick = !tick
		case tick:
		case r == '(' || r == '{':
			depth++
		case r == ')' || r == '}':
			depth--
		case r == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// splitSentences splits a cell's text into sentences, each with the tags written after it.
func splitSentences(s string) []string {
	var out []string
	for _, u := range sentences("", 0, s) {
		t := u.Text
		for _, tag := range u.Tags {
			t += " [" + tag + "]"
		}
		out = append(out, t)
	}
	return out
}

// num normalises a number as the documents write it ("1e14", "10000", "false") to decimal.
func num(s string) string {
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return s
}

func numRange(lo, hi string) string { return num(lo) + ".." + num(hi) }

// A quantity is a named fact of the canon several documents state: its recognisers read the
// value from a sentence's plain text (emphasis and code marks removed).
type quantity struct {
	subject string
	re      *regexp.Regexp
	value   func(m []string) string
}

var quantityList = []quantity{
	{"worker-id", regexp.MustCompile(`worker ids? (?:\(|outside |in )?(\d+)\s*[–-]\s*(\d+)`), func(m []string) string { return m[1] + ".." + m[2] }},
	{"sequence-max", regexp.MustCompile(`(?:sequence[^.;]*?\(0\s*[–-]\s*(\d+)\)|past (\d+)(?: ids in one millisecond| the minter waits))`), func(m []string) string { return m[1] + m[2] }},
	{"renew-fraction", regexp.MustCompile(`renew(?:ed|s)? (?:at|every) ttl\s*/\s*(\d+)`), func(m []string) string { return m[1] }},
	{"min-version", regexp.MustCompile(`(?:version ≥|version of at least|Valkey ≥) (\d+\.\d+\.\d+)`), func(m []string) string { return m[1] }},
	{"name-bytes", regexp.MustCompile(`(?:name is|names?) (\d+)\s*(?:to|[–-])\s*(\d+) bytes`), func(m []string) string { return m[1] + ".." + m[2] }},
	{"bundle-version", regexp.MustCompile(`bundle \(?(?:version )?echomq:(\d+\.\d+\.\d+)`), func(m []string) string { return m[1] }},
	// When a lease has passed: its deadline compared with the server's clock.
	{"lease-passed", regexp.MustCompile(`(?:deadline|score in active|lease)[^.;]*?(strictly greater than|≤|at or before|<|before) (?:the server's |server )?(?:TIME|now)`), func(m []string) string {
		if m[1] == "<" || m[1] == "before" {
			return "deadline < now"
		}
		return "deadline <= now" // passed at ≤; valid only while strictly greater
	}},
}

var marks = strings.NewReplacer("`", "", "**", "", "*", "")

// quantities reads the named quantities a statement states.
func quantities(doc, id, text string) []Claim {
	plain := marks.Replace(text)
	var out []Claim
	for _, q := range quantityList {
		for _, m := range q.re.FindAllStringSubmatch(plain, -1) {
			out = append(out, Claim{Subject: q.subject, Kind: KindEqual, Value: q.value(m), ID: id, Doc: doc, Text: text})
		}
	}
	return out
}

// overlap tells whether some port is bound by both scopes.
func overlap(a, b string) bool {
	if a == "" || b == "" || a == b {
		return true
	}
	neg := func(x, y string) bool { // x = "!cap:C", y = "cap:C" or "cap:*"
		return strings.HasPrefix(x, "!") && (y == x[1:] || y == "cap:*")
	}
	return !neg(a, b) && !neg(b, a)
}

// Contradictions compares every two claims on one subject. expand gives the concrete subjects a
// generic one ("*.lease_ms") stands for.
func Contradictions(claims []Claim, expand func(generic string) []string) []Contradiction {
	by := map[string][]Claim{}
	var order []string
	add := func(c Claim) {
		if _, ok := by[c.Subject]; !ok {
			order = append(order, c.Subject)
		}
		by[c.Subject] = append(by[c.Subject], c)
	}
	var everyField []Claim
	for _, c := range claims {
		switch {
		case c.Subject == "*":
			everyField = append(everyField, c)
		case strings.HasPrefix(c.Subject, "*."):
			for _, s := range expand(c.Subject) {
				c.Subject = s
				add(c)
			}
		default:
			add(c)
		}
	}
	var out []Contradiction
	for _, s := range order {
		cs := by[s]
		for i := range cs {
			for _, b := range everyField {
				if why := disagree(cs[i], b); why != "" {
					out = append(out, Contradiction{A: cs[i], B: b, Why: s + ": " + why})
				}
			}
			for j := i + 1; j < len(cs); j++ {
				if why := disagree(cs[i], cs[j]); why != "" {
					out = append(out, Contradiction{A: cs[i], B: cs[j], Why: s + ": " + why})
				}
			}
		}
	}
	return out
}

// disagree says why two claims on one subject cannot both hold ("" when they can).
func disagree(a, b Claim) string {
	if !overlap(a.Scope, b.Scope) {
		return ""
	}
	if a.Kind > b.Kind {
		a, b = b, a
	}
	kinds := string(a.Kind) + "/" + string(b.Kind)
	switch kinds {
	case "range/range", "default/default", "equal/equal":
		if a.Value != b.Value {
			return "one says " + a.Value + ", the other " + b.Value
		}
	case "min/range":
		if lo, _, _ := strings.Cut(b.Value, ".."); lo != a.Value {
			return "one says at least " + a.Value + ", the other " + b.Value
		}
	case "required/required":
		if a.Value != b.Value {
			return "one requires the field always, the other only " + a.Value + b.Value + " another field has a value"
		}
	case "default/required", "optional/required":
		if b.Value == "" {
			return "one gives an absent field a meaning (" + a.Value + "), the other refuses it absent"
		}
	case "ignored/range", "ignored/required", "ignored/strict":
		return "one says a port " + scopeText(a.Scope) + " ignores the field whatever its value, the other holds it to a domain " + scopeText(b.Scope)
	case "strict/unsupported":
		return "one says a port " + scopeText(b.Scope) + " answers the op UNSUPPORTED whatever its fields, the other holds every field to its domain " + scopeText(a.Scope)
	}
	return ""
}

func scopeText(scope string) string {
	switch {
	case scope == "":
		return "(any port)"
	case scope == "cap:*":
		return "(a port offering the op or aid)"
	case strings.HasPrefix(scope, "!cap:"):
		return "without capability " + strings.TrimPrefix(scope, "!cap:")
	}
	return "declaring capability " + strings.TrimPrefix(scope, "cap:")
}
