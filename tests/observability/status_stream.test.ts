/** WebSocket /ws/status: ~5 frames/s, every field (zod schema), honest CPU values, one build per tick. */
import assert from "node:assert/strict";
import { StatusMessageSchema } from "@svc/shared/schemas/status";
import { VERSION } from "@svc/shared/version";
import { queryGpus } from "../../worker/telemetry/gpu.ts";
import type { WorkerStatusMessage } from "../../worker/status/message.ts";
import { startTestWorker } from "../worker/harness.ts";
import { encode, items, waitFor } from "./helpers/traffic.ts";
import { recordFrames, sleep, wsUrl } from "./helpers/ws.ts";

const MODEL = "fixture/dense";

Deno.test("status: ~5 frames per second, each valid against the shared schema", async () => {
  const w = await startTestWorker();
  const client = recordFrames(wsUrl(w.url, "/ws/status"));
  try {
    await client.opened;
    assert.equal((await encode(w.url, MODEL, { items: items(2) })).status, 200);
    client.frames.length = 0; // count from here: the model load above took a while
    await sleep(1500);
    const frames = client.frames;
    // 1.5 s at 200 ms is 7-8 frames; allow scheduling noise but not a different rate.
    assert.ok(frames.length >= 6 && frames.length <= 10, `${frames.length} frames in 1.5 s`);
    const gaps = frames.slice(1).map((f, i) => f.at - frames[i].at).sort((a, b) => a - b);
    const median = gaps[Math.floor(gaps.length / 2)];
    assert.ok(median > 150 && median < 260, `median gap ${median} ms`);

    const msgs = frames.map((f) => JSON.parse(f.data) as WorkerStatusMessage);
    for (const m of msgs) StatusMessageSchema.parse(m);
    const last = msgs.at(-1)!;
    assert.ok(Math.abs(last.timestamp - Date.now() / 1000) < 5);
    assert.ok(last.timestamp > 1e9 && last.timestamp < 1e11, "Unix seconds, not ms");
    assert.equal(last.server.version, VERSION);
    assert.equal(last.server.pid, Deno.pid);
    assert.equal(last.server.working_dir, Deno.cwd());
    assert.ok(last.server.user.length > 0);
    assert.ok(Number.isInteger(last.server.uptime_seconds));

    // Honest hardware: whatever nvidia-smi says here (nothing on a CPU machine).
    const gpus = await queryGpus();
    if (gpus.length === 0) {
      assert.deepEqual(last.gpus, []);
      assert.equal(last.gpu, "cpu");
    } else {
      assert.equal(last.gpus.length, gpus.length);
      assert.equal(last.gpu, gpus[0].gpu_type);
    }

    // Models: the whole catalog with states; the one used is loaded on the CPU.
    const names = last.models.map((m) => m.name);
    assert.ok(names.includes(MODEL) && names.includes("fixture/sparse"), names.join(","));
    const dense = last.models.find((m) => m.name === MODEL)!;
    assert.equal(dense.state, "loaded");
    assert.equal(dense.device, "cpu");
    assert.ok(dense.memory_bytes > 0);
    assert.equal(dense.queue_depth, 0);
    assert.equal((dense.config as { id?: string }).id, MODEL);
    assert.deepEqual(last.loaded_models, [MODEL]);
    const sparse = last.models.find((m) => m.name === "fixture/sparse")!;
    assert.equal(sparse.state, "available");
    assert.equal(sparse.device, null);

    // The compact metrics view.
    const counters = last.counters as Record<
      string,
      { labels: Record<string, string>; value: number }[]
    >;
    assert.deepEqual(counters.svc_requests_total, [{
      labels: { model: MODEL, endpoint: "encode", status: "200" },
      value: 1,
    }]);
    const hist = (last.histograms as Record<string, {
      buckets: number[];
      series: { labels: Record<string, string>; count: number; sum: number; counts: number[] }[];
    }>).svc_request_duration_seconds;
    assert.ok(hist.buckets.length > 3);
    const total = hist.series.find((s) => s.labels.phase === "total")!;
    assert.equal(total.count, 1);
    assert.equal(total.counts.length, hist.buckets.length);
    assert.ok(total.counts.every((c, i) => i === 0 || c >= total.counts[i - 1]), "cumulative");
    assert.ok(last.histograms.svc_batch_size);

    // The extension with live process facts.
    assert.ok(last.process.rss_bytes > 0);
    assert.equal(last.process.draining, false);
  } finally {
    await client.close();
    await w.close();
  }
});

Deno.test("status: many clients share one build per tick and do not slow inference", async () => {
  const w = await startTestWorker();
  const clients: ReturnType<typeof recordFrames>[] = [];
  try {
    assert.equal((await encode(w.url, MODEL, { items: items(4) })).status, 200);
    const baseline = await latencies(w.url, 12);

    for (let i = 0; i < 40; i++) clients.push(recordFrames(wsUrl(w.url, "/ws/status")));
    await Promise.all(clients.map((c) => c.opened));
    const b = w.instance.status.broadcaster;
    await waitFor("all clients joined", () => b.clientCount === 40, 5000);
    const builds0 = b.buildCount;
    const t0 = performance.now();
    const loaded = await latencies(w.url, 12);
    await sleep(Math.max(0, 1000 - (performance.now() - t0)));
    const seconds = (performance.now() - t0) / 1000;
    const builds = b.buildCount - builds0;
    // One build per 200 ms tick, whatever the number of clients (40 clients × 5/s would be 200).
    assert.ok(builds <= Math.ceil(seconds * 5) + 2, `${builds} builds in ${seconds.toFixed(2)} s`);
    // Every client got frames, and the same tick sent the same bytes to all of them.
    for (const c of clients) assert.ok(c.frames.length >= 3, `client got ${c.frames.length}`);
    const lastOf = new Set(clients.map((c) => c.frames.at(-1)!.data));
    assert.ok(lastOf.size <= 2, `${lastOf.size} distinct latest frames across clients`);
    // Inference latency with 40 dashboards open stays in the same range as without.
    assert.ok(
      median(loaded) < median(baseline) * 2 + 25,
      `median ${median(loaded).toFixed(1)} ms with clients vs ${median(baseline).toFixed(1)} ms`,
    );
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await w.close();
  }
});

Deno.test("status: the ticker stops when the last client leaves; plain GET is refused", async () => {
  const w = await startTestWorker();
  try {
    const b = w.instance.status.broadcaster;
    assert.equal(b.ticking, false);
    const c = recordFrames(wsUrl(w.url, "/ws/status"));
    await c.opened;
    await waitFor("ticker started", () => b.ticking, 2000);
    await waitFor("first frame", () => c.frames.length > 0, 2000);
    await c.close();
    await waitFor("ticker stopped", () => !b.ticking, 2000);
    const builds = b.buildCount;
    await sleep(450);
    assert.equal(b.buildCount, builds, "no builds without clients");

    const res = await fetch(`${w.url}/ws/status`);
    assert.equal(res.status, 400);
    assert.equal((await res.json()).detail.code, "INVALID_INPUT");
  } finally {
    await w.close();
  }
});

/** Latencies (ms) of `n` sequential single-item encode requests. */
async function latencies(url: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = await encode(url, MODEL, { items: items(2) });
    assert.equal(r.status, 200);
    out.push(performance.now() - t);
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
