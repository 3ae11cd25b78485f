// Package standing sets certifications side by side: it reads several certification folders
// (the reference, the Node port, any port's) and lays out, clause by clause and implementation
// by implementation, each clause's verdict and the rule a failure breaks — one JSON document and
// one self-contained HTML page, in the manner of wpt.fyi and test262.fyi for browsers and engines.
package standing

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/echomq/kit/contracts/report"
	"github.com/echomq/kit/contracts/verdict"
)

// ErrInput is a folder that holds no readable, valid report.json.
var ErrInput = errors.New("standing: not a certification folder")

// Implementation is one certification: what ran, against what, and how it ended.
type Implementation struct {
	Folder    string        `json:"folder"`
	Port      string        `json:"port"`
	Runtime   string        `json:"runtime"`
	Command   string        `json:"command,omitempty"`
	Kit       string        `json:"kit_version"`
	Bundle    string        `json:"bundle"`
	Digest    string        `json:"bundle_digest"`
	Valkey    string        `json:"valkey_version"`
	Cluster   bool          `json:"cluster,omitempty"`
	Passed    int           `json:"passed"`
	Total     int           `json:"total"`
	Certified bool          `json:"certified"`
	Filtered  bool          `json:"filtered"`
	Counts    report.Counts `json:"counts"`
	// Report is the path of its report.html, relative to the page (set by Write).
	Report string `json:"report_html,omitempty"`
}

// Cell is one clause of one implementation.
type Cell struct {
	// Verdict is the clause's status name; "" when the implementation's kit has no such clause.
	Verdict string `json:"verdict"`
	// Rule and Quote are the rule the clause's first failure breaks (a failed or known-failing
	// clause), Reason why it did not run, is not claimed or not offered.
	Rule   string `json:"rule,omitempty"`
	Quote  string `json:"quote,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Row is one clause across the implementations, in their order; Agree says every
// implementation has the same verdict.
type Row struct {
	ID    string `json:"id"`
	Cells []Cell `json:"cells"`
	Agree bool   `json:"agree"`
}

// Contract is one contract across the implementations: its status in each, and its clauses.
type Contract struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Statuses []string `json:"statuses"`
	Clauses  []Row    `json:"clauses"`
}

// Standing is the whole comparison: standing.json.
type Standing struct {
	Implementations []Implementation `json:"implementations"`
	Contracts       []Contract       `json:"contracts"`
	// Notes say what makes the columns less comparable: different kit versions or bundles.
	Notes []string `json:"notes,omitempty"`
}

// Read reads each folder's report.json (held to its schema) and lays them side by side, in the
// order given.
func Read(folders []string) (*Standing, error) {
	if len(folders) == 0 {
		return nil, fmt.Errorf("%w: give at least one certification folder", ErrInput)
	}
	var reps []*report.JSONReport
	s := &Standing{}
	for _, f := range folders {
		r, err := report.ReadJSON(filepath.Join(f, "report.json"))
		if err != nil {
			return nil, fmt.Errorf("%w (a report.json of kit 0.3.0 or later): %s: %w", ErrInput, f, err)
		}
		reps = append(reps, r)
		s.Implementations = append(s.Implementations, implementationOf(f, r))
	}
	s.Contracts = layout(reps)
	s.Notes = notes(s.Implementations)
	return s, nil
}

func implementationOf(folder string, r *report.JSONReport) Implementation {
	return Implementation{Folder: folder, Port: r.Facts.Port, Runtime: r.Facts.PortRuntime, Command: r.Facts.PortCommand,
		Kit: r.Facts.KitVersion, Bundle: r.Facts.Bundle, Digest: r.Facts.BundleDigest, Valkey: r.Facts.ValkeyVersion,
		Cluster: r.Facts.Cluster, Passed: r.Result.Passed, Total: r.Result.Total, Certified: r.Result.Certified,
		Filtered: r.Result.Filtered, Counts: r.Counts}
}

// layout builds the contract and clause rows: the contracts in canon order, each one's clauses
// in the order the first report that has them lists them (a clause one kit version lacks is an
// empty cell there).
func layout(reps []*report.JSONReport) []Contract {
	var out []Contract
	for ci := range reps[0].Result.Contracts {
		head := reps[0].Result.Contracts[ci]
		c := Contract{ID: head.ID, Name: head.Name}
		var ids []string
		byImpl := make([]map[string]verdict.Clause, len(reps))
		for i, r := range reps {
			byImpl[i] = map[string]verdict.Clause{}
			st := ""
			for _, rc := range r.Result.Contracts {
				if rc.ID != head.ID {
					continue
				}
				st = rc.Status.String()
				for _, cl := range rc.Clauses {
					byImpl[i][cl.ID] = cl
					if !slices.Contains(ids, cl.ID) {
						ids = append(ids, cl.ID)
					}
				}
			}
			c.Statuses = append(c.Statuses, st)
		}
		for _, id := range ids {
			row := Row{ID: id, Agree: true}
			for i := range reps {
				cl, ok := byImpl[i][id]
				row.Cells = append(row.Cells, cellOf(cl, ok))
				row.Agree = row.Agree && row.Cells[i].Verdict == row.Cells[0].Verdict
			}
			c.Clauses = append(c.Clauses, row)
		}
		out = append(out, c)
	}
	return out
}

func cellOf(cl verdict.Clause, ok bool) Cell {
	if !ok {
		return Cell{Reason: "this kit version has no such clause"}
	}
	c := Cell{Verdict: cl.Status.String(), Reason: cl.Reason}
	if len(cl.Failures) > 0 {
		c.Rule, c.Quote = cl.Failures[0].Rule, cl.Failures[0].Quote
		if c.Rule == "" {
			c.Rule = "no rule: " + cl.Failures[0].Got
		}
	}
	return c
}

// notes say what differs between the columns beyond the ports themselves.
func notes(impls []Implementation) []string {
	var out []string
	kits, bundles := map[string]bool{}, map[string]bool{}
	for _, im := range impls {
		kits[im.Kit] = true
		bundles[im.Bundle+" "+im.Digest] = true
	}
	if len(kits) > 1 {
		out = append(out, "the certifications come from different kit versions: a clause one of them lacks is an empty cell")
	}
	if len(bundles) > 1 {
		out = append(out, "the certifications are of different bundles (version or digest)")
	}
	for _, im := range impls {
		if im.Filtered {
			out = append(out, im.Folder+" is a filtered run: the clauses it did not select are NOT RUN")
		}
	}
	return out
}

// Write writes standing.json and standing.html into dir, each implementation's report.html
// linked relative to it.
func Write(dir string, s *Standing) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, im := range s.Implementations {
		if rel, err := filepath.Rel(dir, filepath.Join(im.Folder, "report.html")); err == nil {
			s.Implementations[i].Report = filepath.ToSlash(rel)
		}
	}
	for name, write := range map[string]func(io.Writer) error{"standing.json": s.WriteJSON, "standing.html": s.WriteHTML} {
		fh, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := write(fh); err != nil {
			fh.Close()
			return fmt.Errorf("standing: %s: %w", name, err)
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes standing.json.
func (s *Standing) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(s)
}
