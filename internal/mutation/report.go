package mutation

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/echomq/kit/internal/golden"
)

// Score is a port's tally.
type Score struct {
	Port string
	// Sampled mutants; of them Killed (detected), Equivalent (triaged so), NotViable (do not
	// build), Errors (no verdict), Survivors (survived or not covered, equivalent ones aside)
	// and, of those, Untriaged.
	Sampled, Killed, Equivalent, NotViable, Errors, Survivors, Untriaged int
	// Stale are entries triaged equivalent that a sampled mutant was killed under: the reason
	// given is wrong. Unkept are entries naming the harness change that kills them whose mutant
	// survived: they count as untriaged, for the claim no longer holds. Gaps are survivors
	// triaged as open gaps, untriaged too.
	Stale, Unkept, Gaps []Key
}

// N is the count the score is over: the sampled mutants not triaged equivalent (nor unbuildable).
func (s Score) N() int { return s.Sampled - s.Equivalent - s.NotViable }

// Line is the MUTATION line scripts read.
func (s Score) Line() string {
	pct := 0.0
	if s.N() > 0 {
		pct = 100 * float64(s.Killed) / float64(s.N())
	}
	return fmt.Sprintf("MUTATION %s killed %d/%d (%.1f %%) equivalent %d untriaged %d", s.Port, s.Killed, s.N(), pct, s.Equivalent, s.Untriaged)
}

// verdictOf is a sampled mutant's verdict; one never recorded is an Error.
func (r Result) verdictOf(m Mutant) Verdict {
	if v, ok := r.Verdicts[m.ID]; ok {
		return v
	}
	return Verdict{ID: m.ID, Status: Error, Detail: "the tool never ran it"}
}

// Tally counts a port's result under the triage.
func Tally(r Result, t Triages) Score {
	s := Score{Port: r.Port, Sampled: len(r.Sample)}
	for _, m := range r.Sample {
		v := r.verdictOf(m)
		tr, triaged := t[m.Key()]
		switch {
		case v.Status == NotViable:
			s.NotViable++
		case v.Status.Detected():
			s.Killed++
			if triaged && tr.Equivalent {
				s.Stale = append(s.Stale, m.Key())
			}
		case v.Status == Error:
			s.Errors++
		case triaged && tr.Equivalent:
			s.Equivalent++
		default:
			s.Survivors++
			s.Untriaged++
			switch {
			case triaged && tr.Gap:
				s.Gaps = append(s.Gaps, m.Key())
			case triaged:
				s.Unkept = append(s.Unkept, m.Key())
			}
		}
	}
	return s
}

// Write writes a port's results under out/<port> (its diffs read from the checkout root): results.tsv (every sampled mutant),
// survivors/ (one file per survivor: its key, verdict, triage, the contracts that should have
// failed, its diff), untriaged.txt (their entries, ready for the triage file). It removes the
// certification folders of detected mutants and returns the port's score.
func Write(root, out string, r Result, t Triages) (Score, error) {
	dir := filepath.Join(out, r.Port)
	if err := os.RemoveAll(dir); err != nil {
		return Score{}, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "survivors"), 0o755); err != nil {
		return Score{}, err
	}
	var tsv, untriaged strings.Builder
	tsv.WriteString("key\tstatus\tby\trule\ttook_s\tplace\tdetail\n")
	n := 0
	for _, m := range r.Sample {
		v := r.verdictOf(m)
		fmt.Fprintf(&tsv, "%s\t%s\t%s\t%s\t%.1f\t%s:%d:%d\t%s\n", m.Key(), v.Status, v.By, v.Rule, v.Took, m.File, m.Line, m.Col, v.Detail)
		if v.Status.Detected() && v.Dir != "" {
			os.RemoveAll(filepath.Dir(v.Dir))
		}
		if v.Status != Survived && v.Status != NoCoverage {
			continue
		}
		n++
		tr, triaged := t[m.Key()]
		if !triaged {
			untriaged.WriteString(Entry(m) + "\n")
		}
		text, err := survivor(m, v, tr, triaged, root)
		if err != nil {
			return Score{}, err
		}
		name := fmt.Sprintf("%03d-%s.txt", n, strings.ReplaceAll(strings.TrimSuffix(filepath.Base(m.File), filepath.Ext(m.File)), ".", "-"))
		if err := os.WriteFile(filepath.Join(dir, "survivors", name), []byte(text), 0o644); err != nil {
			return Score{}, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "results.tsv"), []byte(tsv.String()), 0o644); err != nil {
		return Score{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "untriaged.txt"), []byte(untriaged.String()), 0o644); err != nil {
		return Score{}, err
	}
	return Tally(r, t), nil
}

// survivor is a survivor's file: what a reviewer needs to triage it.
func survivor(m Mutant, v Verdict, tr Triage, triaged bool, root string) (string, error) {
	var b strings.Builder
	b.WriteString(Entry(m))
	fmt.Fprintf(&b, "\nstatus:    %s", v.Status)
	if v.Detail != "" {
		fmt.Fprintf(&b, " (%s)", v.Detail)
	}
	switch {
	case !triaged:
		b.WriteString("\ntriage:    untriaged")
	case tr.Equivalent:
		fmt.Fprintf(&b, "\ntriage:    equivalent: %s", tr.Reason)
	case tr.Gap:
		fmt.Fprintf(&b, "\ntriage:    gap (counted untriaged): %s", tr.Reason)
	default:
		fmt.Fprintf(&b, "\ntriage:    harness: %s", tr.Reason)
	}
	fmt.Fprintf(&b, "\nplace:     %s:%d:%d (tool id %s)", m.File, m.Line, m.Col, m.ID)
	if len(m.Clauses) > 0 {
		fmt.Fprintf(&b, "\nshould have failed: %s (the clauses that execute it: %s)", strings.Join(m.Contracts(), " "), strings.Join(m.Clauses, " "))
	} else {
		b.WriteString("\nshould have failed: none of the contracts executes it")
	}
	if v.Dir != "" {
		fmt.Fprintf(&b, "\ncertification: %s", v.Dir)
	}
	d, err := diff(root, m)
	if err != nil {
		return "", err
	}
	return b.String() + "\n\n" + d, nil
}

// diff is the mutant as a unified diff of its file in the checkout.
func diff(root string, m Mutant) (string, error) {
	src, err := os.ReadFile(filepath.Join(root, m.File))
	if err != nil {
		return "", err
	}
	lines := strings.SplitAfter(string(src), "\n")
	if m.EndLine < m.Line {
		m.EndLine = m.Line
	}
	if m.EndLine > len(lines) {
		return "", fmt.Errorf("%s has no line %d", m.File, m.EndLine)
	}
	mutated := strings.Join(lines[:m.Line-1], "") + m.Now + "\n" + strings.Join(lines[m.EndLine:], "")
	return golden.Diff("a/"+m.File, "b/"+m.File, string(src), mutated), nil
}

// Summary is the run's closing lines: per port, a detail line and then the MUTATION lines, one
// per port, last, in the order of Ports.
func Summary(scores []Score) string {
	var b strings.Builder
	sort.SliceStable(scores, func(i, j int) bool { return portRank(scores[i].Port) < portRank(scores[j].Port) })
	for _, s := range scores {
		fmt.Fprintf(&b, "%s: sampled %d, killed %d, survivors %d (untriaged %d), equivalent %d, not viable %d, no verdict %d\n",
			s.Port, s.Sampled, s.Killed, s.Survivors, s.Untriaged, s.Equivalent, s.NotViable, s.Errors)
		for _, k := range s.Stale {
			fmt.Fprintf(&b, "%s: triage entry %q (was: %s) is triaged equivalent but was killed in this run: correct it\n", s.Port, k, k.Was)
		}
		for _, k := range s.Unkept {
			fmt.Fprintf(&b, "%s: triage entry %q (was: %s) names the harness change that kills it, but it survived: counted untriaged\n", s.Port, k, k.Was)
		}
		if len(s.Gaps) > 0 {
			fmt.Fprintf(&b, "%s: %d of the untriaged are open gaps, read and listed in the triage file (gap:)\n", s.Port, len(s.Gaps))
		}
	}
	for _, s := range scores {
		b.WriteString(s.Line() + "\n")
	}
	return b.String()
}

func portRank(p string) int {
	for i, q := range Ports {
		if q == p {
			return i
		}
	}
	return len(Ports)
}
