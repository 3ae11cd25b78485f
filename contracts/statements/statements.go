// Package statements reads the normative statements of the kit's documents: every sentence of
// contracts/CANON.md, contracts/PROTOCOL.md and lua/README.md that carries a statement id
// ("[§2.1-3]", "[A16-2]", "[B-14]", "[L-7]"), and the statements of the lua scripts' headers
// (their replies, their errors and the ranges of their arguments), whose ids are derived from
// the header's own structure because a script's bytes cannot change without changing the bundle.
// It also finds the sentences that read as normative but carry no id, so that a statement added
// to a document without one is noticed (TestTraceability).
package statements

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Statement is one normative statement and where it is written.
type Statement struct {
	ID   string // "§2.1-3", "A16-2", "B-14", "L-7", "claim.lua:reply"
	Doc  string // the document's path in the repository
	Line int
	Text string // the sentence or table row as written, its tags removed
}

// Unit is a sentence (or a table row) of a document.
type Unit struct {
	Doc  string
	Line int
	Text string
	Tags []string
}

// Tag is a statement id as the documents write it, in square brackets.
var Tag = regexp.MustCompile(`\[(§\d+(?:\.\d+)*-\d+|A\d+-\d+|B-\d+|L-\d+)\]`)

// normative is what makes a sentence a statement (the list): must, never, only, always,
// exactly, a default, a range, an error it names, a reply.
var normative = regexp.MustCompile(`(?i)\b(must|never|only|always|exactly|default|at most|at least)\b|EMQ(STALE|VERSION|SERVER|KIND|KEY|ARG)|\bUNSUPPORTED\b|\bINTERNAL\b|\d\s*(\.\.|–|\bto\b)\s*\d|\brepl(y|ies)\b`)

// Normative tells a sentence that reads as a statement.
func Normative(text string) bool { return normative.MatchString(text) }

// Units splits a markdown document into sentences and table rows, skipping headings, code
// blocks and table separators. A tag at the start of a sentence belongs to the one before it
// (tags are written after a sentence's full stop).
func Units(doc string, src []byte) []Unit {
	var units []Unit
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var para []string
	paraLine, n := 0, 0
	inCode, inTable := false, false
	flush := func() {
		if len(para) > 0 {
			units = append(units, sentences(doc, paraLine, strings.Join(para, " "))...)
		}
		para = nil
	}
	generated := false
	for sc.Scan() {
		n++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		// A table the kit writes from its own lists states nothing of its own.
		if strings.HasPrefix(trim, "<!-- not-checked:") {
			flush()
			generated = strings.HasSuffix(trim, ":begin -->")
			continue
		}
		if generated {
			continue
		}
		switch {
		case strings.HasPrefix(trim, "```"):
			flush()
			inCode = !inCode
			continue
		case inCode:
			continue
		case trim == "" || strings.HasPrefix(trim, "#"):
			flush()
			inTable = false
			continue
		case strings.HasPrefix(trim, "|"):
			flush()
			// A table's first row is its header; the separator row holds nothing.
			if inTable && strings.Trim(trim, "|-: ") != "" {
				units = append(units, unit(doc, n, trim))
			}
			inTable = true
			continue
		case strings.HasPrefix(trim, "- ") || strings.HasPrefix(trim, "* ") || listItem.MatchString(trim):
			flush()
		}
		if len(para) == 0 {
			paraLine = n
		}
		para = append(para, trim)
	}
	flush()
	return units
}

var listItem = regexp.MustCompile(`^\d+\. `)

func unit(doc string, line int, text string) Unit {
	u := Unit{Doc: doc, Line: line}
	// A tag inside a code span is an example of the syntax, not a statement's id.
	for _, m := range Tag.FindAllStringSubmatch(maskCode(text), -1) {
		u.Tags = append(u.Tags, m[1])
	}
	u.Text = strings.TrimSpace(Tag.ReplaceAllStringFunc(text, func(t string) string {
		if strings.Contains(maskCode(text), t) {
			return ""
		}
		return t
	}))
	return u
}

// sentenceEnd ends a sentence: a full stop, a question or exclamation mark (or a closing bracket
// or quote after one) followed by a space. Code spans are masked first, so `lua.Load` or `1.5`
// inside backticks never end one.
var sentenceEnd = regexp.MustCompile(`[.!?][)"”*_]*\s+`)

func sentences(doc string, line int, text string) []Unit {
	masked := maskCode(text)
	var out []Unit
	start := 0
	for _, loc := range sentenceEnd.FindAllStringIndex(masked, -1) {
		if abbreviation(masked[:loc[0]]) {
			continue
		}
		out = appendSentence(out, doc, line, text[start:loc[1]])
		start = loc[1]
	}
	if start < len(text) {
		out = appendSentence(out, doc, line, text[start:])
	}
	return out
}

// appendSentence adds s, first handing a tag that opens it to the sentence before.
func appendSentence(out []Unit, doc string, line int, s string) []Unit {
	s = strings.TrimSpace(s)
	for len(out) > 0 {
		loc := Tag.FindStringSubmatchIndex(s)
		if loc == nil || loc[0] != 0 {
			break
		}
		out[len(out)-1].Tags = append(out[len(out)-1].Tags, s[loc[2]:loc[3]])
		s = strings.TrimSpace(s[loc[1]:])
	}
	if s == "" {
		return out
	}
	return append(out, unit(doc, line, s))
}

// abbreviation tells a full stop that ends "e.g", "i.e", "cf", "vs" or an ellipsis rather than
// a sentence.
func abbreviation(before string) bool {
	for _, a := range []string{"e.g", "i.e", "cf", "vs", "etc", "…"} {
		if strings.HasSuffix(before, a) {
			return true
		}
	}
	return false
}

// maskCode replaces the inside of every code span with x's of the same length.
func maskCode(s string) string {
	b := []byte(s)
	in := false
	for i := range b {
		if b[i] == '`' {
			in = !in
			continue
		}
		if in {
			b[i] = 'x'
		}
	}
	return string(b)
}

// Of collects a document's statements (one per tag) and its untagged normative units.
func Of(doc string, src []byte) (stmts []Statement, untagged []Unit) {
	for _, u := range Units(doc, src) {
		for _, id := range u.Tags {
			stmts = append(stmts, Statement{ID: id, Doc: doc, Line: u.Line, Text: u.Text})
		}
		if len(u.Tags) == 0 && Normative(u.Text) {
			untagged = append(untagged, u)
		}
	}
	return stmts, untagged
}

// Header is what a script header states: its reply, its errors and its arguments' ranges.
type Header struct {
	Script string   // "claim"
	Reply  string   // the Reply: text
	Errors string   // the Errors: text
	Args   []string // the ARGV lines, ARGV[i] at i-1
}

// rangeArg is an ARGV line that states a range ("integer 1..1e14").
var rangeArg = regexp.MustCompile(`\d\s*\.\.\s*\d`)

// OfHeader lists a script header's statements: "<script>.lua:reply", "<script>.lua:errors" and
// "<script>.lua:ARGV<i>" for every argument with a stated range.
func OfHeader(h Header) []Statement {
	doc := "lua/" + h.Script + ".lua"
	out := []Statement{
		{ID: h.Script + ".lua:reply", Doc: doc, Text: "Reply: " + h.Reply},
		{ID: h.Script + ".lua:errors", Doc: doc, Text: "Errors: " + h.Errors},
	}
	for i, a := range h.Args {
		if rangeArg.MatchString(a) {
			out = append(out, Statement{ID: fmt.Sprintf("%s.lua:ARGV%d", h.Script, i+1), Doc: doc, Text: fmt.Sprintf("ARGV[%d] -> %s", i+1, a)})
		}
	}
	return out
}

// HeaderOf reads a script's header block: its Reply: and Errors: text (with their continuation
// lines) and its ARGV lines, in order (a batch script's repeated ones after the fixed ones).
func HeaderOf(script, source string) Header {
	h := Header{Script: script}
	var cur *string
	for _, line := range strings.Split(source, "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		body := strings.TrimPrefix(line, "--")
		switch {
		case strings.HasPrefix(body, " Reply: "):
			h.Reply, cur = strings.TrimPrefix(body, " Reply: "), &h.Reply
		case strings.HasPrefix(body, " Errors: "):
			h.Errors, cur = strings.TrimPrefix(body, " Errors: "), &h.Errors
		case strings.HasPrefix(body, " ARGV["):
			_, desc, _ := strings.Cut(body, "-> ")
			h.Args, cur = append(h.Args, desc), nil
		case cur != nil && strings.HasPrefix(body, "   "):
			*cur += " " + strings.TrimSpace(body)
		default:
			cur = nil
		}
	}
	return h
}
