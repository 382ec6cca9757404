import assert from "node:assert/strict";
import type { WorkerRecord } from "#router/directory/types.ts";
import { selectWorker, workerLoad } from "#router/pools/selection.ts";

function worker(
  id: string,
  over: Partial<WorkerRecord> = {},
  models: [string, string][] = [["m", "available"]],
): WorkerRecord {
  return {
    id,
    conn_id: `c-${id}`,
    router_id: "r",
    url: `http://${id}`,
    machine_profile: "cpu",
    pool: "cpu",
    bundle: "default",
    version: "0.1.0",
    gpu_count: 0,
    gpu_types: [],
    models: models.map(([name, state]) => ({
      name,
      bundle: "default",
      state: state as WorkerRecord["models"][number]["state"],
      queue_depth: 0,
    })),
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 0,
    memory_total_bytes: 0,
    draining: false,
    registered_at: 0,
    last_seen: 0,
    ...over,
  };
}

const req = { pool: "cpu", bundle: "default", model: "m" };
const opts = { spillLoad: 10, inFlight: () => 0 };

Deno.test("selection: only the requested pool and bundle are eligible", () => {
  const ws = [worker("a", { pool: "l4" }), worker("b", { bundle: "extract" }), worker("c")];
  const s = selectWorker(ws, req, opts);
  assert.equal(s.kind === "worker" && s.worker.id, "c");
  assert.deepEqual(selectWorker(ws.slice(0, 2), req, opts), { kind: "no_capacity" });
});

Deno.test("selection: draining workers never get new requests", () => {
  const ws = [worker("a", { draining: true })];
  assert.deepEqual(selectWorker(ws, req, opts), { kind: "no_capacity" });
  const s = selectWorker([...ws, worker("b")], req, opts);
  assert.equal(s.kind === "worker" && s.worker.id, "b");
});

Deno.test("selection: a pool whose workers do not offer the model says not_served", () => {
  const ws = [worker("a", {}, [["other", "loaded"]])];
  assert.deepEqual(selectWorker(ws, req, opts), { kind: "not_served" });
});

Deno.test("selection: loaded beats loading beats available, even when busier", () => {
  const ws = [
    worker("idle", {}, [["m", "available"]]),
    worker("loading", { in_flight: 2 }, [["m", "loading"]]),
    worker("loaded", { in_flight: 5 }, [["m", "loaded"]]),
  ];
  const s = selectWorker(ws, req, opts);
  assert.equal(s.kind === "worker" && s.worker.id, "loaded");
  assert.equal(s.kind === "worker" && s.affinity, "loaded");
  const s2 = selectWorker(ws.slice(0, 2), req, opts);
  assert.equal(s2.kind === "worker" && s2.worker.id, "loading");
});

Deno.test("selection: an overloaded loaded worker spills to an idle one", () => {
  const ws = [worker("idle"), worker("hot", { queue_depth: 12 }, [["m", "loaded"]])];
  const s = selectWorker(ws, req, opts);
  assert.equal(s.kind === "worker" && s.worker.id, "idle");
});

Deno.test("selection: least loaded wins among equals; local in-flight counts", () => {
  const ws = [worker("a", { queue_depth: 3 }), worker("b", { queue_depth: 1 })];
  let s = selectWorker(ws, req, opts);
  assert.equal(s.kind === "worker" && s.worker.id, "b");
  s = selectWorker(ws, req, { ...opts, inFlight: (id) => (id === "b" ? 5 : 0) });
  assert.equal(s.kind === "worker" && s.worker.id, "a");
  assert.equal(workerLoad(worker("x", { in_flight: 4, queue_depth: 2 }), 1), 6);
  assert.equal(workerLoad(worker("x", { in_flight: 1, queue_depth: 2 }), 4), 6);
});

Deno.test("selection: ties are shared at random", () => {
  const ws = [worker("a"), worker("b"), worker("c")];
  const seen = new Map<string, number>();
  for (let i = 0; i < 600; i++) {
    const s = selectWorker(ws, req, opts);
    if (s.kind === "worker") seen.set(s.worker.id, (seen.get(s.worker.id) ?? 0) + 1);
  }
  for (const id of ["a", "b", "c"]) assert.ok((seen.get(id) ?? 0) > 120, `${id}: ${seen.get(id)}`);
});

Deno.test("selection: excluded workers are skipped, cooling ones used only as a last resort", () => {
  const ws = [worker("a"), worker("b")];
  const s = selectWorker(ws, req, { ...opts, exclude: new Set(["a"]) });
  assert.equal(s.kind === "worker" && s.worker.id, "b");
  const s2 = selectWorker(ws, req, { ...opts, coolingDown: (id) => id === "a" });
  assert.equal(s2.kind === "worker" && s2.worker.id, "b");
  const s3 = selectWorker(ws, req, { ...opts, coolingDown: () => true });
  assert.equal(s3.kind, "worker");
  assert.equal(selectWorker(ws, req, { ...opts, exclude: new Set(["a", "b"]) }).kind, "not_served");
});

Deno.test("selection: a worker whose load failed is the last choice", () => {
  const ws = [worker("failed", {}, [["m", "failed"]]), worker("ok", { queue_depth: 4 })];
  const s = selectWorker(ws, req, opts);
  assert.equal(s.kind === "worker" && s.worker.id, "ok");
  const s2 = selectWorker(ws.slice(0, 1), req, opts);
  assert.equal(s2.kind === "worker" && s2.worker.id, "failed");
});
