/**
 * WebSocket /ws/status of a real worker: frames flow, every field is valid (zod schema), CPU values
 * are honest, and many clients share one build. The exact cadence (a frame at once, then one per
 * 200 ms) is checked on a fake clock in tests/shared/broadcaster.test.ts.
 */
import assert from "node:assert/strict";
import { StatusMessageSchema } from "@svc/shared/schemas/status";
import { VERSION } from "@svc/shared/version";
import { queryGpus } from "@svc/worker/gpu";
import type { WorkerStatusMessage } from "#worker/status/message.ts";
import { startFakeBackendWorker, startTestWorker } from "../worker/harness.ts";
import { encode, items } from "./helpers/traffic.ts";
import { waitFor } from "../helpers/wait.ts";
import { recordFrames, wsUrl } from "./helpers/ws.ts";
import { assertShape, WORKER_STATUS_MESSAGE } from "../compat/client/sie_shapes.ts";

const MODEL = "fixture/dense";

Deno.test("status: frames keep coming, each valid against the shared schema", async () => {
  const w = await startTestWorker();
  const client = recordFrames(wsUrl(w.url, "/ws/status"));
  try {
    await client.opened;
    assert.equal((await encode(w.url, MODEL, { items: items(2) })).status, 200);
    client.frames.length = 0; // from here on, frames reflect the request above
    await waitFor(() => client.frames.length >= 3, "three frames after the request");
    const frames = client.frames;

    const msgs = frames.map((f) => JSON.parse(f.data) as WorkerStatusMessage);
    for (const m of msgs) StatusMessageSchema.parse(m);
    const last = msgs.at(-1)!;
    assertShape(last, WORKER_STATUS_MESSAGE, "a real worker's status message");
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
    assert.deepEqual([dense.config.adapter, dense.config.outputs], ["dense", ["dense"]]);
    assert.equal(typeof dense.config.hf_id, "string");
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

Deno.test("status: many clients share one build per tick", async () => {
  // The stream's sharing and lifetime are the HTTP surface's: the fake backend serves.
  const w = await startFakeBackendWorker();
  const clients: ReturnType<typeof recordFrames>[] = [];
  try {
    assert.equal((await encode(w.url, MODEL, { items: items(4) })).status, 200);
    for (let i = 0; i < 40; i++) clients.push(recordFrames(wsUrl(w.url, "/ws/status")));
    await Promise.all(clients.map((c) => c.opened));
    const b = w.instance.status.broadcaster;
    await waitFor(() => b.clientCount === 40, "all clients joined");
    // Counted against frames rather than time: builds track what one client receives, never
    // 40 times that, however fast or slow the machine ticks.
    const builds0 = b.buildCount;
    const seen0 = clients.map((c) => c.frames.length);
    assert.equal((await encode(w.url, MODEL, { items: items(2) })).status, 200);
    await waitFor(
      () => clients.every((c, i) => c.frames.length >= seen0[i] + 3),
      "three more frames at every client",
    );
    const builds = b.buildCount - builds0;
    const mostFrames = Math.max(...clients.map((c, i) => c.frames.length - seen0[i]));
    assert.ok(builds >= 3, `${builds} builds`);
    assert.ok(builds <= mostFrames + 2, `${builds} builds for ${mostFrames} frames per client`);
    // The same tick sent the same bytes to every client.
    const lastOf = new Set(clients.map((c) => c.frames.at(-1)!.data));
    assert.ok(lastOf.size <= 2, `${lastOf.size} distinct latest frames across clients`);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await w.close();
  }
});

Deno.test("status: the ticker stops when the last client leaves; plain GET is refused", async () => {
  // The stream's sharing and lifetime are the HTTP surface's: the fake backend serves.
  const w = await startFakeBackendWorker();
  try {
    const b = w.instance.status.broadcaster;
    assert.equal(b.ticking, false);
    const c = recordFrames(wsUrl(w.url, "/ws/status"));
    await c.opened;
    await waitFor(() => b.ticking, "ticker started");
    await waitFor(() => c.frames.length > 0, "first frame");
    await c.close();
    // Stopped is the state to wait for: its interval is cleared, so nothing builds until a client
    // comes (that nothing ticks without clients, and the cadence, run on a fake clock in
    // tests/shared/broadcaster.test.ts).
    await waitFor(() => !b.ticking, "ticker stopped");
    const builds = b.buildCount;

    const res = await fetch(`${w.url}/ws/status`);
    assert.equal(res.status, 400);
    assert.equal((await res.json()).detail.code, "INVALID_INPUT");
    assert.equal(b.buildCount, builds, "no builds without clients");
  } finally {
    await w.close();
  }
});
