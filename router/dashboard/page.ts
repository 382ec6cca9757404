/**
 * The router's live fleet page (GET /): one self-contained HTML document (inline CSS and
 * script, no external assets, works offline) fed by /ws/cluster-status. It renders with
 * textContent only, so worker ids or model names can never inject markup.
 */

/** The page's HTML. */
import { liveSocketScript } from "@svc/shared/dashboard";

export const FLEET_DASHBOARD_HTML: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fleet</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; background: #f6f7f9; }
  h1 { font-size: 1.3rem; margin: 0 0 .3rem; }
  h2 { font-size: 1rem; margin: 1.4rem 0 .4rem; }
  .muted { color: #667; }
  .pill { display: inline-block; padding: 0 .5rem; margin: .1rem .2rem .1rem 0; border-radius: 1rem; font-size: .8rem; background: #dde; }
  .live, .healthy, .serving, .loaded { background: #cfe9d3; }
  .down, .draining, .failed { background: #f4d0d0; }
  .degraded, .loading, .unloading { background: #fbe7b5; }
  .cards { display: flex; flex-wrap: wrap; gap: .6rem; }
  .card { background: #fff; border: 1px solid #dde; border-radius: 6px; padding: .5rem .8rem; min-width: 8rem; }
  .card b { display: block; font-size: 1.15rem; }
  table { border-collapse: collapse; background: #fff; width: 100%; }
  th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #e4e6ea; vertical-align: top; }
  th { font-weight: 600; background: #eef0f3; }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
  .bar { width: 7rem; height: .5rem; background: #e4e6ea; border-radius: .25rem; overflow: hidden; margin-top: .2rem; }
  .bar > div { height: 100%; background: #5b8def; }
</style>
</head>
<body>
<h1>Fleet <span id="status" class="pill" data-testid="fleet-status">–</span>
  <span id="conn" class="pill down" data-testid="connection">connecting</span></h1>
<div class="muted" id="router"></div>
<div class="cards" style="margin-top:.8rem">
  <div class="card">workers<b id="workers-count" data-testid="worker-count">–</b></div>
  <div class="card">serving<b id="serving-count">–</b></div>
  <div class="card">GPUs<b id="gpu-count">–</b></div>
  <div class="card">requests/s<b id="rate">–</b></div>
  <div class="card">loaded models<b id="loaded-count">–</b></div>
</div>
<h2>Pools</h2>
<table><thead><tr><th>pool</th><th>bundle</th><th class="num">workers</th><th class="num">serving</th>
<th class="num">queue</th><th class="num">req/s</th></tr></thead><tbody id="pools" data-testid="pools"></tbody></table>
<h2>Workers</h2>
<table><thead><tr><th>worker</th><th>pool / profile</th><th>state</th><th>models</th><th class="num">queue</th>
<th class="num">in flight</th><th title="the worker's own: its resident memory on CPU, its GPUs' memory on CUDA">memory</th><th class="num">req/s</th><th class="num">seen</th></tr></thead>
<tbody id="workers" data-testid="workers"></tbody></table>
<h2>Pending demand</h2>
<table><thead><tr><th>pool</th><th>bundle</th><th class="num">requests waiting</th></tr></thead>
<tbody id="demand"></tbody></table>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const bytes = (n) => {
  const u = ["B", "KB", "MB", "GB", "TB"]; let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + u[i];
};
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text != null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = c instanceof Node ? el("td") : el("td", c && c.text != null ? c.text : c, c && c.cls);
    if (c instanceof Node) td.appendChild(c);
    tr.appendChild(td);
  }
  return tr;
}
function fill(tbody, rows, empty, span) {
  tbody.replaceChildren(...rows);
  if (rows.length === 0) {
    const tr = document.createElement("tr"); const td = el("td", empty, "muted");
    td.colSpan = span; tr.appendChild(td); tbody.appendChild(tr);
  }
}
function memory(w) {
  const box = el("div");
  if (!w.memory_total_bytes) { box.textContent = "–"; return box; }
  box.appendChild(el("div", bytes(w.memory_used_bytes) + " / " + bytes(w.memory_total_bytes)));
  const bar = el("div", null, "bar"); const fillEl = el("div");
  fillEl.style.width = Math.min(100, 100 * w.memory_used_bytes / w.memory_total_bytes).toFixed(0) + "%";
  bar.appendChild(fillEl); box.appendChild(bar);
  return box;
}
/** The worker's id, linking to its own page (its advertised URL, http(s) only). */
function workerLink(w) {
  const scheme = w.url.slice(0, w.url.indexOf(":"));
  if (scheme !== "http" && scheme !== "https") return el("span", w.id);
  const a = el("a", w.id);
  a.setAttribute("href", w.url + "/"); // navigation on click: nothing is loaded
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  a.dataset.testid = "worker-link";
  a.title = "the worker's own page, " + w.url + " (a worker with SVC_WORKER_API_KEY asks for it there)";
  return a;
}
function models(w) {
  const box = el("div");
  if (w.models.length === 0) box.appendChild(el("span", "none loaded", "muted"));
  for (const m of w.models) {
    const p = el("span", m.name + " · " + m.state + (m.queue_depth ? " · q" + m.queue_depth : ""), "pill " + m.state);
    p.dataset.model = m.name;
    box.appendChild(p);
  }
  return box;
}
function render(s) {
  const st = $("status"); st.textContent = s.status; st.className = "pill " + s.status;
  $("router").textContent = "router " + s.router_id + " · v" + s.version + " · directory " + s.directory;
  $("workers-count").textContent = String(s.worker_count);
  $("serving-count").textContent = String(s.healthy_workers);
  $("gpu-count").textContent = String(s.gpu_count);
  $("rate").textContent = s.requests_per_s.toFixed(1);
  $("loaded-count").textContent = String(s.loaded_models.length);
  fill($("pools"), s.pools.map((p) => row([p.pool, p.bundle, { text: p.workers, cls: "num" },
    { text: p.serving, cls: "num" }, { text: p.queue_depth, cls: "num" },
    { text: p.requests_per_s.toFixed(1), cls: "num" }])), "no pools: no worker is registered", 6);
  fill($("workers"), s.workers.map((w) => {
    const state = el("span", w.state, "pill " + w.state);
    const tr = row([workerLink(w), w.pool + " / " + w.machine_profile, state, models(w),
      { text: w.queue_depth, cls: "num" }, { text: w.in_flight, cls: "num" }, memory(w),
      { text: w.requests_per_s.toFixed(1), cls: "num" }, { text: (w.last_seen_ms_ago / 1000).toFixed(1) + " s", cls: "num" }]);
    tr.dataset.workerId = w.id;
    tr.dataset.state = w.state;
    tr.title = w.url + " · bundle " + w.bundle + " · v" + w.version;
    return tr;
  }), "no workers", 9);
  fill($("demand"), s.pending_demand.map((d) => row([d.machine_profile, d.bundle, { text: d.pending, cls: "num" }])),
    "none", 3);
}
${liveSocketScript("/ws/cluster-status")}
</script>
</body>
</html>
`;
