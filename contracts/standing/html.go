package standing

import (
	"html/template"
	"io"
	"net/url"
)

// WriteHTML writes standing.html: one self-contained page (no script, nothing fetched) with the
// implementations as columns — their facts and verdict on top, then each contract's clauses as
// rows, a cell per implementation saying its verdict and, for a failure, the rule it breaks
// (linked to that implementation's report.html). A contract whose clauses differ between the
// implementations, or that did not pass everywhere, is open; the others are collapsed.
func (s *Standing) WriteHTML(w io.Writer) error {
	return page.Execute(w, s)
}

var page = template.Must(template.New("standing").Funcs(template.FuncMap{
	"class": verdictClass,
	"short": shortVerdict,
	"open":  openContract,
	// link is a clause in an implementation's report.html: its id (letters, digits, - and /)
	// kept as it is in the fragment, which report.html's cards carry as their id.
	"link": func(report, id string) template.URL {
		return template.URL((&url.URL{Path: report}).EscapedPath() + "#" + id)
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>EchoMQ conformance — implementations side by side</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:80em;padding:0 1em;color:#222}
h1{font-size:1.4em;margin:.4em 0}h2{font-size:1.15em;margin:1.4em 0 .5em}
table{border-collapse:collapse;table-layout:fixed;width:100%}
th,td{border:1px solid #ddd;padding:.25em .45em;vertical-align:top;text-align:left;overflow-wrap:anywhere;word-break:break-word}
th{background:#f6f6f6;font-weight:600}
col.id{width:34%}
code{font:12px/1.4 ui-monospace,monospace}
.PASS{background:#e6f4ea;color:#176e2a}.FAIL,.HARNESS{background:#fce8e6;color:#b3261e}
.KNOWN{background:#fef7e0;color:#8a6d00}.NOTRUN,.CLAIMED{background:#fff;color:#8a6d00}.OFFERED,.ABSENT{background:#f4f4f4;color:#555}
tr.differs td:first-child{border-left:4px solid #8a6d00}
.cert{font-weight:bold}.ok{color:#176e2a}.bad{color:#b3261e}
details{margin:.4em 0;border:1px solid #ddd;border-radius:6px;padding:.3em .6em}
summary{cursor:pointer;overflow-wrap:anywhere}
.pill{display:inline-block;padding:0 .4em;margin:0 .15em;border-radius:4px;font-size:12px}
a{color:inherit}
.rule{display:block;font-size:12px}
ul{margin:.3em 0;padding-left:1.2em}
</style></head><body>
<h1>EchoMQ conformance — implementations side by side</h1>
<p>Each column is one certification folder; each row one clause of the fourteen contracts. A cell gives the clause's verdict there and, for a failure, the rule it breaks (hover for where the rule is written; follow it to that implementation's report). <b>not offered</b> is an optional op or test aid the port does not declare: neither a pass nor a failure. A row whose implementations disagree is marked on its left.</p>
<table data-first-screen="implementations">
<colgroup><col class="id">{{range .Implementations}}<col>{{end}}</colgroup>
<tr><th>implementation</th>{{range .Implementations}}<th>{{.Port}}{{if .Runtime}}<br><small>{{.Runtime}}</small>{{end}}</th>{{end}}</tr>
<tr><td>verdict</td>{{range .Implementations}}<td class="cert {{if .Certified}}ok{{else}}bad{{end}}">CONFORMANCE {{.Passed}}/{{.Total}}{{if .Certified}} — certified{{else}} — not certified{{end}}</td>{{end}}</tr>
<tr><td>clauses</td>{{range .Implementations}}<td>{{.Counts.Pass}} pass · {{.Counts.Fail}} fail{{if .Counts.KnownFailing}} · {{.Counts.KnownFailing}} known failing{{end}}{{if .Counts.KnownFlaky}} · {{.Counts.KnownFlaky}} known flaky{{end}} · {{.Counts.NotOffered}} not offered{{if .Counts.NotRun}} · {{.Counts.NotRun}} not run{{end}}{{if .Counts.NotClaimed}} · {{.Counts.NotClaimed}} not claimed{{end}}{{if .Counts.HarnessError}} · {{.Counts.HarnessError}} harness error{{end}}</td>{{end}}</tr>
<tr><td>kit · bundle</td>{{range .Implementations}}<td>{{.Kit}} · {{.Bundle}}</td>{{end}}</tr>
<tr><td>server</td>{{range .Implementations}}<td>{{.Valkey}}{{if .Cluster}} (cluster){{end}}</td>{{end}}</tr>
<tr><td>folder</td>{{range .Implementations}}<td>{{if .Report}}<a href="{{.Report}}"><code>{{.Folder}}</code></a>{{else}}<code>{{.Folder}}</code>{{end}}</td>{{end}}</tr>
</table>
{{if .Notes}}<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2 data-first-screen="contracts">The contracts, clause by clause</h2>
{{$impls := .Implementations}}
{{range .Contracts}}<details{{if open .}} open{{end}}><summary><b>{{.ID}} {{.Name}}</b> {{range .Statuses}}<span class="pill {{class .}}">{{short .}}</span>{{end}}</summary>
<table><colgroup><col class="id">{{range $impls}}<col>{{end}}</colgroup>
<tr><th>clause</th>{{range $impls}}<th>{{.Port}}</th>{{end}}</tr>
{{range .Clauses}}{{$id := .ID}}<tr{{if not .Agree}} class="differs"{{end}}><td><code>{{.ID}}</code></td>{{range $i, $c := .Cells}}<td class="{{class $c.Verdict}}"{{if $c.Quote}} title="{{$c.Quote}}"{{else if $c.Reason}} title="{{$c.Reason}}"{{end}}>{{short $c.Verdict}}{{if $c.Rule}}<a class="rule" href="{{link (index $impls $i).Report $id}}"><code>{{$c.Rule}}</code></a>{{end}}</td>{{end}}</tr>
{{end}}</table></details>
{{end}}
</body></html>
`))

// verdictClass is a verdict's cell class.
func verdictClass(v string) string {
	switch v {
	case "PASS":
		return "PASS"
	case "FAIL":
		return "FAIL"
	case "HARNESS ERROR":
		return "HARNESS"
	case "KNOWN FAILING", "KNOWN FLAKY":
		return "KNOWN"
	case "NOT RUN (not offered)":
		return "OFFERED"
	case "NOT CLAIMED":
		return "CLAIMED"
	case "":
		return "ABSENT"
	}
	return "NOTRUN"
}

// shortVerdict is a verdict as a cell says it.
func shortVerdict(v string) string {
	switch v {
	case "NOT RUN (not offered)":
		return "not offered"
	case "":
		return "—"
	}
	return v
}

// openContract opens a contract whose clauses differ between the implementations, or that
// failed, was not claimed or failed as listed somewhere.
func openContract(c Contract) bool {
	for _, st := range c.Statuses {
		if cl := verdictClass(st); cl == "FAIL" || cl == "HARNESS" || cl == "CLAIMED" || cl == "KNOWN" {
			return true
		}
	}
	for _, r := range c.Clauses {
		if !r.Agree {
			return true
		}
	}
	return false
}
