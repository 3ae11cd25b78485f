// Package known reads the lists a port under construction keeps of the clauses it is known to
// fail and of those it is known to fail now and then (flaky): clause-id patterns, one per line.
// A pattern is a clause id whose components (split at "/") may be "*", any one component, or
// "**", any number of them (none included): "C09/retry/zero-delay-back-to-pending",
// "C10/dead/*", "*/*/fields", "C04/**"; a contract id alone ("C04") is "C04/**". The lists are
// matched against clause ids only; a pattern that matches no clause of the kit is stale, as is a
// known-failing clause that passes (verdict.Summarize): a stale list fails the run.
package known

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Pattern is one entry of a list and where it was written.
type Pattern struct {
	Text  string // as written
	Where string // "known-failing.txt:3"
	parts []string
}

func (p Pattern) String() string { return fmt.Sprintf("%q (%s)", p.Text, p.Where) }

// ErrPattern is a line that is not a pattern.
var ErrPattern = errors.New("known: not a clause-id pattern")

var (
	contractID = regexp.MustCompile(`^[Cc](\d{1,2})$`)
	component  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// Parse reads one pattern; where says where it was written, for messages.
func Parse(text, where string) (Pattern, error) {
	text = strings.TrimSpace(text)
	parts := strings.Split(text, "/")
	if m := contractID.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		parts = []string{fmt.Sprintf("C%02d", n), "**"}
	}
	for i, c := range parts {
		switch {
		case c == "*" || c == "**":
		case strings.Contains(c, "*"):
			return Pattern{}, fmt.Errorf("%w: %s: %q: a * stands for a whole component (between slashes), never part of one", ErrPattern, where, text)
		case !component.MatchString(c):
			return Pattern{}, fmt.Errorf("%w: %s: %q: component %d is empty or holds a character no clause id has", ErrPattern, where, text, i+1)
		}
	}
	return Pattern{Text: text, Where: where, parts: parts}, nil
}

// Match tells whether the pattern names clause id.
func (p Pattern) Match(id string) bool { return match(p.parts, strings.Split(id, "/")) }

func match(pat, id []string) bool {
	switch {
	case len(pat) == 0:
		return len(id) == 0
	case pat[0] == "**":
		for i := 0; i <= len(id); i++ {
			if match(pat[1:], id[i:]) {
				return true
			}
		}
		return false
	case len(id) == 0:
		return false
	case pat[0] == "*" || pat[0] == id[0]:
		return match(pat[1:], id[1:])
	}
	return false
}

// Read reads a list: one pattern a line; blank lines and everything after a # are ignored. name
// is the list's name in messages (its file).
func Read(r io.Reader, name string) ([]Pattern, error) {
	var out []Pattern
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		p, err := Parse(line, fmt.Sprintf("%s:%d", name, n))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

// ReadFile reads the list in the file at path.
func ReadFile(path string) ([]Pattern, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return Read(fh, path)
}

// Lists are a run's known-failing and known-flaky patterns (verdict.Known).
type Lists struct {
	Failing, Flaky []Pattern
}

// Load reads a list given as entries: each a pattern, or "@" and the path of a file of
// patterns (Read). list names the list in messages ("known-failing").
func Load(entries []string, list string) ([]Pattern, error) {
	var out []Pattern
	for i, e := range entries {
		if path, ok := strings.CutPrefix(strings.TrimSpace(e), "@"); ok {
			ps, err := ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", list, err)
			}
			out = append(out, ps...)
			continue
		}
		p, err := Parse(e, fmt.Sprintf("%s entry %d", list, i+1))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// IsFailing tells whether a known-failing pattern names the clause.
func (l *Lists) IsFailing(id string) bool { return l != nil && anyMatch(l.Failing, id) }

// IsFlaky tells whether a known-flaky pattern names the clause.
func (l *Lists) IsFlaky(id string) bool { return l != nil && anyMatch(l.Flaky, id) }

func anyMatch(ps []Pattern, id string) bool {
	for _, p := range ps {
		if p.Match(id) {
			return true
		}
	}
	return false
}

// Unmatched says each pattern of either list that matches none of ids (the kit's clauses): a
// stale entry, which fails the run.
func (l *Lists) Unmatched(ids []string) []string {
	var out []string
	for _, list := range []struct {
		name string
		ps   []Pattern
	}{{"known-failing", l.Failing}, {"known-flaky", l.Flaky}} {
		for _, p := range list.ps {
			hit := false
			for _, id := range ids {
				hit = hit || p.Match(id)
			}
			if !hit {
				out = append(out, fmt.Sprintf("%s pattern %s matches no clause of the kit", list.name, p))
			}
		}
	}
	return out
}

// Empty tells lists with no pattern.
func (l *Lists) Empty() bool { return l == nil || len(l.Failing)+len(l.Flaky) == 0 }
