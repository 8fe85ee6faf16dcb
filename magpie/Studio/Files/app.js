// Magpie Studio: a hash router over one module per page; every call goes through api(), which sends the session's key and asks
// for one when Magpie answers 401. What a key's role may not do is hidden (data-role="write" | "admin").
import { markdown } from './markdown.js';
import { applyRole, h, html, who } from './studio.js';

const pages = {
  overview: () => import('./pages/overview.js'),
  documents: () => import('./pages/documents.js'),
  indexes: () => import('./pages/indexes.js'),
  query: () => import('./pages/query.js'),
  etl: () => import('./pages/etl.js'),
  keys: () => import('./pages/keys.js'),
};
let current = null, cleanup = null, help = 'README';
// The route being drawn: help waits for it, so it opens the docs of the page asked for, not of the one it replaces.
let routing = Promise.resolve();

// Each route draws into a view of its own, put on screen at once (a page shows its frame while it awaits the API) and
// replaced by the next route's: a route still drawing after a later one began draws into a view no longer shown. Two
// routes drawing into the same element left both pages on screen.

async function route() {
  const [, name = 'overview', ...rest] = (location.hash || '#/overview').split('/');
  const load = pages[name] ?? pages.overview;
  if (cleanup) { cleanup(); cleanup = null; }
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === name);
  const main = document.getElementById('main');
  const view = document.createElement('div');
  main.replaceChildren(view);
  const page = await load();
  let done = null;
  try { done = (await page.render(view, rest.map(decodeURIComponent))) ?? null; }
  catch (e) { view.append(h`<div class="panel error">${e.message}</div>`); }
  if (!view.isConnected) { done?.(); return; }
  current = name;
  help = page.help ?? 'README';
  cleanup = done;
  applyRole(main);
}

async function showHelp() {
  await routing.catch(() => {});
  const panel = document.getElementById('helpPanel');
  const r = await fetch(`/studio/docs/${help}.md`);
  document.getElementById('helpTitle').textContent = `${help}.md`;
  document.getElementById('helpBody').innerHTML = r.ok ? markdown(await r.text()) : html`<p class="error">No page ${help}.md</p>`;
  panel.hidden = false;
}

document.getElementById('help').onclick = showHelp;
document.getElementById('helpClose').onclick = () => { document.getElementById('helpPanel').hidden = true; };
addEventListener('keydown', e => { if (e.key === 'F1') { e.preventDefault(); showHelp(); } });
addEventListener('hashchange', () => { routing = route(); });
await who();
routing = route();
await routing;
