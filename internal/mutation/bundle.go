package mutation

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The bundle's mutants are this package's own: no maintained mutation tool reads Lua here
// (checked: StrykerJS reads JavaScript and TypeScript, gremlins Go; luamut is a development
// rock with no release, run under a Lua interpreter and luarocks the kit does not provision;
// universalmutator is regex-based, on PyPI, which this machine cannot reach). The operators are
// the classic small set, applied to tokens outside comments and strings:
//
//	rel-boundary  <  ↔ <=, >  ↔ >=
//	rel-negation  == ↔ ~=, <  → >=, <= → >, > → <=, >= → <
//	arith         binary + ↔ -, * → /, / → *, % → *
//	logic         and ↔ or
//	not-drop      not x → x
//	num           an integer literal n → n+1, and n → n-1 for n > 0 (not a KEYS/ARGV subscript)
//	call-drop     a statement that is a bare redis.call(…) on one line is removed
//
// Each mutant is one change; it runs through the in-process reference with the edited script
// in place and admitted (emq-selftest -scripts), so only behaviour can kill it.

// luaToken is a token of a Lua source outside comments and strings.
type luaToken struct {
	Off  int    // byte offset
	Text string // as written
	Kind byte   // 'o' operator, 'n' number, 'w' word (name or keyword), 's' string, 'p' other punctuation
}

// luaTokens scans src; comments are skipped, strings are one token each.
func luaTokens(src string) []luaToken {
	var out []luaToken
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "--"):
			if n := longBracket(src[i+2:]); n > 0 {
				i = skipLong(src, i+2, n)
			} else if nl := strings.IndexByte(src[i:], '\n'); nl >= 0 {
				i += nl
			} else {
				i = len(src)
			}
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			out = append(out, luaToken{i, src[i:min(j+1, len(src))], 's'})
			i = j + 1
		case c == '[' && longBracket(src[i:]) > 0:
			j := skipLong(src, i, longBracket(src[i:]))
			out = append(out, luaToken{i, src[i:j], 's'})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (isWordByte(src[j]) || src[j] == '.') {
				j++
			}
			out = append(out, luaToken{i, src[i:j], 'n'})
			i = j
		case isWordByte(c):
			j := i
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			out = append(out, luaToken{i, src[i:j], 'w'})
			i = j
		default:
			op := string(c)
			for _, two := range []string{"==", "~=", "<=", ">=", "..", "::", "//"} {
				if strings.HasPrefix(src[i:], two) {
					op = two
				}
			}
			kind := byte('p')
			if strings.Contains("+-*/%<>", op) || op == "==" || op == "~=" || op == "<=" || op == ">=" {
				kind = 'o'
			}
			out = append(out, luaToken{i, op, kind})
			i += len(op)
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// longBracket is the length of a long bracket opening s ("[[", "[==["), or 0.
func longBracket(s string) int {
	if !strings.HasPrefix(s, "[") {
		return 0
	}
	j := 1
	for j < len(s) && s[j] == '=' {
		j++
	}
	if j < len(s) && s[j] == '[' {
		return j + 1
	}
	return 0
}

// skipLong is the offset past the long bracket of n bytes opened at src[i:].
func skipLong(src string, i, n int) int {
	closing := "]" + strings.Repeat("=", n-2) + "]"
	if k := strings.Index(src[i+n:], closing); k >= 0 {
		return i + n + k + len(closing)
	}
	return len(src)
}

// valueEnd says a token ends an operand, so the operator after it is binary.
func valueEnd(t luaToken) bool {
	switch t.Kind {
	case 'n', 's':
		return true
	case 'w':
		switch t.Text {
		case "and", "or", "not", "if", "then", "elseif", "else", "while", "do", "for", "in", "repeat", "until", "return", "local", "function", "end":
			return false
		}
		return true
	}
	return t.Text == ")" || t.Text == "]" || t.Text == "}"
}

var luaRel = map[string][2]string{ // operator → {boundary, negation}
	"<": {"<=", ">="}, "<=": {"<", ">"}, ">": {">=", "<="}, ">=": {">", "<"}, "==": {"", "~="}, "~=": {"", "=="},
}

var luaArith = map[string]string{"+": "-", "-": "+", "*": "/", "/": "*", "%": "*"}

// luaChange is one replacement of src[Off:Off+Len] by New.
type luaChange struct {
	Off, Len int
	New, Op  string
}

// luaChanges lists every mutant of one script, in source order.
func luaChanges(src string) []luaChange {
	toks := luaTokens(src)
	var out []luaChange
	for i, t := range toks {
		prev := luaToken{}
		if i > 0 {
			prev = toks[i-1]
		}
		switch {
		case t.Kind == 'o' && luaRel[t.Text] != [2]string{}:
			if b := luaRel[t.Text][0]; b != "" {
				out = append(out, luaChange{t.Off, len(t.Text), b, "rel-boundary"})
			}
			out = append(out, luaChange{t.Off, len(t.Text), luaRel[t.Text][1], "rel-negation"})
		case t.Kind == 'o' && luaArith[t.Text] != "" && valueEnd(prev):
			out = append(out, luaChange{t.Off, len(t.Text), luaArith[t.Text], "arith"})
		case t.Kind == 'w' && (t.Text == "and" || t.Text == "or"):
			out = append(out, luaChange{t.Off, len(t.Text), map[string]string{"and": "or", "or": "and"}[t.Text], "logic"})
		case t.Kind == 'w' && t.Text == "not" && i+1 < len(toks):
			out = append(out, luaChange{t.Off, toks[i+1].Off - t.Off, "", "not-drop"})
		case t.Kind == 'n':
			n, err := strconv.ParseInt(t.Text, 10, 64)
			if err != nil || subscript(toks, i) {
				continue
			}
			out = append(out, luaChange{t.Off, len(t.Text), strconv.FormatInt(n+1, 10), "num"})
			if n > 0 {
				out = append(out, luaChange{t.Off, len(t.Text), strconv.FormatInt(n-1, 10), "num"})
			}
		case t.Kind == 'w' && t.Text == "redis" && startsLine(src, t.Off) && strings.HasPrefix(src[t.Off:], "redis.call("):
			if end := lineEnd(src, t.Off); balanced(src[t.Off:end]) {
				out = append(out, luaChange{t.Off, end - t.Off, "", "call-drop"})
			}
		}
	}
	return out
}

// subscript says the number at toks[i] indexes KEYS or ARGV (KEYS[3]). Moving one names another
// declared key or argument; these 476 mutants are left out of num to keep the set small (a
// family of its own, key-swap, if a run ever wants them).
func subscript(toks []luaToken, i int) bool {
	return i >= 2 && i+1 < len(toks) && toks[i-1].Text == "[" && toks[i+1].Text == "]" &&
		(toks[i-2].Text == "KEYS" || toks[i-2].Text == "ARGV")
}

func startsLine(src string, off int) bool {
	start := strings.LastIndexByte(src[:off], '\n') + 1
	return strings.TrimSpace(src[start:off]) == ""
}

func lineEnd(src string, off int) int {
	if nl := strings.IndexByte(src[off:], '\n'); nl >= 0 {
		return off + nl
	}
	return len(src)
}

// balanced says a one-line call closes every parenthesis it opens (outside strings).
func balanced(s string) bool {
	depth := 0
	for _, t := range luaTokens(s) {
		switch t.Text {
		case "(":
			depth++
		case ")":
			depth--
		}
	}
	return depth == 0 && strings.HasSuffix(strings.TrimSpace(s), ")")
}

// BundleMutants lists the mutants of every script of the bundle folder dir (the checkout's
// lua/), their File given as lua/<name>.lua.
func BundleMutants(dir string) ([]Mutant, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Mutant
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		src, rel := string(b), "lua/"+filepath.Base(f)
		for _, c := range luaChanges(src) {
			out = append(out, bundleMutant(rel, src, c))
		}
	}
	Number(out)
	return out, nil
}

func bundleMutant(file, src string, c luaChange) Mutant {
	start := strings.LastIndexByte(src[:c.Off], '\n') + 1
	line := strings.Count(src[:c.Off], "\n") + 1
	end := lineEnd(src, c.Off+c.Len)
	was := src[start:lineEnd(src, c.Off)]
	now := src[start:c.Off] + c.New + src[c.Off+c.Len:end]
	col := c.Off - start + 1
	endCol := c.Off + c.Len - (strings.LastIndexByte(src[:c.Off+c.Len], '\n') + 1) + 1
	return Mutant{Port: PortBundle, ID: fmt.Sprintf("%s:%d:%d:%s:%s", file, line, col, c.Op, c.New), File: file,
		Line: line, Col: col, EndLine: strings.Count(src[:c.Off+c.Len], "\n") + 1, EndCol: endCol,
		Mutator: c.Op, Was: was, Now: now}
}

// applyBundle writes the mutant's script, edited, into dir (the -scripts folder of its
// certification).
func applyBundle(root string, m Mutant, dir string) error {
	b, err := os.ReadFile(filepath.Join(root, m.File))
	if err != nil {
		return err
	}
	src := string(b)
	lines := strings.SplitAfter(src, "\n")
	if m.Line > len(lines) {
		return fmt.Errorf("%s has no line %d", m.File, m.Line)
	}
	start := len(strings.Join(lines[:m.Line-1], ""))
	end := start + len(strings.TrimRight(lines[m.Line-1], "\n"))
	if Fold(src[start:end]) != Fold(m.Was) {
		return fmt.Errorf("%s:%d no longer reads %q", m.File, m.Line, m.Was)
	}
	edited := src[:start] + m.Now + src[end:]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, filepath.Base(m.File)), []byte(edited), 0o644)
}
