/**
 * The worker's live page (GET /): one self-contained HTML document (inline CSS and script, no
 * external assets, works offline) fed by /ws/status. It renders with textContent only, so
 * model names or config values can never inject markup.
 */

import { liveSocketScript } from "@svc/shared/dashboard";
import { compareModelRows, latencyQuantile, shownState } from "./view.ts";

/** The page's HTML. */
export const WORKER_DASHBOARD_HTML: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Worker status</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; background: #f6f7f9; }
  h1 { font-size: 1.3rem; margin: 0 0 .3rem; }
  h2 { font-size: 1rem; margin: 1.4rem 0 .4rem; }
  .muted { color: #667; }
  .pill { display: inline-block; padding: 0 .5rem; border-radius: 1rem; font-size: .8rem; background: #dde; }
  .live { background: #cfe9d3; } .down { background: #f4d0d0; }
  .loaded { background: #cfe9d3; } .loading, .unloading { background: #fbe7b5; }
  .draining, .failed { background: #f4d0d0; }
  .not-cached { background: #e6e0f2; }
  .reason { display: block; font-size: .8rem; color: #923; max-width: 40rem; }
  .cards { display: flex; flex-wrap: wrap; gap: .6rem; }
  .card { background: #fff; border: 1px solid #dde; border-radius: 6px; padding: .5rem .8rem; min-width: 8rem; }
  .card b { display: block; font-size: 1.15rem; }
  table { border-collapse: collapse; background: #fff; width: 100%; }
  th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #e4e6ea; }
  th { font-weight: 600; background: #eef0f3; }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
</style>
</head>
<body>
<h1>Worker <span id="version" class="muted"></span>
  <span id="conn" class="pill down" data-testid="connection">connecting</span></h1>
<div class="muted" id="server"></div>
<div class="cards" style="margin-top:.8rem">
  <div class="card">device<b id="gpu">–</b></div>
  <div class="card">uptime<b id="uptime">–</b></div>
  <div class="card">resident memory<b id="rss">–</b></div>
  <div class="card">event-loop lag<b id="lag">–</b></div>
  <div class="card">in flight<b id="inflight">–</b></div>
  <div class="card">requests/s<b id="rate">–</b></div>
</div>
<h2>GPUs</h2>
<table><thead><tr><th>#</th><th>name</th><th>type</th><th class="num">util %</th>
<th class="num">memory</th><th class="num">temp °C</th></tr></thead><tbody id="gpus"></tbody></table>
<h2>Models</h2>
<table><thead><tr><th>model</th><th>state</th><th>device</th><th class="num">memory</th>
<th class="num">queue</th><th class="num">requests</th><th class="num">p50 ms*</th><th class="num">p95 ms*</th>
</tr></thead><tbody id="models" data-testid="models"></tbody></table>
<p class="muted">* request latency (total), estimated from the latency histogram by linear
interpolation inside the bucket that holds the percentile (as Prometheus' histogram_quantile):
between two bucket bounds, not a measured value.</p>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const bytes = (n) => {
  const u = ["B", "KB", "MB", "GB", "TB"]; let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + u[i];
};
const duration = (s) => {
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return h ? h + "h " + m + "m" : m ? m + "m " + (s % 60) + "s" : s + "s";
};
function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text == null ? "–" : String(text);
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}
function fill(tbody, rows, empty) {
  tbody.replaceChildren();
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = cell(tr, empty); td.colSpan = 8; td.className = "muted";
    tbody.appendChild(tr);
  }
  for (const r of rows) tbody.appendChild(r);
}
${latencyQuantile.toString()}
${shownState.toString()}
${compareModelRows.toString()}
/** Request totals of the last ~2 s of frames: the rate is taken over that window, not one tick. */
const history = [];
function render(m) {
  $("version").textContent = "v" + m.server.version;
  $("server").textContent = "pid " + m.server.pid + " · user " + m.server.user + " · " + m.server.working_dir;
  $("gpu").textContent = m.gpu;
  $("uptime").textContent = duration(m.server.uptime_seconds);
  const p = m.process || {};
  $("rss").textContent = p.rss_bytes != null ? bytes(p.rss_bytes) : "–";
  $("lag").textContent = p.event_loop_lag_ms != null ? p.event_loop_lag_ms.toFixed(1) + " ms" : "–";
  $("inflight").textContent = p.in_flight != null ? String(p.in_flight) : "–";
  const conn = $("conn");
  if (p.draining) { conn.textContent = "draining"; conn.className = "pill draining"; }
  const reqs = (m.counters && m.counters.svc_requests_total) || [];
  const perModel = new Map();
  let total = 0;
  for (const s of reqs) {
    total += s.value;
    perModel.set(s.labels.model, (perModel.get(s.labels.model) || 0) + s.value);
  }
  history.push([m.timestamp, total]);
  while (history.length > 2 && m.timestamp - history[0][0] > 2) history.shift();
  const [t0, n0] = history[0];
  if (m.timestamp > t0) $("rate").textContent = ((total - n0) / (m.timestamp - t0)).toFixed(1);
  const lat = new Map();
  const dur = m.histograms && m.histograms.svc_request_duration_seconds;
  if (dur) {
    for (const s of dur.series) {
      if (s.labels.phase !== "total") continue;
      const cur = lat.get(s.labels.model) || { count: 0, counts: dur.buckets.map(() => 0), bounds: dur.buckets };
      cur.count += s.count;
      s.counts.forEach((c, i) => cur.counts[i] += c);
      lat.set(s.labels.model, cur);
    }
  }
  fill($("gpus"), m.gpus.map((g) => {
    const tr = document.createElement("tr");
    cell(tr, g.index); cell(tr, g.name); cell(tr, g.gpu_type);
    cell(tr, g.utilization_percent.toFixed(0), "num");
    cell(tr, bytes(g.memory_used_bytes) + " / " + bytes(g.memory_total_bytes), "num");
    cell(tr, g.temperature_c, "num");
    return tr;
  }), "no GPU: models run on the CPU");
  fill($("models"), [...m.models].sort(compareModelRows).map((md) => {
    const tr = document.createElement("tr");
    tr.dataset.model = md.name;
    cell(tr, md.name);
    const shown = shownState(md);
    const st = cell(tr, ""); const pill = document.createElement("span");
    pill.className = "pill " + shown.replace(" ", "-"); pill.textContent = shown; st.replaceChildren(pill);
    const reason = shown === "failed" ? md.last_error.code + ": " + md.last_error.message
      : shown === "not cached" ? md.weights_reason : null;
    if (reason) {
      const why = document.createElement("span");
      why.className = "reason"; why.dataset.testid = "reason";
      why.textContent = reason;
      st.appendChild(why);
    }
    cell(tr, md.device); cell(tr, md.memory_bytes ? bytes(md.memory_bytes) : "–", "num");
    cell(tr, md.queue_depth, "num"); cell(tr, perModel.get(md.name) || 0, "num");
    const l = lat.get(md.name), p50 = latencyQuantile(l, 0.5), p95 = latencyQuantile(l, 0.95);
    cell(tr, p50 == null ? null : p50.toFixed(1), "num"); cell(tr, p95 == null ? null : p95.toFixed(1), "num");
    return tr;
  }), "no models");
}
${liveSocketScript("/ws/status")}
</script>
</body>
</html>
`;
