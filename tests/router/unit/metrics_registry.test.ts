import assert from "node:assert/strict";
import {
  Counter,
  Gauge,
  Histogram,
  MAX_SERIES_PER_METRIC,
  Registry,
} from "../../../router/metrics_registry.ts";

Deno.test("metrics: text exposition of counters, gauges and histograms", () => {
  const reg = new Registry();
  const c = reg.register(new Counter("t_total", "help c", ["a"]));
  const g = reg.register(new Gauge("t_gauge", "help g"));
  const h = reg.register(new Histogram("t_seconds", "help h", ["e"], [0.1, 1]));
  c.inc(["x"]);
  c.inc(["x"], 2);
  c.inc(['q"\\\n']);
  reg.onCollect(() => g.set([], 7));
  h.observe(["e1"], 0.05);
  h.observe(["e1"], 0.5);
  h.observe(["e1"], 5);
  const text = reg.render();
  assert.match(text, /# TYPE t_total counter\n/);
  assert.match(text, /t_total\{a="x"\} 3\n/);
  assert.match(text, /t_total\{a="q\\"\\\\\\n"\} 1\n/);
  assert.match(text, /t_gauge 7\n/);
  assert.match(text, /t_seconds_bucket\{e="e1",le="0.1"\} 1\n/);
  assert.match(text, /t_seconds_bucket\{e="e1",le="1"\} 2\n/);
  assert.match(text, /t_seconds_bucket\{e="e1",le="\+Inf"\} 3\n/);
  assert.match(text, /t_seconds_count\{e="e1"\} 3\n/);
  assert.equal(c.get(["x"]), 3);
  assert.equal(h.count(["e1"]), 3);
  assert.ok(text.endsWith("\n"));
});

Deno.test("metrics: series per metric are capped", () => {
  const c = new Counter("cap_total", "h", ["k"]);
  for (let i = 0; i < MAX_SERIES_PER_METRIC + 50; i++) c.inc([String(i)]);
  assert.equal(c.render().split("\n").length - 2, MAX_SERIES_PER_METRIC);
});

Deno.test("metrics: retainWhere drops the series of labels no longer live", () => {
  const c = new Counter("t_total", "test", ["worker_id", "kind"]);
  c.inc(["a", "x"]);
  c.inc(["b", "x"], 2);
  c.inc(["c", "y"], 3);
  c.retainWhere(0, new Set(["b"]));
  assert.equal(c.get(["a", "x"]), 0);
  assert.equal(c.get(["b", "x"]), 2);
  assert.equal(c.get(["c", "y"]), 0);
  assert.ok(!c.render().includes('worker_id="a"'));
});
