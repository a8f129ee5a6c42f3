"""The report page's frame: its style sheet (:data:`STYLE`: the screen, a narrow screen
where tables stack, print) and its HTML around the sections (:data:`PAGE`)."""

STYLE = """
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #1b1b1b;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 20px 28px 48px; }
h1 { font-size: 1.55rem; margin: 0 0 .3rem; }
h2 { font-size: 1.25rem; margin: 2.2rem 0 .6rem; padding-bottom: .25rem;
  border-bottom: 1px solid #d8d8d8; }
h3 { font-size: 1.02rem; margin: 1.4rem 0 .4rem; }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: .9em; }
.kind { font: .78rem ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  color: #444; background: #f0f0f0; border-radius: 3px; padding: 1px 6px;
  vertical-align: middle; }
.base { font-size: .75rem; color: #fff; background: #555; border-radius: 3px;
  padding: 0 5px; }
#summary h2 { margin-top: 1.2rem; }
ul.summary { padding-left: 1.1rem; margin: .3rem 0; }
ul.summary > li { margin: .35rem 0; }
ul.summary ul { padding-left: 1.1rem; margin: .1rem 0; }
ul.summary li { overflow-wrap: anywhere; }
.better { color: #00664a; font-weight: 600; }
.worse { color: #b03a00; font-weight: 600; }
.neutral { color: #555; }
.flag { display: block; color: #8a2b00; font-size: .8rem; white-space: normal; }
td .flag, td .delta { min-width: 8rem; max-width: 13rem; margin-left: auto; white-space: normal; }
.table-wrap:focus-visible { outline: 2px solid #0b5394; outline-offset: 2px; }
ul.summary .flag { display: inline; margin-left: .4em; }
.delta { display: block; color: #3a3a3a; font-size: .76rem; }
ul.summary .delta { display: inline; margin-left: .3em; }
nav.toc ul { margin: .2rem 0 0; padding-left: 1.2rem; columns: 3 14rem; }
nav.toc a { color: #0b5394; }
.figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr));
  gap: 14px 28px; margin: .6rem 0; }
figure.plot { margin: 0; min-width: 0; break-inside: avoid; page-break-inside: avoid; }
figure.plot.wide { grid-column: 1 / -1; }
figure.plot svg { display: block; width: 100%; max-width: 100%; height: auto; }
figure.plot.wide svg { max-width: 980px; }
figcaption { font-size: .84rem; color: #444; margin-top: .2rem; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: .9rem; margin: .5rem 0 .8rem;
  font-variant-numeric: tabular-nums; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e4e4e4; text-align: right;
  vertical-align: top; white-space: nowrap; }
th { font-weight: 600; border-bottom: 1.5px solid #bbb; }
.left { text-align: left; }
.desc { display: block; text-align: left; white-space: normal; min-width: 15rem;
  max-width: 30rem; color: #333; }
td.left { white-space: normal; }
.path { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: .82rem; text-align: left; white-space: normal; word-break: break-all; }
table.runs td { max-width: 26rem; }
ul.merged { margin: 0; padding-left: 1.1rem; }
tr.group td { border-top: 1.5px solid #cfcfcf; }
table.tags th, table.tags td { white-space: normal; padding: 4px 7px; }
.ci { display: block; color: #666; font-size: .76rem; }
.undefined { color: #666; font-style: italic; }
.absent { color: #757575; }
.note { background: #fff7e0; border-left: 3px solid #e69f00; margin: .5rem 0;
  padding: 5px 10px; font-size: .88rem; }
.context { font-size: .88rem; color: #333; max-width: 60rem; }
.context ul { margin: .2rem 0; }
.small { font-size: .82rem; color: #555; max-width: 60rem; }
.weights { font-size: .9rem; color: #333; margin: .25rem 0 .5rem; }
details { margin: .4rem 0 1rem; }
details > summary { cursor: pointer; color: #0b5394; font-size: .92rem; }
details.runs-narrow { display: none; }
@media (max-width: 1100px) {
  table.tags { font-size: .84rem; }
  table.tags th, table.tags td { padding: 4px 4px; }
}
@media (max-width: 700px) {
  main { padding: 12px; }
  .figures { grid-template-columns: 1fr; }
  /* a figure is not shrunk below its smallest text's 11 px: wider ones scroll sideways */
  figure.plot { overflow-x: auto; }
  figure.plot svg { min-width: var(--phone, 0); }
  nav.toc ul { columns: 2 8rem; }
  /* tables stack: a row is a block, each cell a "column: value" line */
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; }
  table.stack { width: 100%; }
  table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden;
    clip: rect(0 0 0 0); }
  table.stack tr { border-bottom: 1.5px solid #cfcfcf; padding: 3px 0; }
  table.stack td { border: 0; padding: 2px 4px; white-space: normal; text-align: right;
    overflow-wrap: anywhere; max-width: none; }
  table.stack td::after { content: ""; display: block; clear: both; }
  table.stack td::before { content: attr(data-label); float: left; max-width: 45%;
    margin-right: .8em; text-align: left; font-weight: 600; color: #333; }
  table.stack td:first-child { text-align: left; font-weight: 600; }
  table.stack td:first-child::before { content: none; }
  table.stack td:empty { display: none; }
  .desc { min-width: 0; max-width: none; }
  /* several runs: their provenance opens on demand, the verdict on the first screen */
  .runs-wide { display: none; }
  details.runs-narrow { display: block; }
}
@media print {
  @page { size: A4; margin: 13mm; }
  body { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  nav.toc { display: none; }
  .figures { grid-template-columns: 1fr 1fr; gap: 8px 16px; }
  /* figures at no less than about 0.8 of their drawn size: two a row when that fits */
  .figures:has(> figure.plot:nth-child(2)) { grid-template-columns:
    repeat(auto-fit, minmax(min(100%, 118mm), 1fr)); }
  /* a figure is never split, and no taller than 0.45 of a page (moving one to the next
     page leaves at most that much blank), its text no smaller than about 7 pt */
  figure.plot { break-inside: avoid; page-break-inside: avoid; }
  figure.plot svg { max-height: 120mm; width: auto; max-width: 100%; margin: 0 auto; }
  /* a wide figure (the tags' plots: a row per tag) takes the page's width, its text at
     the size it was drawn, and may take a page */
  figure.plot.wide svg { max-height: 250mm; width: 100%; }
  /* every tag prints: the tables behind "The other N tags" are opened */
  details::details-content { content-visibility: visible; display: block; }
  details > summary { list-style: none; color: inherit; font-weight: 600; }
  h2, h3 { break-after: avoid; page-break-after: avoid; }
  h2 { margin-top: 1.2rem; }
  tr, .note, .context, #summary li { break-inside: avoid; page-break-inside: avoid; }
  .table-wrap { overflow: visible; }
  .desc { min-width: 12rem; }
  .runs-wide { display: block; }
  details.runs-narrow { display: none; }
  .note, .flag, .better, .worse { -webkit-print-color-adjust: exact;
    print-color-adjust: exact; }
}
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="mpieval report">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<main>
<header>
<h1>mpieval report</h1>
{runs}
</header>
{summary}
<p class=small>Values as written by <code>mpieval eval --json</code>. Under a value, in small
type: its 95% interval. <i>undefined</i>: the value is not defined for the data (null in the
JSON); a dot: the run does not have the value. CTRs are clicks per row (0 to 1).</p>
<nav class=toc><ul>{toc}</ul></nav>
{sections}
</main>
</body>
</html>
"""
