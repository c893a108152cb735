package debugpage

import "html/template"

// page renders a view as HTML. html/template escapes every value by its
// context (text, attribute, URL), so keys, errors and names are shown as
// text, never as markup; and every text the page did not write goes
// through the display rule (display.go: text, long, attr), so it shows
// as visible characters, bounded, the whole one click away. The key
// column has a fixed width, the error, log and trigger columns bounded
// ones, in which long text wraps anywhere, so that no value pushes the
// other columns aside. It has no script.
var page = template.Must(template.New("page").Funcs(displayFuncs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>converge: controllers</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1b1b1b; overflow-wrap: break-word; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
h2 { font-size: 1.2em; margin: 1.4em 0 .4em; }
.meta, .health { color: #444; }
.health span { margin-right: 1.2em; }
.bad { color: #b00020; font-weight: 600; }
.ok { color: #1b7f3b; }
form { background: #f4f5f7; padding: .6em .8em; border-radius: 6px; margin: .8em 0; }
form label { margin-right: 1em; }
table { border-collapse: collapse; width: 100%; margin-top: .4em; }
th, td { border-bottom: 1px solid #ddd; padding: .25em .4em; text-align: left; vertical-align: top; }
th { background: #f4f5f7; position: sticky; top: 0; }
td.error { color: #b00020; }
td.error div { min-width: 16em; max-width: 40em; overflow-wrap: anywhere; }
td.key { font-family: ui-monospace, monospace; font-size: 13px; }
td.key div.key { width: 12em; overflow-wrap: anywhere; }
td.log div { min-width: 10em; max-width: 20em; overflow-wrap: anywhere; }
td.triggers div { max-width: 12em; overflow-wrap: anywhere; }
.esc { background: #fff0c2; color: #7a5600; border-radius: 2px; font-family: ui-monospace, monospace; }
details.cut, details.cut > summary { display: inline; }
details.cut > summary { cursor: pointer; }
details.cut[open] .short { display: none; }
details.cut .more { color: #0645ad; text-decoration: underline dotted; }
details.cut .whole { display: block; max-height: 24em; overflow: auto; overflow-wrap: anywhere; }
tr.stale td.key::after { content: " ⚠ stale"; color: #b36b00; }
code { font-size: 12px; }
.pager a, .states a { margin-right: 1em; }
.shard { margin: .6em 0 1em; padding: .4em .8em; border-left: 3px solid #c8ccd2; }
h3 { font-size: 1em; margin: 0 0 .3em; }
.shard summary { cursor: pointer; color: #444; margin-top: .3em; }
.shard table { width: auto; }
tr.bucket.ownerless td { background: #fde7ea; color: #b00020; font-weight: 600; }
tr.bucket.releasing td, tr.bucket.moving td { background: #fff4e0; }
tr.bucket.mine td.state { color: #1b7f3b; }
</style>
</head>
<body>
<h1>converge controllers</h1>
<div class="meta">generated {{.Generated}}
{{- with .Leader}} · leader: <span class="leader">{{if .}}yes{{else}}no{{end}}</span>{{end}}
{{- with .Term}} · term token: <span class="term">{{.}}</span>{{end}}
· <a class="json" href="{{.JSONLink}}">JSON</a></div>
{{- with .Dependencies}}
<div class="health process-dependencies">process dependencies: {{template "dependencies" .}}</div>
{{- template "down" .}}
{{- end}}
<form method="get" action="">
<label>controller <select name="controller"><option value="">all</option>
{{- range .Names}}<option{{if .Checked}} selected{{end}}>{{.Name}}</option>{{end}}</select></label>
<label>key prefix <input name="prefix" value="{{attr .Query.Prefix}}" size="20"></label>
{{- range .StateBoxes}}
<label><input type="checkbox" name="state" value="{{.Name}}"{{if .Checked}} checked{{end}}> {{.Name}}</label>
{{- end}}
<label>sort <select name="sort">
{{- range .SortOptions}}<option{{if .Checked}} selected{{end}}>{{.Name}}</option>{{end}}</select></label>
<label><input type="checkbox" name="desc" value="true"{{if .Query.Desc}} checked{{end}}> descending</label>
<label>page size <input name="size" value="{{.Query.Size}}" size="5"></label>
<button type="submit">apply</button>
</form>
{{- range .Controllers}}
<section class="controller" data-controller="{{attr .Name}}">
<h2>{{text .Name}}</h2>
<div class="health">
<span>synced: {{if .Synced}}<b class="ok">yes</b>{{else}}<b class="bad">no</b>{{end}}</span>
<span>store: {{if eq .Store "ok"}}<b class="ok">ok</b>{{else}}<b class="bad store">{{long .Store}}</b>{{end}}</span>
<span>revision: {{.Revision}}</span>
<span>workers: <span class="workers">{{.Workers}}</span></span>
<span>stale: {{if .Stale}}<b class="bad">{{.Stale}}</b>{{range .StaleKeys}} <code>{{text .}}</code>{{end}}{{else}}0{{end}}</span>
<span class="deleting">deleting: {{if .Deleting}}<b class="bad">{{.Deleting}}</b>{{range .DeletingKeys}} <code>{{text .}}</code>{{end}}{{else}}0{{end}}</span>
<span class="refused">refused keys: {{if .Refused}}<b class="bad">{{.Refused}}</b>{{range .RefusedKeys}} <code>"{{text .}}"</code>{{end}}{{else}}0{{end}}</span>
{{- with .Dependencies}}
<span class="dependencies">dependencies: {{template "dependencies" .}}</span>
{{- end}}
{{- with .Checkpoint}}
<span class="checkpoint {{.State}}">checkpoint: {{if eq .State "active"}}<b class="bad">active</b>{{else}}<b class="ok">standby</b>{{end}}{{if .Seen}}, revision <span class="checkpoint-revision">{{.Revision}}</span>, age <span class="checkpoint-age">{{.Age}}</span>{{else}}, none written yet{{end}}, writes {{.Writes}}, failures {{if .Failures}}<b class="bad">{{.Failures}}</b>{{else}}0{{end}}, damaged {{if .Damaged}}<b class="bad">{{.Damaged}}</b>{{else}}0{{end}}</span>
{{- end}}
{{- with .History}}
<span class="history">store histories: <b class="bad">{{.Changes}}</b>, latest <b class="bad">{{.Reason}}</b> at {{.At}} (revision {{.From}} to {{.To}})</span>
{{- end}}
</div>
{{- template "down" .Dependencies}}
{{- template "checkpoint" .Checkpoint}}
{{- range .Degraded}}<div class="bad degraded">degraded: {{long .}}</div>{{end}}
{{- range .Stuck}}<div class="bad stuck">stuck: <code>{{text .Key}}</code> running for {{.Running}}</div>{{end}}
{{- if and .Ownerless (not .Shard)}}<div class="bad ownerless">ownerless buckets ({{len .Ownerless}}):{{range .Ownerless}} {{.}}{{end}}</div>{{end}}
{{- with .Shard}}
<div class="shard">
<h3>shard</h3>
<div class="health">
<span>replica: <code class="replica">{{text .Replica}}</code></span>
<span>member: {{if .Member}}<b class="ok">yes</b>, term <span class="shard-term">{{.Term}}</span>{{else}}<b class="bad">no</b>{{end}}</span>
<span>assigner: <span class="assigner">{{if .Assigner}}yes{{else}}no{{end}}</span></span>
<span>owns: <span class="owned">{{.Owned}}</span> of {{.Count}} buckets</span>
</div>
<div class="members">members:{{range .Members}} <span class="member"><code>{{text .ID}}</code> {{.Buckets}}{{if .Self}} (this replica){{end}}{{if not .InPlan}} <b class="bad">not in the plan</b>{{end}}</span>{{end}}</div>
{{- if .Ownerless}}
<div class="bad ownerless">ownerless buckets ({{len .Ownerless}}):{{range .Ownerless}} <span class="ownerless-bucket">{{.}}</span>{{end}}</div>
{{- else}}
<div class="ok ownerless-none">every bucket has an owner</div>
{{- end}}
<details class="buckets"{{if .Open}} open{{end}}>
<summary>{{.Count}} buckets:{{range .StateCounts}} {{.Name}} {{.Count}}{{end}}</summary>
<table class="buckets">
<thead><tr><th>bucket</th><th>owner</th><th>epoch</th><th>moves</th><th>target</th><th>state</th></tr></thead>
<tbody>
{{- range .Buckets}}
<tr class="bucket {{.State}}" data-bucket="{{.Bucket}}"><td class="bucket">{{.Bucket}}</td><td class="owner">{{text .Owner}}</td><td class="epoch">{{if .Epoch}}{{.Epoch}}{{end}}</td><td class="moves">{{.Moves}}</td><td class="target">{{text .Target}}</td><td class="state">{{.State}}</td></tr>
{{- end}}
</tbody>
</table>
</details>
</div>
{{- end}}
<div class="states">keys{{with $.Query.Prefix}} under <code>{{text .}}</code>{{end}}:
{{- range .StateLinks}} <a href="{{.URL}}">{{.Name}} {{.Count}}</a>{{end}}</div>
<table>
<thead><tr><th>key</th><th>state</th><th>retries</th><th>next retry</th><th>last outcome</th><th>last error</th><th>last revision</th><th>triggers (next / last)</th><th>pending for</th><th>since success</th><th>last convergence</th><th>logs</th></tr></thead>
<tbody>
{{- range .Keys}}
<tr class="key{{if .Stale}} stale{{end}}" data-key="{{attr .Key}}">
<td class="key"><div class="key">{{text .Key}}</div>{{with .DeletingFor}} <b class="bad deleting-for" title="marked for deletion; its cleanup has not finished">deleting for {{.}}</b>{{end}}</td>
<td class="state">{{.State}}{{if .Dirty}} (dirty){{end}}{{with .Since}}<br><small>since {{.}}</small>{{end}}</td>
<td class="retries">{{.Retries}}</td>
<td class="next-retry">{{if .NextRetry}}{{.NextRetry}}{{with .NextRetryIn}} ({{.}}){{end}}{{end}}</td>
<td class="outcome">{{.LastOutcome}}{{with .LastDuration}}<br><small>took {{.}}</small>{{end}}{{with .TraceID}}<br><small class="trace">trace <code>{{text .}}</code></small>{{end}}</td>
<td class="error">{{with .LastError}}<div>{{long .}}</div>{{end}}</td>
<td class="revision">{{if .LastRevision}}{{.LastRevision}}{{end}}</td>
<td class="triggers"><div>{{range $i, $t := .Triggers}}{{if $i}}, {{end}}{{text $t}}{{end}} / {{range $i, $t := .LastTriggers}}{{if $i}}, {{end}}{{text $t}}{{end}}</div></td>
<td class="pending">{{.PendingFor}}</td>
<td class="since-success">{{.SinceSuccess}}</td>
<td class="convergence">{{.LastConvergence}}</td>
<td class="log"><div>{{if .LogURL}}<a href="{{.LogURL}}"><code>{{long .Log}}</code></a>{{else}}<code>{{long .Log}}</code>{{end}}</div></td>
</tr>
{{- else}}
<tr><td colspan="12" class="none">no keys match</td></tr>
{{- end}}
</tbody>
</table>
<div class="pager"><span class="pageinfo">page {{.Page}} of {{.Pages}} · {{.Matched}} keys match</span>
{{with .Prev}}<a class="prev" href="{{.}}">← previous</a>{{end}}
{{with .Next}}<a class="next" href="{{.}}">next →</a>{{end}}</div>
</section>
{{- else}}
<p class="none">no controller{{with .Query.Controller}} named <code>{{text .}}</code>{{end}}</p>
{{- end}}
</body>
</html>
{{- define "dependencies"}}
{{- range $i, $d := .}}{{if $i}} {{end}}<span class="dependency {{$d.State}}" data-dependency="{{attr $d.Name}}"><code>{{text $d.Name}}</code> {{if eq $d.State "down"}}<b class="bad">down</b>{{else}}<b class="ok">up</b>{{end}}</span>{{end}}
{{- end}}
{{- define "checkpoint"}}
{{- with .}}
{{- if eq .State "active"}}
<div class="bad checkpoint-active">running from a checkpoint of revision {{.Revision}}, age {{.Age}} (seen {{.Seen}}): the store could not be listed at the start and the cache has not caught up with it; keys the checkpoint lacks wait for it</div>
{{- end}}
{{- with .Refused}}
<div class="bad checkpoint-refused">checkpoint refused when the store could not be listed in time: {{long .}}</div>
{{- end}}
{{- with .LastError}}
<div class="bad checkpoint-failed">checkpoint writes failed: {{$.Failures}} (the latest: {{long .}})</div>
{{- end}}
{{- end}}
{{- end}}
{{- define "down"}}
{{- range .}}{{if eq .State "down"}}
<div class="bad dependency-down" data-dependency="{{attr .Name}}">dependency <code>{{text .Name}}</code> down for {{.For}} (since {{.Since}}, failures: {{.Failures}}){{with .LastError}}: {{long .}}{{end}}; no key is reconciled until it is up</div>
{{- end}}{{end}}
{{- end}}
`))
