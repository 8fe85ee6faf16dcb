// API keys (admin): list, create (the key is shown once, here), delete.
import { api, h, path } from '../studio.js';

export const help = 'SECURITY';

export async function render(main) {
  main.append(h`<div>
    <h1>Keys</h1>
    <div class="panel"><table id="keys"><thead><tr><th>name</th><th>role</th><th>created</th><th></th></tr></thead><tbody></tbody></table></div>
    <div class="panel"><h2>New key</h2><div class="toolbar"><input id="keyName" placeholder="name, e.g. grafana">
      <select id="keyRole"><option>read</option><option>write</option><option>admin</option></select><button id="createKey">Create</button></div>
      <p id="created"></p></div>
  </div>`);
  const list = async () => {
    const { json } = await api('GET', '/keys');
    main.querySelector('#keys tbody').replaceChildren(...json.map(k => {
      const row = h`<tr><td>${k.name}</td><td>${k.role}</td><td>${k.created}</td><td><button class="danger">Delete</button></td></tr>`;
      row.querySelector('button').onclick = async () => {
        if (!confirm(`Delete the key ${k.name}? Whoever uses it is refused from now on.`)) return;
        await api('DELETE', path`/keys/${k.name}`);
        list();
      };
      return row;
    }));
  };
  main.querySelector('#createKey').onclick = async () => {
    const out = main.querySelector('#created');
    try {
      const { json } = await api('POST', '/keys', { name: main.querySelector('#keyName').value.trim(), role: main.querySelector('#keyRole').value });
      out.className = 'ok';
      out.replaceChildren(h`<span>Key for ${json.name} (${json.role}), shown this once: <code>${json.key}</code></span>`);
      list();
    } catch (e) { Object.assign(out, { className: 'error', textContent: e.message }); }
  };
  await list();
}
