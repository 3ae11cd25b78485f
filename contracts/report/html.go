package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/echomq/kit/contracts/verdict"
)

// Badge is a small SVG for a README: "EchoMQ 2.0 · 14/14", green when certified, red otherwise.
// Its widths come from the text's length at a generous average glyph width, so the text never
// overflows its box.
func Badge(r *verdict.Result) string {
	left, right := "EchoMQ 2.0", fmt.Sprintf("%d/%d", r.Passed, r.Total)
	color := "#b3261e"
	if r.Certified {
		color = "#2e7d32"
	}
	const glyph, pad = 7, 8 // px per character at 11px sans-serif (wide side), padding per side
	lw, rw := len(left)*glyph+2*pad, len(right)*glyph+2*pad
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%[1]d" height="20" role="img" aria-label="%[2]s · %[3]s">
<title>%[2]s · %[3]s</title>
<rect width="%[4]d" height="20" rx="3" fill="#555"/>
<rect x="%[4]d" width="%[5]d" height="20" rx="3" fill="%[6]s"/>
<rect x="%[4]d" width="4" height="20" fill="%[6]s"/>
<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11" text-anchor="middle">
<text x="%[7]d" y="14">%[2]s</text>
<text x="%[8]d" y="14">%[3]s</text>
</g>
</svg>
`, lw+rw, left, right, lw, rw, color, lw/2, lw+rw/2)
}

// failure is a failed clause split for the page: the rule, what was expected, what the port did.
type failure struct {
	Contract string
	Clause   verdict.Clause
	Verdict  string
	Rule     string
	Expected string
	Got      string
	Rest     string // a message without RULE/EXPECTED/GOT (a harness error), or its WIRE part
	Exchange string
	Stderr   string
}

// failureOf lays a failed clause out for the page from its typed failures: the first one's
// rule, expected and got, then its quoted wire lines and any further failures.
func failureOf(contract string, cl verdict.Clause, status verdict.Status) failure {
	fl := failure{Contract: contract, Clause: cl, Verdict: status.String()}
	var rest []string
	switch {
	case (cl.Status == verdict.StatusFail || listed(cl)) && len(cl.Failures) > 0:
		f := cl.Failures[0]
		fl.Rule, fl.Expected, fl.Got = f.Quote, f.Expected, f.Got
		if len(f.Wire) > 0 {
			rest = append(rest, "WIRE:\n  "+strings.Join(f.Wire, "\n  "))
		}
		for _, g := range cl.Failures[1:] {
			rest = append(rest, g.Text())
		}
	default:
		rest = append(rest, cl.Message())
	}
	fl.Rest = strings.Join(rest, "\n")
	if ex := cl.Exchange; ex != nil {
		fl.Exchange = strings.Join(ex.Lines, "\n")
		fl.Stderr = ex.Stderr
	}
	return fl
}

type pageData struct {
	Facts    Facts
	Result   *verdict.Result
	Summary  string
	Badge    template.HTML
	Failures []failure
	// Listed are the clauses that failed as a known list expects (known failing, known flaky).
	Listed []failure
	NotRun []failure
	// NotOffered are the clauses of an op or aid the port does not declare: neither a pass nor
	// a failure, never counted among the failed clauses.
	NotOffered []failure
	Lines      map[string]string
}

func writeHTML(w io.Writer, r *verdict.Result, f Facts) error {
	d := pageData{Facts: f, Result: r, Summary: Summary(r), Badge: template.HTML(Badge(r)), Lines: map[string]string{}}
	for _, c := range r.Contracts {
		d.Lines[c.ID] = status(c)
		for _, cl := range c.Clauses {
			switch {
			case cl.Status == verdict.StatusNotRun && cl.Reason != "":
				d.NotRun = append(d.NotRun, failure{Contract: c.ID + " " + c.Name, Clause: cl, Rest: cl.Reason})
			case cl.Status == verdict.StatusNotOffered:
				d.NotOffered = append(d.NotOffered, failure{Contract: c.ID + " " + c.Name, Clause: cl, Rest: cl.Reason})
			case cl.Failed():
				d.Failures = append(d.Failures, failureOf(c.ID+" "+c.Name, cl, cl.Status))
			case listed(cl):
				d.Listed = append(d.Listed, failureOf(c.ID+" "+c.Name, cl, cl.Status))
			}
		}
	}
	return page.Execute(w, d)
}

// The page leads with the verdict: the badge and the facts, then every failed clause with its
// rule, expected and got and the lines exchanged, then the clauses that could not run; the
// contracts follow, collapsed when they passed. Long lines wrap; nothing scrolls sideways.
var page = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>EchoMQ conformance — {{.Facts.Port}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:72em;padding:0 1em;color:#222}
h1{font-size:1.4em;margin:.4em 0;overflow-wrap:anywhere}h2{font-size:1.15em;margin:1.4em 0 .5em}
header{display:flex;flex-wrap:wrap;gap:1em;align-items:center}
table.facts{border-collapse:collapse;margin:.5em 0;table-layout:fixed;width:100%}
table.facts td{padding:.1em 1em .1em 0;vertical-align:top;overflow-wrap:anywhere}
table.facts td:first-child{width:8em;color:#555}
.verdict{font-weight:bold;font-size:1.1em}.ok{color:#176e2a}.bad{color:#b3261e}
.card{border:1px solid #ddd;border-left:4px solid #b3261e;border-radius:6px;margin:.8em 0;padding:.5em .9em}
.card.notrun{border-left-color:#8a6d00}.card.known{border-left-color:#8a6d00}
.card h3{font-size:1em;margin:.2em 0;overflow-wrap:anywhere}
dl{margin:.3em 0}dt{font-weight:bold;font-size:12px;color:#555;margin-top:.4em}dd{margin:0}
pre,code{font:12px/1.4 ui-monospace,monospace}
pre{background:#f6f6f6;padding:.5em .6em;margin:.2em 0;white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word}
.c{border:1px solid #ddd;border-radius:6px;margin:.4em 0;padding:.3em .9em}
.c summary{cursor:pointer;overflow-wrap:anywhere}.st{font-weight:bold}
.PASS{color:#176e2a}.FAIL,.HARNESS{color:#b3261e}.NOT,.KNOWN{color:#8a6d00}.offered{color:#555}
.rule{color:#555;font-style:italic;overflow-wrap:anywhere}
ul{margin:.3em 0;padding-left:1.2em}li{margin:.15em 0;overflow-wrap:anywhere}
</style></head><body>
<header><div class="badge">{{.Badge}}</div>
<h1>EchoMQ conformance — {{.Facts.Port}}</h1></header>
<p class="verdict {{if .Result.Certified}}ok{{else}}bad{{end}}">{{.Summary}}{{if .Result.Certified}} — certified{{else}} — not certified{{end}}</p>
<table class="facts">
<tr><td>port</td><td>{{.Facts.Port}} ({{.Facts.PortRuntime}})</td></tr>
{{if .Facts.PortCommand}}<tr><td>command</td><td><code>{{.Facts.PortCommand}}</code></td></tr>{{end}}
<tr><td>kit</td><td>{{.Facts.KitVersion}}</td></tr>
<tr><td>bundle</td><td>{{.Facts.Bundle}} <code>{{.Facts.BundleDigest}}</code></td></tr>
<tr><td>valkey</td><td>{{.Facts.ValkeyVersion}}</td></tr>
{{if .Facts.Mutant}}<tr><td>mutant</td><td>{{.Facts.Mutant}}</td></tr>{{end}}
{{if .Result.Spread}}<tr><td>cluster</td><td>{{.Result.Spread}}</td></tr>{{end}}
<tr><td>clauses run</td><td>{{.Result.ClausesRun}} of {{.Result.ClausesTotal}}</td></tr>
</table>
{{if .Result.Stale}}<h2 class="bad">Stale known lists ({{len .Result.Stale}}): the run fails until they are updated</h2>
<ul>{{range .Result.Stale}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Failures}}<h2 class="bad" data-first-screen="failures">Failed clauses ({{len .Failures}})</h2>
{{range .Failures}}{{template "card" .}}{{end}}{{end}}
{{if .Listed}}<h2>Failed as the known lists expect ({{len .Listed}}): they do not fail the run</h2>
{{range .Listed}}{{template "card" .}}{{end}}{{end}}
{{if .NotRun}}<h2>Clauses not run ({{len .NotRun}})</h2>
{{range .NotRun}}<div class="card notrun" id="{{.Clause.ID}}"><h3><span class="st NOT">NOT RUN</span> <code>{{.Clause.ID}}</code></h3><pre>{{.Rest}}</pre></div>
{{end}}{{end}}
{{if .NotOffered}}<h2 data-first-screen="not-offered">Not offered ({{len .NotOffered}}): neither passed nor failed</h2>
<p>These clauses drive an optional op or test aid the port's hello does not declare (PROTOCOL.md Part B, "Capabilities"): they neither pass nor fail their contract and stand in no certification's way.</p>
<ul class="offered">{{range .NotOffered}}<li id="{{.Clause.ID}}"><code>{{.Clause.ID}}</code> — {{.Rest}}</li>
{{end}}</ul>{{end}}
<h2>Contracts</h2>
{{range .Result.Contracts}}{{if ne .Status.String "NOT RUN"}}
<details class="c"{{if ne .Status.String "PASS"}} open{{end}}><summary><span class="st {{.Status}}">{{index $.Lines .ID}}</span> <b>{{.ID}} {{.Name}}</b></summary>
<div class="rule">{{.Rule}}</div>{{if .Note}}<div><b>note:</b> {{.Note}}</div>{{end}}
<ul>{{range .Clauses}}<li><span class="{{.Status}}">{{.Status}}</span> {{if .Message}}<a href="#{{.ID}}"><code>{{.ID}}</code></a>{{else}}<code>{{.ID}}</code>{{end}}</li>{{end}}</ul></details>
{{end}}{{end}}
</body></html>
{{define "card"}}<div class="card{{if ne .Verdict "FAIL"}}{{if ne .Verdict "HARNESS ERROR"}} known{{end}}{{end}}" id="{{.Clause.ID}}">
<h3><span class="st {{.Verdict}}">{{.Verdict}}</span> <code>{{.Clause.ID}}</code></h3>
<dl>{{if .Rule}}<dt>RULE</dt><dd><pre>{{.Rule}}</pre></dd>{{end}}
{{if .Expected}}<dt>EXPECTED</dt><dd><pre>{{.Expected}}</pre></dd>{{end}}
{{if .Got}}<dt>GOT</dt><dd><pre>{{.Got}}</pre></dd>{{end}}
{{if .Rest}}<dt>DETAILS</dt><dd><pre>{{.Rest}}</pre></dd>{{end}}
{{if .Exchange}}<dt>EXCHANGE — the JSON lines of this clause (→ the kit's requests, ← the port's replies)</dt><dd><pre>{{.Exchange}}</pre></dd>{{end}}
{{if .Stderr}}<dt>STDERR — the port's, last lines</dt><dd><pre>{{.Stderr}}</pre></dd>{{end}}
{{if .Clause.Wire}}<dt>WIRE TRACE — the port's commands, seen by MONITOR</dt><dd><details><summary>{{.Contract}}: show the trace</summary><pre>{{.Clause.Wire}}</pre></details></dd>{{end}}
</dl></div>
{{end}}`))
