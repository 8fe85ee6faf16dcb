// ETL tasks with their state, position, lag and last error (enable, disable, reset), and subscriptions with their client and
// position; refreshed every 2 seconds.
import { api, h, esc, fmt, session } from '../studio.js';

export const help = 'ETL';

/** Every task with its live stats (admin: connections hold passwords, so tasks are an admin's to see). */
export async function tasksWithStats() {
  const { json: tasks } = await api('GET', '/etl/tasks');
  return Promise.all(tasks.map(async t => ({ ...t, stats: (await api('GET', `/etl/tasks/${encodeURIComponent(t.name)}/stats`).catch(() => ({ json: null }))).json })));
}

export async function render(main) {
  main.append(h(`<div>
    <h1>ETL &amp; subscriptions</h1>
    <div class="panel" data-role="admin"><h2>ETL tasks</h2>
      <table id="tasks"><thead><tr><th>task</th><th>connection</th><th>state</th><th class="num">last etag</th><th class="num">lag</th><th class="num">sent</th><th>last error</th><th></th></tr></thead><tbody></tbody></table></div>
    <div class="panel"><h2>Subscriptions</h2>
      <table id="subscriptions"><thead><tr><th>subscription</th><th>query</th><th>client</th><th class="num">acknowledged</th><th class="num">lag</th></tr></thead><tbody></tbody></table></div>
  </div>`));
  const tick = async () => {
    if (session.role === 'admin') {
      const tasks = await tasksWithStats().catch(() => []);
      main.querySelector('#tasks tbody').replaceChildren(...tasks.map(t => {
        const s = t.stats ?? {};
        const row = h(`<tr data-task="${esc(t.name)}"><td>${esc(t.name)}</td><td>${esc(t.connection)}</td><td><span class="badge ${esc(s.state)}">${esc(s.state ?? t.state ?? '')}</span></td>
          <td class="num">${fmt(s.lastProcessedEtag)}</td><td class="num lag">${fmt(s.lag)}</td><td class="num">${fmt(s.messagesSent)}</td>
          <td class="error">${esc(s.lastError ?? '')}</td>
          <td><button class="ghost toggle">${s.state === 'disabled' ? 'Enable' : 'Disable'}</button> <button class="ghost reset">Reset</button></td></tr>`);
        row.querySelector('.toggle').onclick = async () => {
          const { json: definition } = await api('GET', `/etl/tasks/${encodeURIComponent(t.name)}`);
          await api('PUT', `/etl/tasks/${encodeURIComponent(t.name)}`, { ...definition, disabled: s.state !== 'disabled' });
          tick();
        };
        row.querySelector('.reset').onclick = async () => {
          if (!confirm(`Send every document of ${t.name} again from the start?`)) return;
          await api('POST', `/etl/tasks/${encodeURIComponent(t.name)}/reset`);
          tick();
        };
        return row;
      }));
    }
    const { json: subscriptions } = await api('GET', '/subscriptions').catch(() => ({ json: [] }));
    main.querySelector('#subscriptions tbody').replaceChildren(...subscriptions.map(s => h(`<tr><td>${esc(s.definition?.name)}</td>
      <td class="json">${esc(s.definition?.query)}</td><td>${esc(s.worker ?? '')}</td><td class="num">${fmt(s.acknowledgedDocuments)}</td><td class="num">${fmt(s.lag)}</td></tr>`)));
  };
  await tick();
  const timer = setInterval(tick, 2000);
  return () => clearInterval(timer);
}
