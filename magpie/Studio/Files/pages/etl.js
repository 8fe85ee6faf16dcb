// ETL tasks with their state, position, lag and last error (enable, disable, reset), queue sinks with what they received,
// applied and dead-lettered (enable, disable), and subscriptions with their client and position; refreshed every 2 seconds.
import { api, h, fmt, path, session } from '../studio.js';

export const help = 'ETL';

/** Every task with its live stats (admin: connections hold passwords, so tasks are an admin's to see). */
export async function tasksWithStats() {
  const { json: tasks } = await api('GET', '/etl/tasks');
  return Promise.all(tasks.map(async t => ({ ...t, stats: (await api('GET', path`/etl/tasks/${t.name}/stats`).catch(() => ({ json: null }))).json })));
}

/** Every queue sink with its live stats (admin, as tasks: they name connections and hold scripts). */
export async function sinksWithStats() {
  const { json: sinks } = await api('GET', '/sinks');
  return Promise.all(sinks.map(async s => ({ ...s, stats: (await api('GET', path`/sinks/${s.name}/stats`).catch(() => ({ json: null }))).json })));
}

/** The newest of a task's or sink's recent errors (a document's script error, a dead-lettered message's reason, with its id), else why it stopped. */
function newestError(stats) {
  const recent = (stats.recentErrors ?? []).at(-1);
  if (!recent) return stats.lastError ?? '';
  const about = recent.messageId ? ` (message ${recent.messageId})` : recent.documentId ? ` (document ${recent.documentId})` : '';
  return recent.message + about;
}

/** Disables or enables an ETL task or a sink: its definition put back as it is, but for "disabled". */
async function setDisabled(path, disabled) {
  const { json: definition } = await api('GET', path);
  await api('PUT', path, { ...definition, disabled });
}

export async function render(main) {
  main.append(h`<div>
    <h1>ETL, sinks &amp; subscriptions</h1>
    <div class="panel" data-role="admin"><h2>ETL tasks</h2>
      <table id="tasks"><thead><tr><th>task</th><th>connection</th><th>state</th><th class="num">last etag</th><th class="num">lag</th><th class="num">sent</th><th>last error</th><th></th></tr></thead><tbody></tbody></table></div>
    <div class="panel" data-role="admin"><h2>Queue sinks</h2>
      <table id="sinks"><thead><tr><th>sink</th><th>reads</th><th>state</th><th class="num">lag</th><th class="num">received</th><th class="num">applied</th><th class="num">dead-lettered</th><th>last error</th><th></th></tr></thead><tbody></tbody></table></div>
    <div class="panel"><h2>Subscriptions</h2>
      <table id="subscriptions"><thead><tr><th>subscription</th><th>query</th><th>client</th><th class="num">acknowledged</th><th class="num">lag</th></tr></thead><tbody></tbody></table></div>
  </div>`);
  const tick = async () => {
    if (session.role === 'admin') {
      const tasks = await tasksWithStats().catch(() => []);
      main.querySelector('#tasks tbody').replaceChildren(...tasks.map(t => {
        const s = t.stats ?? {};
        const row = h`<tr data-task="${t.name}"><td>${t.name}</td><td>${t.connection}</td><td><span class="badge ${s.state}">${s.state ?? t.state ?? ''}</span></td>
          <td class="num">${fmt(s.lastProcessedEtag)}</td><td class="num lag">${fmt(s.lag)}</td><td class="num">${fmt(s.messagesSent)}</td>
          <td class="error">${newestError(s)}</td>
          <td><button class="ghost toggle">${s.state === 'disabled' ? 'Enable' : 'Disable'}</button> <button class="ghost reset">Reset</button></td></tr>`;
        row.querySelector('.toggle').onclick = async () => {
          await setDisabled(path`/etl/tasks/${t.name}`, s.state !== 'disabled');
          tick();
        };
        row.querySelector('.reset').onclick = async () => {
          if (!confirm(`Send every document of ${t.name} again from the start?`)) return;
          await api('POST', path`/etl/tasks/${t.name}/reset`);
          tick();
        };
        return row;
      }));
    }
    if (session.role === 'admin') {
      const sinks = await sinksWithStats().catch(() => []);
      main.querySelector('#sinks tbody').replaceChildren(...sinks.map(k => {
        const s = k.stats ?? {};
        const error = newestError(s);
        const row = h`<tr data-sink="${k.name}"><td>${k.name}</td><td>${k.connection}: ${(k.sources ?? []).join(', ')}</td>
          <td><span class="badge ${s.state}">${s.state ?? k.state ?? ''}</span></td><td class="num lag">${fmt(s.lag)}</td>
          <td class="num received">${fmt(s.messagesReceived)}</td><td class="num applied">${fmt(s.messagesApplied)}</td><td class="num dead">${fmt(s.deadLettered)}</td>
          <td class="error">${error}</td><td><button class="ghost toggle">${s.state === 'disabled' ? 'Enable' : 'Disable'}</button></td></tr>`;
        row.querySelector('.toggle').onclick = async () => {
          await setDisabled(path`/sinks/${k.name}`, s.state !== 'disabled');
          tick();
        };
        return row;
      }));
    }
    const { json: subscriptions } = await api('GET', '/subscriptions').catch(() => ({ json: [] }));
    main.querySelector('#subscriptions tbody').replaceChildren(...subscriptions.map(s => h`<tr><td>${s.definition?.name}</td>
      <td class="json">${s.definition?.query}</td><td>${s.worker ?? ''}</td><td class="num">${fmt(s.acknowledgedDocuments)}</td><td class="num">${fmt(s.lag)}</td></tr>`));
  };
  await tick();
  const timer = setInterval(tick, 2000);
  return () => clearInterval(timer);
}
