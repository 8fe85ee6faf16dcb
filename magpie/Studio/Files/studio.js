// What every page of Studio shares: the session's key and role, the API call that sends the key (and asks for one on 401),
// and small DOM helpers. A module of its own: the entry module (app.js) awaits its first page, which imports these.
export const ranks = { read: 1, write: 2, admin: 3 };
export const session = { role: 'admin', name: null };

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

/** Calls Magpie's HTTP API; JSON bodies both ways. Throws ApiError with the problem body. */
export async function api(method, path, body, headers = {}) {
  const h = { ...headers };
  const key = sessionStorage.getItem('magpie.key');
  if (key) h.Authorization = 'Bearer ' + key;
  if (body !== undefined && !h['Content-Type']) h['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, headers: h, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  if (r.status === 401) {
    await askForKey(r.status);
    return api(method, path, body, headers);
  }
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = text; }
  if (!r.ok) throw new ApiError(r.status, json);
  return { json, headers: r.headers, status: r.status };
}

function askForKey() {
  const dialog = document.getElementById('login');
  return new Promise(resolve => {
    const form = document.getElementById('loginForm');
    form.onsubmit = async e => {
      e.preventDefault();
      const key = document.getElementById('loginKey').value.trim();
      const r = await fetch('/keys/me', { headers: { Authorization: 'Bearer ' + key } });
      if (!r.ok) { document.getElementById('loginError').textContent = 'Magpie does not know this key.'; return; }
      sessionStorage.setItem('magpie.key', key);
      dialog.close();
      await who();
      resolve();
    };
    if (!dialog.open) dialog.showModal();
  });
}

export async function who() {
  try {
    const { json } = await api('GET', '/keys/me');
    session.role = json.role;
    session.name = json.name;
    document.getElementById('who').textContent = json.keysRequired ? `${json.name} (${json.role})` : 'no keys required';
  } catch { /* the API answers; the page shows its errors where they happen */ }
  applyRole(document);
}

/** Hides what the session's role may not do. */
export function applyRole(root) {
  for (const el of root.querySelectorAll('[data-role]')) el.hidden = ranks[session.role] < ranks[el.dataset.role];
}

// User data reaches the page one way: the `h` and `html` tagged templates, which escape every interpolated value unless it is
// itself an `html` fragment (arrays are joined, null/undefined/false draw nothing). Never build markup by string concatenation.
class Html { constructor(text) { this.text = text; } toString() { return this.text; } }
const escapeText = (s) => String(s).replace(/[&<>"'`]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' })[c]);
const piece = (v) => v instanceof Html ? v.text : Array.isArray(v) ? v.map(piece).join('') : v == null || v === false ? '' : escapeText(v);

/** A fragment of markup: the template's literal text as written, every `${value}` escaped (or an html fragment kept). */
export function html(strings, ...values) {
  return new Html(strings.reduce((out, s, i) => out + s + (i < values.length ? piece(values[i]) : ''), ''));
}

/** The first element of an html template, e.g. h`<td>${name}</td>`. */
export function h(strings, ...values) {
  const t = document.createElement('template');
  t.innerHTML = html(strings, ...values).text.trim();
  return t.content.firstElementChild;
}

/**
 * An API path whose `${values}` are each one percent-encoded segment (a '/' in a value is %2F, so an id or name can never
 * climb to another route): path`/etl/tasks/${name}/stats`. Document ids travel as a query parameter instead (docPath).
 */
export function path(strings, ...values) {
  return strings.reduce((out, s, i) => out + s + (i < values.length ? segment(values[i]) : ''), '');
}

// '.' and '..' are dot segments however they are encoded: no name Magpie takes is one (it refuses them), so none is sent.
const segment = (value) => {
  const s = String(value);
  if (s === '.' || s === '..') throw new Error(`'${s}' cannot be sent as a name in a path`);
  return encodeURIComponent(s);
};

/** A document's API path: `/docs?id=…` (RavenDB's form), since an id may hold '/', '..' or anything a path would normalise. */
export const docPath = (id, rest = '') => `/docs?id=${encodeURIComponent(id)}${rest}`;

/** An index's API path: its name's '/'-separated segments each encoded (names cannot hold '.'/'..' segments). */
export const indexPath = (name, rest = '') => `/indexes/${String(name).split('/').map(encodeURIComponent).join('/')}${rest}`;

export const fmt = (n) => n == null ? '–' : Number(n).toLocaleString('en');
