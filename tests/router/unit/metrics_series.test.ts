/** The router's prom-client series: exposition, the series cap, pruning and synchronous reads. */
import assert from "node:assert/strict";
import {
  createRouterMetrics,
  MAX_SERIES_PER_METRIC,
  MetricsRegistry,
  SeriesCounter,
  SeriesGauge,
  SeriesHistogram,
} from "../../../router/metrics/mod.ts";

Deno.test("metrics: text exposition of counters, gauges and histograms", async () => {
  const reg = new MetricsRegistry();
  const c = new SeriesCounter(reg.registry, { name: "t_total", help: "help c", labelNames: ["a"] });
  const g = new SeriesGauge(reg.registry, { name: "t_gauge", help: "help g" });
  const h = new SeriesHistogram(reg.registry, {
    name: "t_seconds",
    help: "help h",
    labelNames: ["e"],
    buckets: [0.1, 1],
  });
  c.inc(["x"]);
  c.inc(["x"], 2);
  c.inc(['q"\\\n']);
  reg.onCollect(() => g.set([], 7));
  h.observe(["e1"], 0.05);
  h.observe(["e1"], 0.5);
  h.observe(["e1"], 5);
  const text = await reg.render();
  assert.match(text, /# TYPE t_total counter\n/);
  assert.match(text, /t_total\{a="x"\} 3\n/);
  assert.match(text, /t_total\{a="q\\"\\\\\\n"\} 1\n/);
  assert.match(text, /t_gauge 7\n/);
  assert.match(text, /t_seconds_bucket\{le="0.1",e="e1"\} 1\n/);
  assert.match(text, /t_seconds_bucket\{le="1",e="e1"\} 2\n/);
  assert.match(text, /t_seconds_bucket\{le="\+Inf",e="e1"\} 3\n/);
  assert.match(text, /t_seconds_count\{e="e1"\} 3\n/);
  assert.equal(c.get(["x"]), 3);
  assert.equal(h.count(["e1"]), 3);
  assert.equal(reg.contentType, "text/plain; version=0.0.4; charset=utf-8");
});

Deno.test("metrics: series per metric are capped", async () => {
  const reg = new MetricsRegistry();
  const c = new SeriesCounter(reg.registry, { name: "cap_total", help: "h", labelNames: ["k"] });
  for (let i = 0; i < MAX_SERIES_PER_METRIC + 50; i++) c.inc([String(i)]);
  const samples = (await reg.render()).split("\n").filter((l) => l.startsWith("cap_total{"));
  assert.equal(samples.length, MAX_SERIES_PER_METRIC);
  assert.equal(c.get([String(MAX_SERIES_PER_METRIC + 10)]), 0);
});

Deno.test("metrics: retainWhere drops the series of labels no longer live", async () => {
  const reg = new MetricsRegistry();
  const c = new SeriesCounter(reg.registry, {
    name: "t_total",
    help: "test",
    labelNames: ["worker_id", "kind"],
  });
  c.inc(["a", "x"]);
  c.inc(["b", "x"], 2);
  c.inc(["c", "y"], 3);
  c.retainWhere(0, new Set(["b"]));
  assert.equal(c.get(["a", "x"]), 0);
  assert.equal(c.get(["b", "x"]), 2);
  assert.equal(c.get(["c", "y"]), 0);
  const text = await reg.render();
  assert.ok(!text.includes('worker_id="a"'));
  assert.match(text, /t_total\{worker_id="b",kind="x"\} 2\n/);
  // A pruned series starts again from zero if its worker comes back.
  c.inc(["a", "x"]);
  assert.equal(c.get(["a", "x"]), 1);
});

Deno.test("metrics: the router's set keeps its names, labels and process series", async () => {
  const m = createRouterMetrics();
  m.requests.inc(["encode", "200", "cpu"]);
  m.duration.observe(["encode"], 0.003);
  const text = await m.registry.render();
  assert.match(text, /svc_router_info\{version="[^"]+"\} 1\n/);
  assert.match(text, /svc_router_uptime_seconds \d+\n/);
  assert.match(
    text,
    /svc_router_requests_total\{endpoint="encode",status="200",machine_profile="cpu"\} 1\n/,
  );
  assert.match(
    text,
    /svc_router_request_duration_seconds_bucket\{le="0.005",endpoint="encode"\} 1\n/,
  );
  for (
    const name of [
      "svc_router_upstream_requests_total",
      "svc_router_upstream_errors_total",
      "svc_router_retries_total",
      "svc_router_provisioning_responses_total",
      "svc_router_pending_demand",
      "svc_router_workers",
      "svc_router_worker_connections_total",
      "svc_router_provision_webhook_total",
      "svc_router_body_bytes_held",
    ]
  ) assert.match(text, new RegExp(`# TYPE ${name} `), name);
});
