// Documents: collections with their counts, a page of documents (cursor paging), one opened as JSON to edit and save with the
// etag it was read at (a change made meanwhile is a conflict shown here, never overwritten), deleted, or a new one created.
import { api, h, fmt, docPath, ApiError } from '../studio.js';

export const help = 'HTTP-API';

export async function render(main, [collection, ...id]) {
  const { json: stats } = await api('GET', '/stats');
  main.append(h`<div>
    <h1>Documents</h1>
    <div class="row">
      <div class="panel" style="width:220px"><h2>Collections</h2><table id="collections"><tbody></tbody></table>
        <div class="toolbar"><button id="new" data-role="write">New document</button></div></div>
      <div class="panel grow"><h2 id="listTitle">Pick a collection</h2>
        <table id="docs"><thead><tr><th>id</th><th class="num">etag</th><th>last modified</th><th>document</th></tr></thead><tbody></tbody></table>
        <div class="toolbar"><button class="ghost" id="more" hidden>Next page</button></div></div>
      <div class="panel grow" id="editor" hidden>
        <h2><input id="docId" placeholder="collection/id" style="width:100%"></h2>
        <textarea class="code" id="docJson" spellcheck="false"></textarea>
        <p id="docMessage"></p>
        <div class="toolbar"><span class="muted" id="docEtag"></span><span class="spacer"></span>
          <button class="ghost" id="revisions">Revisions</button>
          <button id="save" data-role="write">Save</button><button class="danger" id="delete" data-role="write">Delete</button></div>
        <table id="versions" hidden><thead><tr><th class="num">etag</th><th>last modified</th><th>document</th></tr></thead><tbody></tbody></table>
      </div>
    </div></div>`);
  main.querySelector('#collections tbody').replaceChildren(...Object.entries(stats.collections ?? {}).map(([name, count]) =>
    h`<tr class="pick"><td><a href="#/documents/${encodeURIComponent(name)}">${name}</a></td><td class="num">${fmt(count)}</td></tr>`));
  let etag = null;
  const editor = main.querySelector('#editor'), message = main.querySelector('#docMessage');
  const open = async (docId) => {
    const r = await api('GET', docPath(docId));
    etag = r.headers.get('ETag');
    const body = { ...r.json };
    delete body['@metadata'];
    main.querySelector('#docId').value = docId;
    main.querySelector('#docId').readOnly = true;
    main.querySelector('#docJson').value = JSON.stringify(body, null, 2);
    main.querySelector('#docEtag').textContent = `etag ${etag} · ${r.json['@metadata']?.['@last-modified'] ?? ''}`;
    message.textContent = '';
    message.className = '';
    editor.hidden = false;
  };
  main.querySelector('#new').onclick = () => {
    etag = null;
    Object.assign(main.querySelector('#docId'), { value: collection ? `${collection}/` : '', readOnly: false });
    main.querySelector('#docJson').value = '{\n  \n}';
    main.querySelector('#docEtag').textContent = 'new document';
    editor.hidden = false;
  };
  main.querySelector('#save').onclick = async () => {
    const docId = main.querySelector('#docId').value.trim();
    let body;
    try { body = JSON.parse(main.querySelector('#docJson').value); }
    catch (e) { Object.assign(message, { className: 'error', textContent: `Not JSON: ${e.message}` }); return; }
    try {
      const r = await api('PUT', docPath(docId), body, etag ? { 'If-Match': etag } : {});
      etag = r.headers.get('ETag') ?? etag;
      Object.assign(message, { className: 'ok', textContent: `Saved (etag ${etag}).` });
      main.querySelector('#docEtag').textContent = `etag ${etag}`;
    } catch (e) {
      const conflict = e instanceof ApiError && e.status === 409;
      Object.assign(message, { className: 'error', textContent: conflict
        ? `Conflict: the document changed since it was opened (${e.message}). Nothing was overwritten: reopen it to see the current version.`
        : e.message });
    }
  };
  // The versions the change log still holds, newest first (GET /docs/{id}/revisions); one clicked shows in the editor to compare.
  main.querySelector('#revisions').onclick = async () => {
    const docId = main.querySelector('#docId').value.trim();
    const { json } = await api('GET', docPath(docId, '&revisions=true&pageSize=25'));
    const table = main.querySelector('#versions');
    table.querySelector('tbody').replaceChildren(...(json.results ?? json).map(v => {
      const m = v['@metadata'];
      const row = h`<tr class="pick"><td class="num">${m['@etag']}</td><td>${m['@last-modified']}</td><td class="json">${JSON.stringify(v).slice(0, 160)}</td></tr>`;
      row.onclick = () => {
        const body = { ...v };
        delete body['@metadata'];
        main.querySelector('#docJson').value = JSON.stringify(body, null, 2);
        Object.assign(message, { className: 'muted', textContent: `Showing the version at etag ${m['@etag']}: saving it writes it back as the current version (if the document has not changed since it was opened).` });
      };
      return row;
    }));
    table.hidden = false;
  };
  main.querySelector('#delete').onclick = async () => {
    const docId = main.querySelector('#docId').value.trim();
    if (!confirm(`Delete ${docId}?`)) return;
    try {
      await api('DELETE', docPath(docId), undefined, etag ? { 'If-Match': etag } : {});
      editor.hidden = true;
      location.hash = `#/documents/${encodeURIComponent(collection ?? '')}`;
    } catch (e) { Object.assign(message, { className: 'error', textContent: e.message }); }
  };
  if (!collection) return;
  main.querySelector('#listTitle').textContent = collection;
  let cursor = null;
  const page = async () => {
    const { json } = await api('GET', `/docs?collection=${encodeURIComponent(collection)}&pageSize=25${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    for (const d of json.results) {
      const m = d['@metadata'];
      const row = h`<tr class="pick"><td>${m['@id']}</td><td class="num">${m['@etag']}</td><td>${m['@last-modified']}</td><td class="json">${JSON.stringify(d).slice(0, 200)}</td></tr>`;
      row.onclick = () => { location.hash = `#/documents/${encodeURIComponent(collection)}/${encodeURIComponent(m['@id'])}`; };
      main.querySelector('#docs tbody').append(row);
    }
    cursor = json.nextCursor;
    main.querySelector('#more').hidden = !cursor;
  };
  main.querySelector('#more').onclick = page;
  await page();
  if (id.length) await open(id.join('/'));
}
