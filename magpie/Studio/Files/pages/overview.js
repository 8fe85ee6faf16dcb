// Overview: the pipeline as it runs, from what /stats, /indexes and /etl/tasks already say, refreshed every 2 seconds
// (writes per second charted over the last minutes). Each refresh replaces values in place: no layout jumps.
import { api, h, fmt, session } from '../studio.js';
import { tasksWithStats } from './etl.js';

export const help = 'OPERATIONS';

export async function render(main) {
  main.append(h`<div>
    <h1>Overview</h1>
    <div class="tiles">
      <div class="tile"><div class="n" id="docs">–</div><div class="l">documents</div></div>
      <div class="tile"><div class="n" id="rate">–</div><div class="l">writes/s</div></div>
      <div class="tile"><div class="n" id="indexCount">–</div><div class="l">indexes</div></div>
      <div class="tile"><div class="n" id="stale">–</div><div class="l">stale indexes</div></div>
      <div class="tile"><div class="n" id="errors">–</div><div class="l">index errors</div></div>
      <div class="tile"><div class="n" id="etlLag">–</div><div class="l">ETL lag (changes)</div></div>
    </div>
    <div class="panel"><h2>Writes per second, last 5 minutes</h2><canvas class="chart" id="chart" width="1200" height="120"></canvas></div>
    <div class="panel"><h2>Indexes</h2><table id="indexes"><thead><tr><th>index</th><th>state</th><th class="num">entries</th><th class="num">behind (etags)</th><th class="num">errors</th><th>replacement</th></tr></thead><tbody></tbody></table></div>
    <div class="panel" id="etlPanel" data-role="admin"><h2>ETL tasks</h2><table id="etl"><thead><tr><th>task</th><th>state</th><th class="num">lag</th><th>last error</th></tr></thead><tbody></tbody></table></div>
  </div>`);
  const points = [];
  let last = null;
  const tick = async () => {
    const [stats, indexes, etl] = await Promise.all([
      api('GET', '/stats').then(r => r.json).catch(() => null),
      api('GET', '/indexes').then(r => r.json).catch(() => []),
      session.role === 'admin' ? tasksWithStats().catch(() => []) : Promise.resolve([]),
    ]);
    const now = performance.now();
    if (stats) {
      main.querySelector('#docs').textContent = fmt(stats.documents);
      if (last) {
        const rate = Math.max(0, (stats.lastEtag - last.etag) / ((now - last.at) / 1000));
        main.querySelector('#rate').textContent = fmt(Math.round(rate));
        points.push(rate);
        if (points.length > 150) points.shift();
        draw(main.querySelector('#chart'), points);
      }
      last = { etag: stats.lastEtag, at: now };
    }
    main.querySelector('#indexCount').textContent = fmt(indexes.length);
    main.querySelector('#stale').textContent = fmt(indexes.filter(i => i.isStale).length);
    main.querySelector('#errors').textContent = fmt(indexes.reduce((n, i) => n + (i.errorCount ?? 0), 0));
    main.querySelector('#indexes tbody').replaceChildren(...indexes.map(i => h`<tr class="pick" data-name="${i.name}">
      <td><a href="#/indexes/${encodeURIComponent(i.name)}">${i.name}</a></td>
      <td><span class="badge ${i.isStale ? 'stale' : i.state === 'running' ? 'current' : i.state}">${i.isStale ? 'stale' : i.state}</span></td>
      <td class="num">${fmt(i.entries)}</td><td class="num">${fmt(i.lastDocumentEtag != null ? Math.max(0, i.lastDocumentEtag - i.indexedEtag) : null)}</td>
      <td class="num">${fmt(i.errorCount)}</td><td>${i.replacement ? 'building side by side' : ''}</td></tr>`));
    const tasks = Array.isArray(etl) ? etl : [];
    main.querySelector('#etlLag').textContent = tasks.length ? fmt(tasks.reduce((n, t) => n + (t.stats?.lag ?? 0), 0)) : '–';
    main.querySelector('#etl tbody').replaceChildren(...tasks.map(t => h`<tr><td>${t.name}</td><td>${t.stats?.state ?? t.state ?? ''}</td>
      <td class="num">${fmt(t.stats?.lag)}</td><td class="error">${t.stats?.lastError ?? ''}</td></tr>`));
  };
  await tick();
  const timer = setInterval(tick, 2000);
  return () => clearInterval(timer);
}

function draw(canvas, points) {
  const g = canvas.getContext('2d');
  const { width, height } = canvas;
  g.clearRect(0, 0, width, height);
  const max = Math.max(10, ...points);
  g.strokeStyle = '#3554d1';
  g.lineWidth = 2;
  g.beginPath();
  points.forEach((p, i) => {
    const x = width - (points.length - 1 - i) * (width / 150);
    const y = height - 4 - (p / max) * (height - 12);
    i ? g.lineTo(x, y) : g.moveTo(x, y);
  });
  g.stroke();
  g.fillStyle = '#687083';
  g.font = '12px system-ui';
  g.fillText(`max ${Math.round(max).toLocaleString('en')}/s`, 6, 14);
}
