/**
 * A worker linked to several router instances (SVC_ROUTER_URL with several URLs): one worker id,
 * one instance key, a connection to each instance. Each instance that holds a connection serves
 * the worker from its own record; the shared head has one owner, and when the owner dies another
 * holder takes the head over, so instances without a connection keep seeing the worker.
 */
import assert from "node:assert/strict";
import { silentLogger } from "@svc/shared/log";
import { KvWorkerDirectory } from "#router/directory/kv.ts";
import type { WorkerRecord } from "#router/directory/types.ts";
import { waitFor } from "../../helpers/wait.ts";
import { type SocketWorker, startSocketWorker } from "../helpers/socket_worker.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

const T0 = 1_700_000_000_000;
const SAME = "a".repeat(64);

function rec(conn: string, at: number, over: Partial<WorkerRecord> = {}): WorkerRecord {
  return {
    id: "w",
    conn_id: conn,
    router_id: "r",
    url: "",
    transport: "connection",
    machine_profile: "cpu",
    pool: "cpu",
    bundle: "default",
    version: "0.1.0",
    gpu_count: 0,
    gpu_types: [],
    models: [{ name: "org/m", bundle: "default", state: "available", queue_depth: 0 }],
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 0,
    memory_total_bytes: 0,
    draining: false,
    instance_hash: SAME,
    registered_at: at,
    last_seen: at,
    ...over,
  };
}

/** The connection an instance's view routes worker `w` to. */
function connOf(dir: KvWorkerDirectory): string | undefined {
  return dir.snapshot().find((r) => r.id === "w")?.conn_id;
}

Deno.test("kv multi-link: every holder serves its own connection; the head survives its owner", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = { t: T0 };
  const opts = {
    kv,
    prefix: "f",
    staleMs: 3000,
    refreshMs: 60_000, // refreshed by hand
    renewMs: 1000,
    log: silentLogger,
    now: () => clock.t,
  };
  const a = new KvWorkerDirectory({ ...opts, routerId: "a" });
  const b = new KvWorkerDirectory({ ...opts, routerId: "b" });
  const c = new KvWorkerDirectory({ ...opts, routerId: "c" });
  let bClosed = false;
  try {
    assert.equal(await a.claim(rec("ca", T0)), true);
    clock.t = T0 + 1;
    // The same process on b: it takes the head; another process may not.
    assert.equal(await b.claim(rec("cb", clock.t)), true);
    assert.equal(await c.claim(rec("cx", clock.t, { instance_hash: "b".repeat(64) })), false);
    for (const d of [a, b, c]) await d.refresh();
    assert.equal(connOf(a), "ca", "a serves over its own connection");
    assert.equal(connOf(b), "cb");
    assert.equal(connOf(c), "cb", "c, with no connection, sees the head's owner");
    // a's renewal finds b's live head: a keeps its own record and leaves the head alone.
    clock.t = T0 + 1100;
    await a.put(rec("ca", T0, { last_seen: clock.t }));
    await a.refresh();
    await c.refresh();
    assert.equal(connOf(a), "ca");
    assert.equal(connOf(c), "cb");
    // b dies (its heartbeat is gone): a, still holding a connection, takes the head over.
    await b.close();
    bClosed = true;
    await a.refresh();
    clock.t = T0 + 1200;
    await a.put(rec("ca", T0, { last_seen: clock.t }));
    await c.refresh();
    assert.equal(connOf(a), "ca");
    assert.equal(connOf(c), "ca", "c sees the surviving holder");
    // a's connection closes: the worker is gone everywhere.
    assert.equal(await a.remove("w", "ca"), true);
    await c.refresh();
    assert.equal(connOf(c), undefined);
  } finally {
    await a.close();
    if (!bClosed) await b.close();
    await c.close();
    kv.close();
  }
});

Deno.test("kv multi-link: a connection-only worker is served by each router it dialled; elsewhere, a hold and a 503, never a 202; drains reach every link", async () => {
  const kv = await Deno.openKv(":memory:");
  const env = {
    SVC_DIRECTORY: "kv",
    SVC_KV_REFRESH_MS: "100",
    SVC_WORKER_STALE_MS: "600000",
    SVC_MACHINE_PROFILES: "cpu,l4",
    SVC_EXPOSE_WORKER_ID: "1",
    SVC_RECONNECT_HOLD_MS: "300",
    // Off: what a router that cannot reach a worker does without it (kv_relay.test.ts: with it).
    SVC_RELAY_MAX_BODY_BYTES: "0",
  };
  const a = await startTestRouter(env, { kv });
  const b = await startTestRouter(env, { kv });
  const workers: SocketWorker[] = [];
  const model = (profile: string) => ({
    id: `${profile}-w`,
    token: TEST_TOKEN,
    profile,
    models: [{ name: "fixture/dense", state: "loaded" as const }],
    transport: "connection" as const,
  });
  const encode = (url: string, profile: string) =>
    fetch(`${url}/v1/encode/fixture%2Fdense`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-machine-profile": profile },
      body: JSON.stringify({ items: [{ text: "x" }] }),
    });
  try {
    // cpu-w dials A only; l4-w dials both.
    workers.push(await startSocketWorker({ ...model("cpu"), routerUrl: a.url }));
    workers.push(await startSocketWorker({ ...model("l4"), routerUrl: `${a.url},${b.url}` }));
    await waitFor(
      async () => (await getJson(`${b.url}/health`)).body.worker_count === 2,
      "b sees both workers",
    );
    await waitFor(() => workers[1].link.connected, "l4-w registered");
    for (const r of [a, b]) {
      const res = await encode(r.url, "l4");
      assert.equal(res.status, 200, `l4 through ${r.url}`);
      assert.equal(res.headers.get("x-svc-worker-id"), "l4-w");
      await res.body?.cancel();
    }
    const here = await encode(a.url, "cpu");
    assert.equal(here.status, 200);
    await here.body?.cancel();
    // B cannot reach cpu-w (its only connection is on A, no relay): held, then a retryable 503.
    const t0 = performance.now();
    const there = await encode(b.url, "cpu");
    const waited = performance.now() - t0;
    assert.equal(there.status, 503);
    assert.equal(there.headers.get("retry-after"), "1");
    assert.equal((await there.json()).detail.code, "NO_CAPACITY");
    assert.ok(waited >= 250, `held ${waited.toFixed(0)} ms`);
    // A drain sent to A drains l4-w on B too (its other connection): B stops sending it work.
    const drained = await getJson(`${a.url}/v1/admin/workers/l4-w/drain`, { method: "POST" });
    assert.equal(drained.status, 200, JSON.stringify(drained.body));
    for (const r of [a, b]) {
      await waitFor(async () => {
        const res = await encode(r.url, "l4");
        await res.body?.cancel();
        return res.status === 202;
      }, `${r.url}: l4 drained`);
    }
  } finally {
    for (const w of workers) await w.close();
    await a.close();
    await b.close();
    kv.close();
  }
});
