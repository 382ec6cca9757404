/** The worker page's view helpers (the page embeds these very functions). */
import assert from "node:assert/strict";
import { compareModelRows, latencyQuantile, shownState } from "#worker/dashboard/view.ts";
import { WORKER_DASHBOARD_HTML } from "#worker/dashboard/page.ts";

const BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025];

Deno.test("dashboard view: percentiles interpolate inside the bucket, not its upper bound", () => {
  // 10 requests: 2 at <= 1 ms, 8 more at <= 10 ms (cumulative counts).
  const h = { count: 10, counts: [2, 2, 2, 10, 10], bounds: BOUNDS };
  // p50: target 5 of 10 lies 3/8 into the (5 ms, 10 ms] bucket.
  assert.equal(latencyQuantile(h, 0.5)!.toFixed(4), (5 + 5 * 3 / 8).toFixed(4));
  // p95: 7.5/8 of the way.
  assert.equal(latencyQuantile(h, 0.95)!.toFixed(4), (5 + 5 * 7.5 / 8).toFixed(4));
  // Inside the first bucket the lower edge is 0.
  assert.equal(latencyQuantile({ count: 4, counts: [4, 4, 4, 4, 4], bounds: BOUNDS }, 0.5), 0.5);
  // Beyond the last finite bound: that bound (a lower limit), never Infinity.
  assert.equal(latencyQuantile({ count: 4, counts: [0, 0, 0, 0, 1], bounds: BOUNDS }, 0.95), 25);
  assert.equal(latencyQuantile({ count: 0, counts: [0, 0, 0, 0, 0], bounds: BOUNDS }, 0.5), null);
  assert.equal(latencyQuantile(undefined, 0.5), null);
});

Deno.test("dashboard view: a failed load shows as failed, weights not here as not cached; loaded models come first", () => {
  const err = { code: "MODEL_LOAD_FAILED", message: "Could not fetch 'model.onnx'" };
  const rows = [
    { name: "a/available", state: "available", last_error: null },
    { name: "b/failed", state: "available", last_error: err },
    { name: "c/loaded", state: "loaded" },
    { name: "d/loading", state: "loading" },
    { name: "a/loaded", state: "loaded" },
    { name: "a/remote", state: "available", last_error: null, weights: "not_cached" },
    { name: "e/failed", state: "available", last_error: err, weights: "not_cached" },
  ];
  assert.deepEqual(rows.sort(compareModelRows).map((r) => `${r.name}:${shownState(r)}`), [
    "a/loaded:loaded",
    "c/loaded:loaded",
    "d/loading:loading",
    "b/failed:failed",
    "e/failed:failed",
    "a/available:available",
    "a/remote:not cached",
  ]);
});

Deno.test("dashboard view: the page embeds these functions and says the percentiles are estimates", () => {
  for (const f of [latencyQuantile, shownState, compareModelRows]) {
    assert.ok(WORKER_DASHBOARD_HTML.includes(`function ${f.name}(`), f.name);
  }
  assert.match(WORKER_DASHBOARD_HTML, /linear\s+interpolation inside the bucket/);
  assert.ok(!WORKER_DASHBOARD_HTML.includes("h.bounds[i] * 1000;\n"), "old upper-bound quantile");
});
