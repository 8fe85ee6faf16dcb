// Indexes: every index with its state, staleness, entries and errors (and retry), side-by-side progress; an editor for the
// maps, reduce and fields that shows a script error at its line and column, "Test" (POST /indexes/test on a sample), save,
// reset and delete (each asked to confirm).
import { api, h, html, fmt, indexPath } from '../studio.js';

export const help = 'INDEXES';

export async function render(main, nameParts) {
  const name = nameParts.join('/');
  const { json: indexes } = await api('GET', '/indexes');
  main.append(h`<div>
    <h1>Indexes</h1>
    <div class="row">
      <div class="panel" style="width:340px">
        <table id="list"><thead><tr><th>index</th><th>state</th><th class="num">entries</th><th class="num">errors</th></tr></thead><tbody></tbody></table>
        <div class="toolbar"><button id="create" data-role="admin">New index</button></div>
      </div>
      <div class="panel grow" id="detail" hidden>
        <div class="toolbar"><input id="name" placeholder="Index name, e.g. Posts/ByTitle" style="flex:1">
          <button class="ghost" id="test">Test on 10 documents</button><button id="save" data-role="admin">Save</button>
          <button class="ghost" id="reset" data-role="admin">Reset</button><button class="danger" id="delete" data-role="admin">Delete</button></div>
        <div id="maps"></div>
        <div class="toolbar"><button class="ghost" id="addMap" data-role="admin">Add a map</button></div>
        <h2>Reduce <span class="muted">(optional: a map/reduce index)</span></h2>
        <textarea class="code" id="reduce" spellcheck="false" style="min-height:80px"></textarea>
        <h2>Fields <span class="muted">(JSON: indexing, store, facet, vector)</span></h2>
        <textarea class="code" id="fields" spellcheck="false" style="min-height:80px"></textarea>
        <p id="message"></p>
        <div id="status"></div>
        <pre class="json" id="trial" hidden></pre>
      </div>
    </div></div>`);
  main.querySelector('#list tbody').replaceChildren(...indexes.map(i => h`<tr class="pick${i.name === name ? ' selected' : ''}">
    <td><a href="#/indexes/${encodeURIComponent(i.name)}">${i.name}</a></td>
    <td><span class="badge ${i.isStale ? 'stale' : i.state === 'running' ? 'current' : i.state}">${i.isStale ? 'stale' : i.state}</span></td>
    <td class="num">${fmt(i.entries)}</td><td class="num">${fmt(i.errorCount)}</td></tr>`));
  const detail = main.querySelector('#detail'), message = main.querySelector('#message');
  const mapBox = (text) => {
    const box = h`<div><h2>Map ${main.querySelectorAll('#maps textarea').length + 1}</h2><textarea class="code map" spellcheck="false" style="min-height:120px"></textarea><p class="where" hidden></p></div>`;
    box.querySelector('textarea').value = text;
    main.querySelector('#maps').append(box);
  };
  const show = (definition) => {
    main.querySelector('#maps').replaceChildren();
    for (const m of definition.maps ?? ['']) mapBox(m);
    main.querySelector('#reduce').value = definition.reduce ?? '';
    main.querySelector('#fields').value = definition.fields && Object.keys(definition.fields).length ? JSON.stringify(definition.fields, null, 2) : '';
    detail.hidden = false;
  };
  const definition = () => {
    const d = { maps: [...main.querySelectorAll('#maps textarea')].map(t => t.value) };
    if (main.querySelector('#reduce').value.trim()) d.reduce = main.querySelector('#reduce').value;
    if (main.querySelector('#fields').value.trim()) d.fields = JSON.parse(main.querySelector('#fields').value);
    return d;
  };
  /** A script error at its place: maps[i] (line l, column c) marks that map's line. */
  const showError = (e) => {
    for (const w of main.querySelectorAll('#maps .where')) w.hidden = true;
    Object.assign(message, { className: 'error', textContent: e.message });
    const which = /maps\[(\d+)\]/.exec(e.message)?.[1];
    const line = e.problem?.line, column = e.problem?.column;
    if (which == null || line == null) return;
    const box = main.querySelectorAll('#maps > div')[Number(which)];
    const area = box?.querySelector('textarea');
    if (!area) return;
    const lines = area.value.split('\n');
    Object.assign(box.querySelector('.where'), { hidden: false, textContent: `line ${line}, column ${column}: ${lines[line - 1] ?? ''}` });
    const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + Math.max(0, (column ?? 1) - 1);
    area.focus();
    area.setSelectionRange(start, start + 1);
  };
  main.querySelector('#addMap').onclick = () => mapBox("map('Collection', doc => ({ Field: doc.Field }))");
  main.querySelector('#create').onclick = () => {
    location.hash = '#/indexes';
    main.querySelector('#name').value = '';
    main.querySelector('#name').readOnly = false;
    show({ maps: ["map('Posts', p => ({ Title: p.Title }))"] });
  };
  main.querySelector('#save').onclick = async () => {
    const target = main.querySelector('#name').value.trim();
    try {
      await api('PUT', indexPath(target), definition());
      const saved = `Saved ${target}. A changed definition builds side by side and switches when caught up.`;
      Object.assign(message, { className: 'ok', textContent: saved });
      for (const w of main.querySelectorAll('#maps .where')) w.hidden = true;
      // A new index: its own page (listed, with its status), which says it was saved.
      if (target !== name) { sessionStorage.setItem('magpie.saved', saved); location.hash = `#/indexes/${encodeURIComponent(target)}`; }
    } catch (e) { if (e instanceof SyntaxError) Object.assign(message, { className: 'error', textContent: `Fields are not JSON: ${e.message}` }); else showError(e); }
  };
  main.querySelector('#test').onclick = async () => {
    try {
      const { json } = await api('POST', '/indexes/test', { definition: definition(), sampleSize: 10 });
      Object.assign(main.querySelector('#trial'), { hidden: false, textContent: JSON.stringify(json, null, 2) });
      Object.assign(message, { className: 'ok', textContent: 'Tested: the entries and errors of a sample, nothing was created.' });
    } catch (e) { showError(e); }
  };
  main.querySelector('#reset').onclick = async () => {
    if (!confirm(`Rebuild ${name} from the beginning?`)) return;
    try { await api('POST', indexPath(name, '/reset')); Object.assign(message, { className: 'ok', textContent: 'Reset: rebuilding.' }); }
    catch (e) { showError(e); }
  };
  main.querySelector('#delete').onclick = async () => {
    if (!confirm(`Delete the index ${name}? Its entries go; documents stay.`)) return;
    try { await api('DELETE', indexPath(name)); location.hash = '#/indexes'; }
    catch (e) { showError(e); }
  };
  if (!name) return;
  const saved = sessionStorage.getItem('magpie.saved');
  sessionStorage.removeItem('magpie.saved');
  if (saved) Object.assign(message, { className: 'ok', textContent: saved });
  const { json: index } = await api('GET', indexPath(name));
  main.querySelector('#name').value = name;
  main.querySelector('#name').readOnly = true;
  show(index.definition ?? {});
  const status = index.status ?? index;
  const errors = status.errors ?? [];
  main.querySelector('#status').replaceChildren(h`<div>
    <h2>Status</h2>
    <div class="kv"><div>state</div><div>${status.state}${status.failure ? html` <span class="error">${status.failure}</span>` : ''}</div>
      <div>stale</div><div>${status.isStale ? 'yes' : 'no'}</div><div>entries</div><div>${fmt(status.entries)}</div>
      <div>errors</div><div>${fmt(status.errorCount)}</div>
      ${index.replacement ? html`<div>side by side</div><div>a new version builds: ${index.replacement.status?.isStale === false ? 'caught up' : 'catching up'}</div>` : ''}</div>
    ${errors.length ? html`<h2>Failing documents</h2><table><thead><tr><th>document</th><th>error</th></tr></thead><tbody>${errors.map(e =>
      html`<tr><td>${e.documentId ?? e.id}</td><td class="error">${e.message ?? e.error}</td></tr>`)}</tbody></table>
      <div class="toolbar"><button id="retry" data-role="admin">Retry the failed documents</button></div>` : ''}
  </div>`);
  main.querySelector('#retry')?.addEventListener('click', async () => {
    await api('POST', indexPath(name, '/errors/retry'));
    Object.assign(message, { className: 'ok', textContent: 'Retrying the failed documents.' });
  });
}
