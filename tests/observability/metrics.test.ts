/** GET /metrics: the API's series (docs/observability.md) move with traffic; process metrics are real under Deno. */
import assert from "node:assert/strict";
import { startFakeBackendWorker, startTestWorker } from "../worker/harness.ts";
import { has, type Sample, scrape, sum } from "./helpers/prom_text.ts";
import { encode, items } from "./helpers/traffic.ts";
import { waitFor } from "../helpers/wait.ts";

const MODEL = "fixture/dense";
const REQ = { model: MODEL, endpoint: "encode" };

Deno.test("metrics: request counts, phase histograms, batch sizes and tokens move with traffic", async () => {
  const w = await startTestWorker();
  try {
    const before = await scrape(w.url);
    assert.equal(sum(before, "svc_requests_total", { ...REQ, status: "200" }), 0);
    for (const n of [1, 3, 5]) {
      assert.equal((await encode(w.url, MODEL, { items: items(n) })).status, 200);
    }
    const bad = await encode(w.url, MODEL, { items: [] });
    assert.equal(bad.status, 400);
    const after = await scrape(w.url);

    assert.equal(sum(after, "svc_requests_total", { ...REQ, status: "200" }), 3);
    assert.equal(sum(after, "svc_requests_total", { endpoint: "encode", status: "400" }), 1);
    // Served requests have every phase; the rejected one only has `total`.
    for (const [phase, n] of [["queue", 3], ["tokenization", 3], ["inference", 3], ["total", 4]]) {
      const labels = { ...REQ, phase: String(phase) };
      assert.equal(sum(after, "svc_request_duration_seconds_count", labels), n, String(phase));
      assert.equal(sum(after, "svc_request_duration_seconds_bucket", { ...labels, le: "+Inf" }), n);
      assert.ok(sum(after, "svc_request_duration_seconds_sum", labels) > 0, `${phase} sum`);
    }
    // The buckets are cumulative and a real latency lands in a finite one.
    const totalBuckets = after.filter((s) =>
      s.name === "svc_request_duration_seconds_bucket" && s.labels.phase === "total" &&
      s.labels.model === MODEL
    );
    assert.ok(totalBuckets.some((s) => s.labels.le !== "+Inf" && s.value > 0));
    const batchCount = sum(after, "svc_batch_size_count", { model: MODEL });
    assert.ok(batchCount >= 3, `batches ${batchCount}`);
    assert.equal(sum(after, "svc_batch_size_sum", { model: MODEL }), 9, "items per batch sum");
    assert.ok(sum(after, "svc_tokens_processed_total", { model: MODEL }) >= 9 * 8);
    assert.equal(sum(after, "svc_model_loaded", { model: MODEL, device: "cpu" }), 1);
    assert.ok(sum(after, "svc_model_memory_bytes", { model: MODEL, device: "cpu" }) > 0);
    assert.equal(sum(after, "svc_model_loaded", { model: "fixture/sparse", device: "cpu" }), 0);
    assert.ok(has(after, "svc_queue_depth", { model: MODEL }));
  } finally {
    await w.close();
  }
});

Deno.test("metrics: svc_queue_depth shows items waiting while a long request runs", async () => {
  // Batches of 2 items: a 400-item request keeps the queue non-empty for a while.
  const w = await startTestWorker({ SVC_MAX_BATCH_ITEMS: "2" });
  try {
    assert.equal((await encode(w.url, MODEL, { items: items(1) })).status, 200);
    const big = encode(w.url, MODEL, { items: items(400, 24) });
    let peak = 0;
    await waitFor(
      async () => {
        peak = sum(await scrape(w.url), "svc_queue_depth", { model: MODEL });
        return peak > 0;
      },
      "queue depth above zero",
      { everyMs: 10 },
    );
    assert.ok(peak <= 400, `peak ${peak}`);
    assert.equal((await big).status, 200);
    assert.equal(sum(await scrape(w.url), "svc_queue_depth", { model: MODEL }), 0);
  } finally {
    await w.close();
  }
});

Deno.test("metrics: process memory, uptime and event-loop lag are real under Deno", async () => {
  // Process series only: no model runs, so the fake backend serves.
  const w = await startFakeBackendWorker();
  try {
    const first = await scrape(w.url);
    const rss = sum(first, "process_resident_memory_bytes");
    // Same process (in-process worker): the gauge must match Deno's own reading closely.
    const actual = Deno.memoryUsage().rss;
    assert.ok(rss > 10 * 1024 * 1024, `rss ${rss}`);
    assert.ok(Math.abs(rss - actual) / actual < 0.5, `rss ${rss} vs ${actual}`);
    assert.ok(sum(first, "process_heap_used_bytes") > 0);
    const start = sum(first, "process_start_time_seconds");
    assert.ok(Math.abs(start - Date.now() / 1000) < 120, `start ${start}`);
    const up1 = sum(first, "svc_process_uptime_seconds");

    // Block the event loop for 400 ms: the next lag sample must land above 0.25 s (a busy
    // machine only makes the lag larger).
    const slowBefore = slowLagSamples(first);
    const until = performance.now() + 400;
    while (performance.now() < until) { /* busy on purpose */ }
    let second = first;
    await waitFor(async () => {
      second = await scrape(w.url);
      return slowLagSamples(second) > slowBefore;
    }, "a lag sample above 250 ms");
    assert.ok(
      sum(second, "svc_event_loop_lag_seconds_count") >
        sum(first, "svc_event_loop_lag_seconds_count"),
    );
    assert.ok(sum(second, "svc_process_uptime_seconds") > up1);
  } finally {
    await w.close();
  }
});

/** Lag samples above 0.25 s (count minus the 0.25 bucket). */
function slowLagSamples(s: Sample[]): number {
  return sum(s, "svc_event_loop_lag_seconds_count") -
    sum(s, "svc_event_loop_lag_seconds_bucket", { le: "0.25" });
}
