// Package report writes a conformance run's certification folder: the deterministic transcript,
// JUnit XML, JSON, a self-contained HTML report and the facts of the run.
package report

import (
	_ "embed"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/echomq/kit/contracts/verdict"
)

// Facts describe what was certified, against what.
type Facts struct {
	Port          string `json:"port"`           // the port's name (hello), or the driver's
	PortRuntime   string `json:"port_runtime"`   // hello's runtime
	PortCommand   string `json:"port_command"`   // the command line, "" for the in-process reference
	KitVersion    string `json:"kit_version"`    // this kit
	Bundle        string `json:"bundle"`         // lua.Version
	BundleDigest  string `json:"bundle_digest"`  // the kit's digest
	ValkeyVersion string `json:"valkey_version"` // the server the run used
	Mutant        string `json:"mutant,omitempty"`
	// Cluster: the run was against a Valkey Cluster (hello with cluster: true); its certification
	// folder's transcript is conformance-<port>-cluster.out.
	Cluster bool `json:"cluster,omitempty"`
}

// Label makes a port name safe as a file and folder name.
func Label(name string) string {
	s := regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(name, "-")
	s = strings.Trim(s, "-.")
	if s == "" {
		return "port"
	}
	return s
}

// Line is one contract's line on the console and in the transcript: "C09 retry ..... PASS". A
// contract some of whose clauses did not run says so: "PASS (1 of 3 clauses run)", never a bare
// PASS.
func Line(c verdict.ContractResult) string {
	return dots(c.ID+" "+c.Name, status(c), 60)
}

func status(c verdict.ContractResult) string {
	if c.Partial() && c.Status != verdict.StatusNotRun {
		return fmt.Sprintf("%s (%d of %d clauses run)", c.Status, c.ClausesRun, c.ClausesTotal)
	}
	return c.Status.String()
}

// listed tells a clause that failed as a known list expected (known failing, known flaky): it
// is shown with its failure, apart from the failures that fail the run.
func listed(cl verdict.Clause) bool {
	return cl.Status == verdict.StatusKnownFailing || cl.Status == verdict.StatusKnownFlaky
}

// StaleLines says each stale entry of the known lists ("" when none): the run fails on them.
func StaleLines(r *verdict.Result) string {
	if len(r.Stale) == 0 {
		return ""
	}
	return "\nSTALE KNOWN LISTS (the run fails until they are updated):\n  " + strings.Join(r.Stale, "\n  ") + "\n"
}

func dots(left, right string, width int) string {
	n := width - len([]rune(left)) - len(right) - 2
	if n < 3 {
		n = 3
	}
	return left + " " + strings.Repeat(".", n) + " " + right
}

// Summary is the closing line: "CONFORMANCE n/14", and for a run that did not run every clause,
// how many it ran: such a run is never a certification.
func Summary(r *verdict.Result) string {
	s := fmt.Sprintf("CONFORMANCE %d/%d", r.Passed, r.Total)
	switch {
	case r.FailFast:
		s += fmt.Sprintf(" (fail-fast run: %d of %d clauses run%s; not a certification)", r.ClausesRun, r.ClausesTotal, firstFailed(r))
	case r.Filtered:
		s += fmt.Sprintf(" (filtered run: %d of %d clauses run; not a certification)", r.ClausesRun, r.ClausesTotal)
	case r.ClausesRun < r.ClausesTotal:
		s += fmt.Sprintf(" (%d of %d clauses run: see NOT RUN above; not a certification)", r.ClausesRun, r.ClausesTotal)
	case r.Spread != nil && !r.Spread.Covered():
		s += " (the run's queues did not land on every primary: not a certification)"
	case len(r.Stale) > 0:
		s += " (the known lists are stale: see STALE above; not a certification)"
	}
	return s
}

// firstFailed names a fail-fast run's failing clause(s): ", stopped at C07/stale/…".
func firstFailed(r *verdict.Result) string {
	var ids []string
	for _, c := range r.Contracts {
		for _, cl := range c.Clauses {
			if cl.Failed() {
				ids = append(ids, cl.ID)
			}
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return ", stopped at " + strings.Join(ids, ", ")
}

// SpreadLine is a cluster run's line on where its queues landed ("" for a standalone run).
func SpreadLine(r *verdict.Result) string {
	if r.Spread == nil {
		return ""
	}
	return "CLUSTER " + r.Spread.String()
}

// Transcript renders the transcript. A passing run's is deterministic — no timings, ids, ports
// or addresses — so an unchanged port regenerates identical bytes. Per contract: its status,
// then each clause's id and verdict; a failed clause adds its whole failure (rule, expected,
// got), the wire trace, the JSON lines exchanged with the port and its stderr tail; a clause
// that could not run says why.
func Transcript(r *verdict.Result, f Facts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# EchoMQ conformance transcript\n")
	fmt.Fprintf(&b, "port:   %s\n", f.Port)
	fmt.Fprintf(&b, "bundle: %s %s\n", f.Bundle, f.BundleDigest)
	fmt.Fprintf(&b, "kit:    %s\n", f.KitVersion)
	if f.Mutant != "" {
		fmt.Fprintf(&b, "mutant: %s\n", f.Mutant)
	}
	if f.Cluster {
		fmt.Fprintf(&b, "server: a Valkey Cluster (hello with cluster: true)\n")
	}
	for _, c := range r.Contracts {
		if c.Status == verdict.StatusNotRun {
			continue
		}
		fmt.Fprintf(&b, "\n%s\n", Line(c))
		if c.Note != "" {
			fmt.Fprintf(&b, "  note: %s\n", c.Note)
		}
		for _, cl := range c.Clauses {
			if !cl.Ran() && cl.Reason == "" {
				continue // filtered out: not part of this run
			}
			fmt.Fprintf(&b, "  %s\n", dots(cl.ID, cl.Status.String(), 76))
			switch {
			case cl.Status == verdict.StatusNotRun || cl.Status == verdict.StatusNotOffered:
				fmt.Fprintf(&b, "    %s\n", cl.Reason)
			case cl.Failed() || listed(cl):
				b.WriteString(indent(Failure(cl, 0), "    "))
			}
		}
	}
	if l := SpreadLine(r); l != "" {
		fmt.Fprintf(&b, "\n%s\n", l)
	}
	fmt.Fprintf(&b, "\n%s\n", Summary(r))
	return b.String()
}

// Failure is a failed clause in full for a reader: the message (RULE / EXPECTED / GOT), the JSON
// lines exchanged with the port, its stderr tail and the wire trace. max > 0 keeps only the last
// max lines of the exchange and of stderr, and max/2 of the wire trace (the console); 0 keeps
// what was recorded.
func Failure(cl verdict.Clause, max int) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(cl.Message(), "\n") + "\n")
	if ex := cl.Exchange; ex != nil {
		if len(ex.Lines) > 0 {
			b.WriteString("EXCHANGE (JSON lines, → the kit's requests, ← the port's replies):\n")
			b.WriteString(indent(lastLines(strings.Join(ex.Lines, "\n"), max), "  "))
		}
		if ex.Stderr != "" {
			b.WriteString("STDERR (the port's, last lines):\n")
			b.WriteString(indent(lastLines(ex.Stderr, max), "  "))
		}
	}
	if cl.Wire != "" {
		b.WriteString("WIRE TRACE (the port's commands, seen by MONITOR):\n")
		b.WriteString(indent(lastLines(cl.Wire, max/2), "  "))
	}
	return b.String()
}

// lastLines keeps the last max lines of s (all of them when max is 0), saying how many it left out.
func lastLines(s string, max int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if max > 0 && len(ls) > max {
		ls = append([]string{fmt.Sprintf("… %d earlier lines (all of them in report.html)", len(ls)-max)}, ls[len(ls)-max:]...)
	}
	return strings.Join(ls, "\n")
}

func indent(s, pre string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(pre + l + "\n")
	}
	return b.String()
}

// Write fills dir with transcript, JUnit XML, JSON, HTML, the badge and facts. It returns the
// transcript's path.
func Write(dir string, r *verdict.Result, f Facts) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	label := Label(f.Port)
	if f.Cluster {
		label += "-cluster"
	}
	transcript := filepath.Join(dir, "conformance-"+label+".out")
	files := map[string]func(io.Writer) error{
		transcript:                               func(w io.Writer) error { _, err := io.WriteString(w, Transcript(r, f)); return err },
		filepath.Join(dir, "junit.xml"):          func(w io.Writer) error { return writeJUnit(w, r, f) },
		filepath.Join(dir, "report.json"):        func(w io.Writer) error { return writeJSON(w, r, f) },
		filepath.Join(dir, "report.html"):        func(w io.Writer) error { return writeHTML(w, r, f) },
		filepath.Join(dir, "badge.svg"):          func(w io.Writer) error { _, err := io.WriteString(w, Badge(r)); return err },
		filepath.Join(dir, "report.schema.json"): func(w io.Writer) error { _, err := w.Write(schema); return err },
		filepath.Join(dir, "facts.json"): func(w io.Writer) error {
			e := json.NewEncoder(w)
			e.SetIndent("", "  ")
			return e.Encode(f)
		},
	}
	for path, write := range files {
		if err := writeFile(path, write); err != nil {
			return "", err
		}
	}
	return transcript, nil
}

func writeFile(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return fmt.Errorf("report: %s: %w", path, err)
	}
	return fh.Close()
}

// JSONReport is report.json: the facts, the clauses counted by verdict and the result. Its
// published schema is report.schema.json (Schema), written beside it in every certification
// folder.
type JSONReport struct {
	Schema string          `json:"schema"` // SchemaID
	Facts  Facts           `json:"facts"`
	Counts Counts          `json:"counts"`
	Result *verdict.Result `json:"result"`
}

// Counts are a run's clauses by verdict, each clause in exactly one: a clause not offered is
// neither passed nor failed, and a clause filtered out is in none.
type Counts struct {
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	KnownFailing int `json:"known_failing"`
	KnownFlaky   int `json:"known_flaky"`
	NotOffered   int `json:"not_offered"`
	NotRun       int `json:"not_run"`
	NotClaimed   int `json:"not_claimed"`
	HarnessError int `json:"harness_error"`
}

// CountsOf counts r's clauses by verdict (a clause filtered out, NOT RUN without a reason, in
// none).
func CountsOf(r *verdict.Result) Counts {
	var n Counts
	for _, c := range r.Contracts {
		for _, cl := range c.Clauses {
			switch cl.Status {
			case verdict.StatusPass:
				n.Pass++
			case verdict.StatusFail:
				n.Fail++
			case verdict.StatusKnownFailing:
				n.KnownFailing++
			case verdict.StatusKnownFlaky:
				n.KnownFlaky++
			case verdict.StatusNotOffered:
				n.NotOffered++
			case verdict.StatusNotClaimed:
				n.NotClaimed++
			case verdict.StatusHarnessError:
				n.HarnessError++
			case verdict.StatusNotRun:
				if cl.Reason != "" {
					n.NotRun++
				}
			}
		}
	}
	return n
}

// SchemaID is the $id of report.json's schema (report.schema.json, Schema); every report.json
// names it.
const SchemaID = "https://echomq.dev/kit/report.schema.json"

//go:embed report.schema.json
var schema []byte

// Schema returns report.json's JSON Schema (draft 2020-12), a fresh copy: the kit's tests
// validate every report.json they read against it, and Write puts it beside report.json.
func Schema() []byte { return append([]byte(nil), schema...) }

func writeJSON(w io.Writer, r *verdict.Result, f Facts) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(JSONReport{Schema: SchemaID, Facts: f, Counts: CountsOf(r), Result: r})
}

// ReadJSON reads a report.json back, held to its schema (Validate).
func ReadJSON(path string) (*JSONReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := Validate(b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out JSONReport
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	return &out, nil
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

func writeJUnit(w io.Writer, r *verdict.Result, f Facts) error {
	out := junitSuites{Name: "EchoMQ conformance: " + f.Port}
	for _, c := range r.Contracts {
		if c.Status == verdict.StatusNotRun {
			continue
		}
		s := junitSuite{Name: c.ID + " " + c.Name}
		var secs float64
		for _, cl := range c.Clauses {
			if !cl.Ran() && cl.Reason == "" {
				continue // filtered out: not part of this run
			}
			jc := junitCase{Name: cl.ID, Classname: c.ID, Time: fmt.Sprintf("%.3f", cl.Duration.Seconds())}
			secs += cl.Duration.Seconds()
			body := Failure(cl, 0)
			switch cl.Status {
			case verdict.StatusFail:
				jc.Failure = &junitMessage{Message: cl.Rule(), Body: body}
				s.Failures++
			case verdict.StatusKnownFailing, verdict.StatusKnownFlaky:
				jc.Skipped = &junitMessage{Message: strings.ToLower(cl.Status.String()) + ": " + cl.Rule(), Body: body}
				s.Skipped++
			case verdict.StatusHarnessError:
				jc.Error = &junitMessage{Message: "harness error", Body: body}
				s.Errors++
			case verdict.StatusNotOffered:
				// Neither a pass nor a failure: the port does not declare the op or aid.
				jc.Skipped = &junitMessage{Message: "not offered: " + cl.Reason}
				s.Skipped++
			case verdict.StatusNotClaimed, verdict.StatusNotRun:
				// In a run meant to certify, a clause that did not run or is not claimed withholds
				// the certificate: a failure, so that CI reading JUnit sees what the exit status says.
				msg := strings.ToLower(cl.Status.String()) + ": " + cl.Reason
				if r.Filtered {
					jc.Skipped = &junitMessage{Message: msg}
					s.Skipped++
				} else {
					jc.Failure = &junitMessage{Message: msg, Body: cl.Reason}
					s.Failures++
				}
			}
			s.Tests++
			s.Cases = append(s.Cases, jc)
		}
		s.Time = fmt.Sprintf("%.3f", secs)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Skipped += s.Skipped
		out.Suites = append(out.Suites, s)
	}
	if len(r.Stale) > 0 {
		// A stale known list fails the run: CI reading JUnit sees it fail too.
		s := junitSuite{Name: "known lists", Time: "0.000"}
		for _, st := range r.Stale {
			s.Cases = append(s.Cases, junitCase{Name: st, Classname: "known", Time: "0.000", Failure: &junitMessage{Message: "stale entry: " + st}})
			s.Tests++
			s.Failures++
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	e := xml.NewEncoder(w)
	e.Indent("", "  ")
	if err := e.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
