// Studio's rendering fuzzed in the browser it runs in: random strings (biased to markup, quotes, entities, URLs and odd code
// points) go through the one way user data reaches the page — the h/html templates in every context pages use, path/docPath/
// indexPath for API calls, markdown() for help — and each must come back as the same text, never as markup. Run by
// StudioRenderingFuzzTests (a fixed number of inputs in CI) and `bash bench/fuzz.sh studio <minutes>`.
import { h, html, path, docPath, indexPath } from './studio.js';
import { markdown } from './markdown.js';

const tokens = ['<', '>', '"', "'", '`', '&', '&amp;', '&lt;', '&#39;', '<script>alert(1)</script>', '</td>', '</textarea>', '<img src=x onerror=alert(1)>',
  '${1}', 'javascript:alert(1)', '/', '..', '../', '%2F', '%', '?', '#', '=', ' ', '\n', '\t', '\u0000', '\u2028', '\ud83d\ude00', '\ud800',
  'é', 'data-x', '<!--', '-->', '<![CDATA[', '<svg/onload=alert(1)>', '[a](javascript:x)', '**', '`code`', '| a | b |', '# ', '- ', '```'];

function random(seed) {
  let s = seed >>> 0 || 1;
  return () => { s ^= s << 13; s ^= s >>> 17; s ^= s << 5; return (s >>> 0) / 4294967296; };
}

function input(next) {
  let out = '';
  const n = Math.floor(next() * 12);
  for (let i = 0; i < n; i++)
    out += next() < 0.6 ? tokens[Math.floor(next() * tokens.length)] : String.fromCharCode(Math.floor(next() * (next() < 0.8 ? 128 : 0xffff)));
  return out;
}

/** One input through every context; returns what went wrong, or null. */
function check(s) {
  // Lone surrogates cannot be percent-encoded (encodeURIComponent throws): ids are well-formed UTF-16, Magpie refuses others.
  const wellFormed = !/[\ud800-\udfff]/.test(s);
  const row = h`<tr data-x="${s}" class="badge ${s}"><td>${s}</td><td>${[s, html`<b>${s}</b>`]}</td><td><a href="#/documents/${wellFormed ? encodeURIComponent(s) : ''}">${s}</a></td></tr>`;
  if (!row || row.tagName !== 'TR') return 'the row is not one <tr>';
  const cells = row.querySelectorAll('td');
  // What HTML parsing itself normalises (CR to LF, then NUL dropped or replaced) is not the template's doing; in that order, as
  // the parser does: "\r\u0000\n" is two line breaks, not one.
  const norm = (t) => t.replace(/\r\n?/g, '\n').replace(/[\u0000\ufffd]/g, '');
  if (cells.length !== 3 || row.querySelectorAll('*').length !== 5) return `markup from the data: ${row.outerHTML}`;
  if (norm(row.dataset.x) !== norm(s)) return `attribute changed: ${JSON.stringify(row.dataset.x)}`;
  if (norm(cells[0].textContent) !== norm(s)) return `text changed: ${JSON.stringify(cells[0].textContent)}`;
  if (norm(cells[1].textContent) !== norm(s) + norm(s)) return `array text changed: ${JSON.stringify(cells[1].textContent)}`;
  if (wellFormed) {
    const href = cells[2].firstElementChild.getAttribute('href');
    if (decodeURIComponent(href.slice('#/documents/'.length)) !== s) return `link changed: ${href}`;
    const base = 'http://magpie.test';
    if (s === '.' || s === '..') {
      let threw = false;
      try { path`/etl/tasks/${s}`; } catch { threw = true; }
      if (!threw) return `a dot segment went into a path: ${s}`;
    }
    const p = s === '.' || s === '..' ? new URL('/etl/tasks/x/stats', base) : new URL(path`/etl/tasks/${s}/stats`, base);
    if (s !== '.' && s !== '..' && (p.pathname.split('/').length !== 5 || decodeURIComponent(p.pathname.split('/')[3]) !== s || p.search || p.hash)) return `path climbed: ${p.href}`;
    const d = new URL(docPath(s), base);
    if (d.pathname !== '/docs' || d.searchParams.get('id') !== s || d.hash) return `document path changed: ${d.href}`;
    // Index names the server takes: its characters, no empty, '.' or '..' segment (those a URL would normalise away).
    const name = s.replace(/[^A-Za-z0-9/._-]/g, '').split('/').filter(x => x && !/^\.\.?$/.test(x)).join('/') || 'x';
    const i = new URL(indexPath(name, '/reset'), base);
    if (!i.pathname.startsWith('/indexes/') || !i.pathname.endsWith('/reset') || i.search || i.hash) return `index path changed: ${i.href}`;
  }
  const t = document.createElement('template');
  t.innerHTML = markdown(s);
  const allowed = new Set(['H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'P', 'PRE', 'CODE', 'STRONG', 'A', 'UL', 'LI', 'TABLE', 'TBODY', 'TR', 'TH', 'TD']);
  for (const el of t.content.querySelectorAll('*')) {
    if (!allowed.has(el.tagName)) return `markdown made <${el.tagName}>`;
    for (const a of el.attributes)
      if (!(el.tagName === 'A' && ['href', 'target', 'rel'].includes(a.name)) || a.name === 'href' && !/^(https?:\/\/|#$)/.test(a.value)) return `markdown made ${el.tagName} ${a.name}=${a.value}`;
  }
  return null;
}

/** Runs until `count` inputs or `ms` milliseconds; the first failures with their inputs. */
export function fuzz({ seed = 1, count = 1000, ms = 60000 } = {}) {
  const next = random(seed);
  const until = performance.now() + ms;
  const failures = [];
  let runs = 0;
  for (; runs < count && performance.now() < until; runs++) {
    const s = input(next);
    let problem;
    try { problem = check(s); } catch (e) { problem = `threw ${e}`; }
    if (problem && failures.length < 10) failures.push({ input: s, problem });
  }
  return { runs, failures };
}
