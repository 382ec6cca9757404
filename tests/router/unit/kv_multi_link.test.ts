/**
 * A worker linked to several router instances (SVC_ROUTER_URL with several URLs): one worker id,
 * one instance key, a connection to each instance. Each instance that holds a connection serves
 * the worker from its own record; the shared head has one owner, and when the owner dies another
 * holder takes the head over, so instances without a connection keep seeing the worker.
 */
import assert from "node:assert/strict";
import { silentLogger } from "@svc/shared/log";
import { KvWorkerDirectory } from "../../../router/directory/kv.ts";
import type { WorkerRecord } from "../../../router/directory/types.ts";

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
