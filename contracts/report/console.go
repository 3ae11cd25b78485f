package report

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/echomq/kit/contracts/verdict"
)

// The console's account of a run, printed before the verdict line: each failed clause in full,
// the simplest of each contract first; the failed clause ids grouped by the rule they break; and
// a line that replays exactly them.

// Failures is every failed clause and every clause that could not run, in full: per contract
// (canon order), the simplest failure first — the one with the fewest lines to read (a walk's
// shrunk sequence and long exchanges come last).
func Failures(r *verdict.Result, max int) string {
	var b strings.Builder
	for _, c := range r.Contracts {
		type entry struct {
			text  string
			lines int
		}
		var es []entry
		for _, cl := range c.Clauses {
			switch {
			case cl.Status == verdict.StatusNotRun && cl.Reason != "":
				es = append(es, entry{fmt.Sprintf("\n--- %s NOT RUN\n%s\n", cl.ID, cl.Reason), 0})
			case cl.Failed() || listed(cl):
				full := Failure(cl, 0)
				es = append(es, entry{fmt.Sprintf("\n--- %s %s\n%s", cl.ID, cl.Status, Failure(cl, max)), strings.Count(full, "\n")})
			}
		}
		slices.SortStableFunc(es, func(a, b entry) int { return cmp.Compare(a.lines, b.lines) })
		for _, e := range es {
			b.WriteString(e.text)
		}
	}
	return b.String()
}

// NotOffered lists the clauses not offered (an optional op or test aid the port does not
// declare), grouped by reason: neither passed nor failed, they stand in no certification's way,
// so they are said apart from the failures. "" when there are none.
func NotOffered(r *verdict.Result) string {
	var g groups
	for _, c := range r.Contracts {
		for _, cl := range c.Clauses {
			if cl.Status == verdict.StatusNotOffered {
				g.add(cl.Reason, cl.ID)
			}
		}
	}
	return g.render("NOT OFFERED: %d clause(s), neither passed nor failed (PROTOCOL.md Part B, \"Capabilities\")")
}

// groups are clause ids under headings, in order of first appearance.
type groups struct {
	order []string
	ids   map[string][]string
	n     int
}

func (g *groups) add(key, id string) {
	if g.ids == nil {
		g.ids = map[string][]string{}
	}
	if _, ok := g.ids[key]; !ok {
		g.order = append(g.order, key)
	}
	g.ids[key] = append(g.ids[key], id)
	g.n++
}

// render writes the title (its %d the number of ids), then each heading and its ids; "" for
// no ids.
func (g *groups) render(title string) string {
	if g.n == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n"+title+"\n", g.n)
	for _, k := range g.order {
		fmt.Fprintf(&b, "  %s\n", k)
		for _, id := range g.ids[k] {
			fmt.Fprintf(&b, "    %s\n", id)
		}
	}
	return b.String()
}

// failed are the clauses a reader must act on: failed, harness errors, and (in a run that
// meant to certify) clauses not run or not claimed.
func failed(r *verdict.Result) []verdict.Clause {
	var out []verdict.Clause
	for _, c := range r.Contracts {
		for _, cl := range c.Clauses {
			if cl.Failed() || (!r.Filtered && (cl.Status == verdict.StatusNotClaimed || cl.Status == verdict.StatusNotRun)) {
				out = append(out, cl)
			}
		}
	}
	return out
}

// ByRule lists the failed clause ids grouped by the rule each breaks (a clause not run or not
// claimed, by its status), the rules in order of first appearance; "" when nothing failed.
func ByRule(r *verdict.Result) string {
	var g groups
	for _, cl := range failed(r) {
		k := cl.Rule()
		switch cl.Status {
		case verdict.StatusNotRun:
			k = "NOT RUN: " + cl.Reason
		case verdict.StatusNotClaimed:
			k = "NOT CLAIMED: " + cl.Reason
		}
		g.add(k, cl.ID)
	}
	return g.render("FAILED: %d clause(s), by the rule they break")
}

// Replay is a command line that runs exactly the failed clauses again with the same port and
// seed ("" when nothing failed): `emq-conform -port '…' -focus '…' -seed N`. cmd is the program
// and any flags it needs first ("emq-conform" when empty).
func Replay(r *verdict.Result, cmd, portCommand string, seed int64) string {
	var quoted []string
	for _, cl := range failed(r) {
		if cl.Status != verdict.StatusNotClaimed {
			quoted = append(quoted, regexp.QuoteMeta(cl.ID))
		}
	}
	if len(quoted) == 0 {
		return ""
	}
	if cmd == "" {
		cmd = "emq-conform"
	}
	if portCommand != "" {
		cmd += " -port " + shellQuote(portCommand)
	}
	return fmt.Sprintf("replay: %s -focus %s -seed %d", cmd, shellQuote("^("+strings.Join(quoted, "|")+")$"), seed)
}

// shellQuote quotes s for a POSIX shell: single quotes, each ' written as '\”.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
