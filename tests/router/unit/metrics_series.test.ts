/**
 * The router's prom-client metrics: exposition, named labels, the series cap, pruning, values
 * read back as the exposition shows them, and histograms summed from workers' cumulative counts.
 */
import assert from "node:assert/strict";
import {
  CappedCounter,
  CappedGauge,
  CappedHistogram,
  createRouterMetrics,
  MAX_SERIES_PER_METRIC,
  MetricsRegistry,
} from "#router/metrics/mod.ts";
import { SummedHistogram } from "#router/metrics/series.ts";

Deno.test("metrics: text exposition of counters, gauges and histograms", async () => {
  const reg = new MetricsRegistry();
  const c = new CappedCounter(reg.registry, { name: "t_total", help: "help c", labelNames: ["a"] });
  const g = new CappedGauge(reg.registry, { name: "t_gauge", help: "help g" });
  const h = new CappedHistogram(reg.registry, {
    name: "t_seconds",
    help: "help h",
    labelNames: ["e"],
    buckets: [0.1, 1],
  });
  c.inc({ a: "x" });
  c.inc({ a: "x" }, 2);
  c.inc({ a: 'q"\\\n' });
  reg.onCollect(() => g.set({}, 7));
  h.observe({ e: "e1" }, 0.05);
  h.observe({ e: "e1" }, 0.5);
  h.observe({ e: "e1" }, 5);
  const text = await reg.render();
  assert.match(text, /# TYPE t_total counter\n/);
  assert.match(text, /t_total\{a="x"\} 3\n/);
  assert.match(text, /t_total\{a="q\\"\\\\\\n"\} 1\n/);
  assert.match(text, /t_gauge 7\n/);
  assert.match(text, /t_seconds_bucket\{le="0.1",e="e1"\} 1\n/);
  assert.match(text, /t_seconds_bucket\{le="1",e="e1"\} 2\n/);
  assert.match(text, /t_seconds_bucket\{le="\+Inf",e="e1"\} 3\n/);
  assert.match(text, /t_seconds_count\{e="e1"\} 3\n/);
  assert.equal(await c.value({ a: "x" }), 3);
  assert.equal(await h.count({ e: "e1" }), 3);
  assert.equal(await g.value(), 7);
  assert.equal(reg.contentType, "text/plain; version=0.0.4; charset=utf-8");
});

Deno.test("metrics: series per metric are capped", async () => {
  const reg = new MetricsRegistry();
  const c = new CappedCounter(reg.registry, { name: "cap_total", help: "h", labelNames: ["k"] });
  for (let i = 0; i < MAX_SERIES_PER_METRIC + 50; i++) c.inc({ k: String(i) });
  const samples = (await reg.render()).split("\n").filter((l) => l.startsWith("cap_total{"));
  assert.equal(samples.length, MAX_SERIES_PER_METRIC);
  assert.equal(await c.value({ k: String(MAX_SERIES_PER_METRIC + 10) }), 0);
  assert.equal(await c.value({ k: String(MAX_SERIES_PER_METRIC - 1) }), 1);
});

Deno.test("metrics: retainWhere drops the series of labels no longer live", async () => {
  const reg = new MetricsRegistry();
  const c = new CappedCounter(reg.registry, {
    name: "t_total",
    help: "test",
    labelNames: ["worker_id", "kind"],
  });
  c.inc({ worker_id: "a", kind: "x" });
  c.inc({ worker_id: "b", kind: "x" }, 2);
  c.inc({ worker_id: "c", kind: "y" }, 3);
  c.retainWhere("worker_id", new Set(["b"]));
  assert.equal(await c.value({ worker_id: "a", kind: "x" }), 0);
  assert.equal(await c.value({ worker_id: "b", kind: "x" }), 2);
  assert.equal(await c.value({ worker_id: "c", kind: "y" }), 0);
  const text = await reg.render();
  assert.ok(!text.includes('worker_id="a"'));
  assert.match(text, /t_total\{worker_id="b",kind="x"\} 2\n/);
  // A pruned series starts again from zero if its worker comes back.
  c.inc({ worker_id: "a", kind: "x" });
  assert.equal(await c.value({ worker_id: "a", kind: "x" }), 1);
});

Deno.test("metrics: the router's set keeps its names, labels and process series", async () => {
  const m = createRouterMetrics();
  m.requests.inc({ endpoint: "encode", status: "200", machine_profile: "cpu" });
  m.duration.observe({ endpoint: "encode" }, 0.003);
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
      "svc_router_relay_requests_total",
      "svc_router_provisioning_responses_total",
      "svc_router_pending_demand",
      "svc_router_workers",
      "svc_router_worker_connections_total",
      "svc_router_provision_webhook_total",
      "svc_router_body_bytes_held",
    ]
  ) assert.match(text, new RegExp(`# TYPE ${name} `), name);
});

Deno.test("metrics: a summed histogram exposes the cumulative counts added to it", async () => {
  const reg = new MetricsRegistry();
  const h = new SummedHistogram(reg.registry, {
    name: "t_batch",
    help: "h",
    labelNames: ["model"],
    buckets: [1, 4],
  });
  h.add({ model: "m" }, [1, 3], 9, 4);
  h.add({ model: "m" }, [0, 1], 3, 1);
  const text = await reg.render();
  assert.match(text, /# TYPE t_batch histogram\n/);
  assert.match(text, /t_batch_bucket\{le="1",model="m"\} 1\n/);
  assert.match(text, /t_batch_bucket\{le="4",model="m"\} 4\n/);
  assert.match(text, /t_batch_bucket\{le="\+Inf",model="m"\} 5\n/);
  assert.match(text, /t_batch_sum\{model="m"\} 12\n/);
  assert.match(text, /t_batch_count\{model="m"\} 5\n/);
});

Deno.test("metrics: a capped gauge's reset frees its series for new label values", async () => {
  const reg = new MetricsRegistry();
  const g = new CappedGauge(reg.registry, { name: "g_cap", help: "h", labelNames: ["k"] });
  for (let i = 0; i < MAX_SERIES_PER_METRIC; i++) g.set({ k: String(i) }, 1);
  g.set({ k: "late" }, 5);
  assert.equal(await g.value({ k: "late" }), 0);
  g.reset();
  g.set({ k: "late" }, 5);
  assert.equal(await g.value({ k: "late" }), 5);
  const samples = (await reg.render()).split("\n").filter((l) => l.startsWith("g_cap{"));
  assert.deepEqual(samples, ['g_cap{k="late"} 5']);
});
