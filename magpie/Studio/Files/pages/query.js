// Query: an RQL editor (Ctrl+Enter runs it; $parameters as JSON beside it; an error shows where it is), results as a table
// or JSON, facets, highlights, suggestions, totalResults, staleness and timings; the next page by cursor; the whole result
// exported as NDJSON or CSV through the stream.
import { api, h, html, fmt } from '../studio.js';

export const help = 'QUERIES';

const example = "from Posts where Score > 10 order by Score desc";

export async function render(main) {
  main.append(h`<div>
    <h1>Query</h1>
    <div class="panel">
      <div class="row">
        <div class="grow editor"><pre class="code" id="rqlShown" aria-hidden="true"></pre><textarea class="code" id="rql" spellcheck="false" aria-label="RQL"></textarea></div>
        <div style="width:300px"><textarea class="code" id="parameters" spellcheck="false" style="min-height:110px" placeholder='{ "t": "kafka" }' aria-label="parameters"></textarea></div>
      </div>
      <div class="toolbar"><button id="run" title="Ctrl+Enter">Run</button>
        <label><input type="checkbox" id="wait" checked> wait for non-stale results</label>
        <span class="spacer"></span>
        <button class="ghost" id="asTable">Table</button><button class="ghost" id="asJson">JSON</button>
        <button class="ghost" id="ndjson">Export NDJSON</button><button class="ghost" id="csv">Export CSV</button></div>
      <p id="where" class="error"></p>
      <p id="summary" class="muted"></p>
    </div>
    <div class="panel" id="output" style="min-height:200px; overflow-x:auto"></div>
    <div class="toolbar"><button class="ghost" id="next" hidden>Next page</button></div>
  </div>`);
  const rql = main.querySelector('#rql');
  rql.value = sessionStorage.getItem('magpie.rql') ?? example;
  // Highlighting: the text drawn coloured behind a textarea whose own text is transparent (its caret and selection stay).
  const shown = main.querySelector('#rqlShown');
  const paint = () => { shown.innerHTML = highlight(rql.value) + '\n'; shown.scrollTop = rql.scrollTop; };
  rql.addEventListener('input', paint);
  rql.addEventListener('scroll', () => { shown.scrollTop = rql.scrollTop; });
  paint();
  let view = 'table', rows = [], last = null;
  const body = (cursor) => {
    const text = main.querySelector('#parameters').value.trim();
    return { query: rql.value, parameters: text ? JSON.parse(text) : undefined, pageSize: 25, cursor, waitForNonStaleResults: main.querySelector('#wait').checked, timeoutMs: 15000 };
  };
  const run = async (cursor) => {
    sessionStorage.setItem('magpie.rql', rql.value);
    const where = main.querySelector('#where');
    where.textContent = '';
    let request;
    try { request = body(cursor); } catch (e) { where.textContent = `Parameters are not JSON: ${e.message}`; return; }
    const started = performance.now();
    try {
      const { json } = await api('POST', '/queries', request);
      last = json;
      rows = cursor ? rows.concat(json.results) : json.results;
      const shown = performance.now();
      draw();
      main.querySelector('#summary').textContent = `${fmt(json.totalResults)} results${json.isStale ? ' · stale' : ''} · ${json.durationMs} ms on the server`
        + ` · ${Math.round(shown - started)} ms in all${json.resultsFrom ? ` · from the ${json.resultsFrom}` : ''}`
        + (json.timings ? ` · ${Object.entries(json.timings).map(([k, v]) => `${k} ${v} ms`).join(', ')}` : '');
      main.querySelector('#next').hidden = !json.nextCursor;
      main.querySelector('#output').dataset.rendered = String(Math.round(performance.now() - shown));
    } catch (e) {
      const p = e.problem;
      where.textContent = p?.line ? `${e.message}\n${markAt(rql.value, p.line, p.column)}` : e.message;
      if (p?.line) select(rql, p.line, p.column);
    }
  };
  const draw = () => {
    const out = main.querySelector('#output');
    if (!last) return;
    const parts = [];
    if (view === 'json') parts.push(h`<pre class="json">${JSON.stringify(rows, null, 2)}</pre>`);
    else parts.push(table(rows, last.highlightings));
    if (last.facets) parts.push(h`<div><h2>Facets</h2><pre class="json">${JSON.stringify(last.facets, null, 2)}</pre></div>`);
    out.replaceChildren(...parts);
  };
  main.querySelector('#run').onclick = () => run();
  main.querySelector('#next').onclick = () => run(last?.nextCursor);
  main.querySelector('#asTable').onclick = () => { view = 'table'; draw(); };
  main.querySelector('#asJson').onclick = () => { view = 'json'; draw(); };
  rql.addEventListener('keydown', e => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); } });
  main.querySelector('#ndjson').onclick = () => exportAll(body(), 'ndjson');
  main.querySelector('#csv').onclick = () => exportAll(body(), 'csv');
  rql.focus();
}

/**
 * A page of results as a table: the id, the score when the query ranks (search, vector.search, hybrid), then the union of the
 * results' top-level fields (values as JSON), and highlights.
 */
function table(results, highlightings) {
  const columns = [...new Set(results.flatMap(r => Object.keys(r).filter(k => k !== '@metadata')))].slice(0, 8);
  const marked = highlightings ? Object.keys(highlightings) : [];
  const scored = results.some(r => typeof r['@metadata']?.['@index-score'] === 'number');
  const cell = (v) => v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  return h`<table class="results"><thead><tr><th>id</th>${scored ? html`<th>score</th>` : ''}${columns.map(c => html`<th>${c}</th>`)}${marked.map(m => html`<th>${m} (highlights)</th>`)}</tr></thead><tbody>
    ${results.map(r => {
      const id = r['@metadata']?.['@id'] ?? '';
      const link = id ? html`<a href="#/documents/${encodeURIComponent(r['@metadata']['@collection'] ?? '')}/${encodeURIComponent(id)}">${id}</a>` : '';
      const score = scored ? html`<td class="score">${r['@metadata']?.['@index-score']?.toFixed(4) ?? ''}</td>` : '';
      return html`<tr><td>${link}</td>${score}${columns.map(c => html`<td class="json">${cell(r[c])}</td>`)}${marked.map(m => html`<td>${fragments(highlightings[m][id] ?? [])}</td>`)}</tr>`;
    })}</tbody></table>`;
}

/**
 * Highlight fragments as text with their matches marked: the server escapes the document's text and wraps matches in the
 * query's tags; here each fragment is parsed inert (a template runs nothing) and only its text survives, matches in <mark>.
 */
function fragments(list) {
  return list.map((f, i) => {
    const t = document.createElement('template');
    t.innerHTML = String(f);
    const parts = [...t.content.childNodes].map(n => n.nodeType === Node.TEXT_NODE ? n.textContent : html`<mark>${n.textContent}</mark>`);
    return i ? [' … ', ...parts] : parts;
  });
}

/** The query's whole result through the stream, saved as NDJSON or CSV (top-level fields as columns). */
async function exportAll(request, as) {
  const key = sessionStorage.getItem('magpie.key');
  const r = await fetch('/streams/queries', { method: 'POST', headers: { 'Content-Type': 'application/json', ...(key ? { Authorization: 'Bearer ' + key } : {}) }, body: JSON.stringify({ query: request.query, parameters: request.parameters }) });
  let text = await r.text();
  if (as === 'csv') {
    const lines = text.split('\n').filter(Boolean).map(l => JSON.parse(l)).filter(l => !l['@include']);
    const columns = ['@id', ...new Set(lines.flatMap(l => Object.keys(l).filter(k => k !== '@metadata')))];
    const q = (v) => { const s = v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v); return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s; };
    text = [columns.join(','), ...lines.map(l => columns.map(c => q(c === '@id' ? l['@metadata']?.['@id'] : l[c])).join(','))].join('\n') + '\n';
  }
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text], { type: as === 'csv' ? 'text/csv' : 'application/x-ndjson' }));
  a.download = `results.${as}`;
  a.click();
}

const keywords = /^(from|index|where|and|or|not|order|by|asc|desc|select|limit|offset|include|load|as|group|between|in|all|declare|function|update|delete|distinct|true|false|null)$/i;

/** RQL tokens coloured: keywords, 'strings', numbers, $parameters, functions; every token escaped by html``. */
function highlight(text) {
  const out = [];
  let at = 0;
  for (const m of text.matchAll(/('(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?)|(\$\w+)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_@][\w.@]*)(\s*\()?/g)) {
    out.push(text.slice(at, m.index));
    at = m.index + m[0].length;
    const [, str, param, num, word, call] = m;
    if (str) out.push(html`<span class="s">${str}</span>`);
    else if (param) out.push(html`<span class="p">${param}</span>`);
    else if (num) out.push(html`<span class="n">${num}</span>`);
    else if (call) out.push(html`<span class="f">${word}</span>${call}`);
    else out.push(keywords.test(word) ? html`<span class="k">${word}</span>` : word);
  }
  out.push(text.slice(at));
  return html`${out}`;
}

function markAt(text, line, column) {
  const l = text.split('\n')[line - 1] ?? '';
  return `${l}\n${' '.repeat(Math.max(0, column - 1))}^`;
}

function select(area, line, column) {
  const start = area.value.split('\n').slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + Math.max(0, column - 1);
  area.focus();
  area.setSelectionRange(start, start + 1);
}
