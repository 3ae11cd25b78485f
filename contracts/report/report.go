// Package report writes a conformance run's certification folder: the deterministic transcript,
// JUnit XML, JSON, a self-contained HTML report and the facts of the run.
package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/echomq/kit/contracts"
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

// Line is one contract's line on the console and in the transcript: "C09 retry ..... PASS".
func Line(c contracts.ContractResult) string {
	return dots(c.ID+" "+c.Name, c.Status, 60)
}

func dots(left, right string, width int) string {
	n := width - len([]rune(left)) - len(right) - 2
	if n < 3 {
		n = 3
	}
	return left + " " + strings.Repeat(".", n) + " " + right
}

// Summary is the closing line: "CONFORMANCE n/14".
func Summary(r *contracts.Result) string { return fmt.Sprintf("CONFORMANCE %d/%d", r.Passed, r.Total) }

// Transcript renders the deterministic transcript: no timings, ids, ports or addresses, so an
// unchanged port regenerates identical bytes. Per contract: its status, then each clause's id and
// verdict, with the rule of a failure.
func Transcript(r *contracts.Result, f Facts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# EchoMQ conformance transcript\n")
	fmt.Fprintf(&b, "port:   %s\n", f.Port)
	fmt.Fprintf(&b, "bundle: %s %s\n", f.Bundle, f.BundleDigest)
	fmt.Fprintf(&b, "kit:    %s\n", f.KitVersion)
	if f.Mutant != "" {
		fmt.Fprintf(&b, "mutant: %s\n", f.Mutant)
	}
	for _, c := range r.Contracts {
		if c.Status == contracts.StatusNotRun {
			continue
		}
		fmt.Fprintf(&b, "\n%s\n", Line(c))
		if c.Note != "" {
			fmt.Fprintf(&b, "  note: %s\n", c.Note)
		}
		for _, cl := range c.Clauses {
			if cl.Verdict == contracts.StatusNotRun {
				continue
			}
			fmt.Fprintf(&b, "  %s\n", dots(cl.ID, cl.Verdict, 76))
			if cl.Verdict == contracts.StatusNotOffered {
				fmt.Fprintf(&b, "    %s\n", cl.Message)
			}
			if cl.Rule != "" {
				fmt.Fprintf(&b, "    rule: %s\n", cl.Rule)
			}
		}
	}
	fmt.Fprintf(&b, "\n%s\n", Summary(r))
	return b.String()
}

// Write fills dir with transcript, JUnit XML, JSON, HTML and facts. It returns the transcript's
// path.
func Write(dir string, r *contracts.Result, f Facts) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	label := Label(f.Port)
	transcript := filepath.Join(dir, "conformance-"+label+".out")
	files := map[string]func(io.Writer) error{
		transcript:                        func(w io.Writer) error { _, err := io.WriteString(w, Transcript(r, f)); return err },
		filepath.Join(dir, "junit.xml"):   func(w io.Writer) error { return writeJUnit(w, r, f) },
		filepath.Join(dir, "report.json"): func(w io.Writer) error { return writeJSON(w, r, f) },
		filepath.Join(dir, "report.html"): func(w io.Writer) error { return writeHTML(w, r, f) },
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

// JSONReport is report.json: the facts and the result.
type JSONReport struct {
	Facts  Facts             `json:"facts"`
	Result *contracts.Result `json:"result"`
}

func writeJSON(w io.Writer, r *contracts.Result, f Facts) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(JSONReport{Facts: f, Result: r})
}

// ReadJSON reads a report.json back.
func ReadJSON(path string) (*JSONReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
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

func writeJUnit(w io.Writer, r *contracts.Result, f Facts) error {
	out := junitSuites{Name: "EchoMQ conformance: " + f.Port}
	for _, c := range r.Contracts {
		if c.Status == contracts.StatusNotRun {
			continue
		}
		s := junitSuite{Name: c.ID + " " + c.Name}
		var secs float64
		for _, cl := range c.Clauses {
			if cl.Verdict == contracts.StatusNotRun {
				continue
			}
			jc := junitCase{Name: cl.ID, Classname: c.ID, Time: fmt.Sprintf("%.3f", cl.Duration.Seconds())}
			secs += cl.Duration.Seconds()
			body := cl.Message
			if cl.Wire != "" {
				body += "\n\nWIRE TRACE (the port's commands):\n" + cl.Wire
			}
			switch cl.Verdict {
			case contracts.StatusFail:
				failing := c.Status == contracts.StatusKnownFailing
				if failing {
					jc.Skipped = &junitMessage{Message: "known failing: " + cl.Rule, Body: body}
					s.Skipped++
				} else {
					jc.Failure = &junitMessage{Message: cl.Rule, Body: body}
					s.Failures++
				}
			case contracts.StatusHarnessError:
				jc.Error = &junitMessage{Message: "harness error", Body: body}
				s.Errors++
			case contracts.StatusNotClaimed:
				jc.Skipped = &junitMessage{Message: "not claimed by the port"}
				s.Skipped++
			}
			s.Tests++
			s.Cases = append(s.Cases, jc)
		}
		s.Time = fmt.Sprintf("%.3f", secs)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
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

var page = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>EchoMQ conformance — {{.Facts.Port}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222}
h1{font-size:1.5em}table.facts td{padding:.1em 1em .1em 0}
.c{border:1px solid #ddd;border-radius:6px;margin:.8em 0;padding:.4em .9em}
.st{float:right;font-weight:bold}.PASS{color:#176e2a}.FAIL,.HARNESS{color:#b3261e}.NOT,.KNOWN{color:#8a6d00}
.rule{color:#555;font-style:italic}pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:12px}
ul{margin:.3em 0}li{margin:.15em 0}summary{cursor:pointer}
</style></head><body>
<h1>EchoMQ conformance — {{.Facts.Port}}: {{.Summary}}</h1>
<table class="facts">
<tr><td>port</td><td>{{.Facts.Port}} ({{.Facts.PortRuntime}})</td></tr>
{{if .Facts.PortCommand}}<tr><td>command</td><td><code>{{.Facts.PortCommand}}</code></td></tr>{{end}}
<tr><td>kit</td><td>{{.Facts.KitVersion}}</td></tr>
<tr><td>bundle</td><td>{{.Facts.Bundle}} <code>{{.Facts.BundleDigest}}</code></td></tr>
<tr><td>valkey</td><td>{{.Facts.ValkeyVersion}}</td></tr>
{{if .Facts.Mutant}}<tr><td>mutant</td><td>{{.Facts.Mutant}}</td></tr>{{end}}
<tr><td>certified</td><td>{{if .Result.Certified}}yes{{else}}no{{end}}</td></tr>
</table>
{{range .Result.Contracts}}{{if ne .Status "NOT RUN"}}
<div class="c"><span class="st {{.Status}}">{{.Status}}</span><b>{{.ID}} {{.Name}}</b>
<div class="rule">{{.Rule}}</div>{{if .Note}}<div><b>note:</b> {{.Note}}</div>{{end}}
<ul>{{range .Clauses}}{{if ne .Verdict "NOT RUN"}}<li><span class="{{.Verdict}}">{{.Verdict}}</span> <code>{{.ID}}</code>
{{if .Message}}<details open><summary>{{.Rule}}</summary><pre>{{.Message}}</pre>
{{if .Wire}}<details><summary>wire trace (the port's commands, MONITOR)</summary><pre>{{.Wire}}</pre></details>{{end}}
</details>{{end}}</li>{{end}}{{end}}</ul></div>
{{end}}{{end}}
</body></html>
`))

func writeHTML(w io.Writer, r *contracts.Result, f Facts) error {
	return page.Execute(w, struct {
		Facts   Facts
		Result  *contracts.Result
		Summary string
	}{f, r, Summary(r)})
}
