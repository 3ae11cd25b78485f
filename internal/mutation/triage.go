package mutation

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The triage file lists the survivors a reviewer has read, each under its stable key:
//
//	mutant node ports/node/lib/bus.js ConditionalExpression #1
//	  was: if (opts.log) log = opts.log;
//	  now: if (true) log = opts.log;
//	  equivalent: the default logger and the given one differ only in where stderr text goes
//
// "equivalent:" says why no port could be told apart by it (checkable from the line and the
// documents); "harness:" names the harness change that kills it (a clause, a commit, an issue);
// "gap:" says why no clause kills it yet and what would: an open gap, read but still counted
// untriaged. Lines starting with '#' and blank lines are ignored.

// Triage is a survivor's entry.
type Triage struct {
	Key        Key
	Equivalent bool
	Gap        bool   // an open gap: read, not killed, counted untriaged
	Reason     string // why it is equivalent, the harness change that kills it, or the gap
	Line       int    // where the entry starts in its file
}

// kinds are the verdict fields of an entry, exactly one of which it has.
var kinds = []string{"equivalent", "harness", "gap"}

// Triages are the entries of a triage file, by key.
type Triages map[Key]Triage

// ReadTriage reads a triage file; a missing file is an empty triage.
func ReadTriage(path string) (Triages, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return Triages{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ParseTriage(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTriage reads the entries of a triage file.
func ParseTriage(r io.Reader) (Triages, error) {
	out := Triages{}
	var cur *Triage
	var have map[string]bool
	done := func() error {
		if cur == nil {
			return nil
		}
		for _, f := range []string{"was", "now"} {
			if !have[f] {
				return fmt.Errorf("line %d: entry %s has no %q line", cur.Line, cur.Key, f)
			}
		}
		if n := len(slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return !have[k] })); n != 1 {
			return fmt.Errorf("line %d: entry %s needs exactly one of \"equivalent:\", \"harness:\" and \"gap:\"", cur.Line, cur.Key)
		}
		if _, dup := out[cur.Key]; dup {
			return fmt.Errorf("line %d: entry %s is listed twice", cur.Line, cur.Key)
		}
		out[cur.Key] = *cur
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "mutant "); ok {
			if err := done(); err != nil {
				return nil, err
			}
			k, err := parseKeyLine(rest)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			cur, have = &Triage{Key: k, Line: n}, map[string]bool{}
			continue
		}
		field, value, ok := strings.Cut(trim, ":")
		if cur == nil || !ok || have[field] {
			return nil, fmt.Errorf("line %d: want a \"mutant port file mutator #n\" line, then was:, now: and equivalent:, harness: or gap: — got %q", n, trim)
		}
		value = strings.TrimSpace(value)
		switch field {
		case "was":
			cur.Key.Was = Fold(value)
		case "now":
			cur.Key.Now = Fold(value)
		case "equivalent", "harness", "gap":
			if value == "" {
				return nil, fmt.Errorf("line %d: %s: says nothing", n, field)
			}
			cur.Equivalent, cur.Gap, cur.Reason = field == "equivalent", field == "gap", value
		default:
			return nil, fmt.Errorf("line %d: unknown field %q", n, field)
		}
		have[field] = true
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := done(); err != nil {
		return nil, err
	}
	return out, nil
}

func parseKeyLine(s string) (Key, error) {
	f := strings.Fields(s)
	if len(f) != 4 || !strings.HasPrefix(f[3], "#") {
		return Key{}, fmt.Errorf("want \"mutant port file mutator #n\", got %q", "mutant "+s)
	}
	n, err := strconv.Atoi(f[3][1:])
	if err != nil || n < 1 {
		return Key{}, fmt.Errorf("occurrence %q is not #1, #2, …", f[3])
	}
	return Key{Port: f[0], File: f[1], Mutator: f[2], N: n}, nil
}

// Entry writes a survivor's entry for the triage file, its verdict left to the reviewer.
func Entry(m Mutant) string {
	k := m.Key()
	return fmt.Sprintf("mutant %s\n  was: %s\n  now: %s\n", k, k.Was, k.Now)
}
