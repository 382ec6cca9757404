import assert from "node:assert/strict";
import { KvWorkerDirectory } from "#router/directory/kv.ts";
import { MemoryWorkerDirectory } from "#router/directory/memory.ts";
import type { WorkerDirectory, WorkerRecord } from "#router/directory/types.ts";
import { silentLogger } from "@svc/shared/log";

/** A fixed clock for every directory here: staleness is decided by it, never by a busy machine. */
const NOW = 1_700_000_000_000;
const now = () => NOW;

function rec(id: string, conn: string, over: Partial<WorkerRecord> = {}): WorkerRecord {
  return {
    id,
    conn_id: conn,
    router_id: "r",
    url: `http://${id}`,
    machine_profile: "cpu",
    pool: "cpu",
    bundle: "default",
    version: "0.1.0",
    gpu_count: 0,
    gpu_types: [],
    models: [{ name: `fixture/${id}`, bundle: "default", state: "available", queue_depth: 0 }],
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 0,
    memory_total_bytes: 0,
    draining: false,
    registered_at: NOW,
    last_seen: NOW,
    ...over,
  };
}

/** Behaviour both implementations share. */
async function contract(dir: WorkerDirectory): Promise<void> {
  await dir.put(rec("a", "c1"));
  await dir.put(rec("b", "c2"));
  assert.deepEqual(dir.snapshot().map((r) => r.id).sort(), ["a", "b"]);
  assert.equal(dir.learnedBundles().get("fixture/a"), "default");
  // Status update replaces the record.
  await dir.put(rec("a", "c1", { queue_depth: 7 }));
  assert.equal(dir.snapshot().find((r) => r.id === "a")?.queue_depth, 7);
  // Only the owning connection removes a record.
  assert.equal(await dir.remove("a", "someone-else"), false);
  assert.equal(dir.snapshot().length, 2);
  assert.equal(await dir.remove("a", "c1"), true);
  assert.deepEqual(dir.snapshot().map((r) => r.id), ["b"]);
  // Learned bundles outlive the worker (404 vs 202 when scaled to zero).
  assert.equal(dir.learnedBundles().get("fixture/a"), "default");
  // A stale record is not served.
  await dir.put(rec("old", "c3", { last_seen: NOW - 60_000 }));
  assert.ok(!dir.snapshot().some((r) => r.id === "old"));
  // A touch keeps a worker alive: the directory serves it as seen at the touch.
  await dir.put(rec("t", "c4", { last_seen: NOW - 2500, queue_depth: 3 }));
  await dir.touch(rec("t", "c4", { last_seen: NOW, queue_depth: 3 }));
  const touched = dir.snapshot().find((r) => r.id === "t");
  assert.equal(touched?.last_seen, NOW);
  assert.equal(touched?.queue_depth, 3);
}

Deno.test("directory: a KV touch writes nothing until a renewal is due", async () => {
  let clock = NOW;
  const kv = await Deno.openKv(":memory:");
  const dir = new KvWorkerDirectory({
    kv,
    prefix: "t",
    staleMs: 3000,
    refreshMs: 60_000,
    renewMs: 10_000,
    log: silentLogger,
    now: () => clock,
  });
  const stored = async () => (await kv.get<WorkerRecord>(["t", "workers", "a"])).value?.last_seen;
  try {
    await dir.put(rec("a", "c1", { last_seen: clock }));
    clock += 500;
    await dir.touch(rec("a", "c1", { last_seen: clock }));
    assert.equal(await stored(), NOW, "within the renewal period: nothing written");
    const local = dir.snapshot().find((r) => r.id === "a");
    assert.equal(local?.last_seen, clock, "this instance sees it alive at once");
    clock += 10_000;
    await dir.touch(rec("a", "c1", { last_seen: clock }));
    assert.equal(await stored(), clock, "a renewal period later: other instances see it renewed");
  } finally {
    await dir.close();
    kv.close();
  }
});

Deno.test("directory: memory implementation", async () => {
  const dir = new MemoryWorkerDirectory({ staleMs: 3000, now });
  await contract(dir);
  await dir.close();
});

Deno.test("directory: Deno KV implementation", async () => {
  const kv = await Deno.openKv(":memory:");
  const dir = new KvWorkerDirectory({
    kv,
    prefix: "t",
    staleMs: 3000,
    refreshMs: 50,
    log: silentLogger,
    now,
  });
  try {
    await contract(dir);
  } finally {
    await dir.close();
    kv.close();
  }
});

Deno.test("directory: two KV directories on one database see each other's workers", async () => {
  const kv = await Deno.openKv(":memory:");
  const opts = { kv, prefix: "fleet", staleMs: 3000, refreshMs: 50, log: silentLogger, now };
  const a = new KvWorkerDirectory(opts);
  const b = new KvWorkerDirectory(opts);
  try {
    await a.put(
      rec("w1", "conn-a", {
        models: [{ name: "x/y", bundle: "extract", state: "loaded", queue_depth: 0 }],
      }),
    );
    await b.refresh();
    assert.deepEqual(b.snapshot().map((r) => r.id), ["w1"]);
    assert.equal(b.learnedBundles().get("x/y"), "extract");
    // The worker reconnects to isolate b: the old connection's late writes and removal lose.
    await b.put(rec("w1", "conn-b", { registered_at: NOW + 1 }));
    await a.put(rec("w1", "conn-a", { queue_depth: 99, registered_at: NOW - 10 }));
    assert.equal(await a.remove("w1", "conn-a"), false);
    await a.refresh();
    assert.equal(a.snapshot()[0]?.conn_id, "conn-b");
    // Removal by the owner is seen by the other isolate at its next refresh.
    assert.equal(await b.remove("w1", "conn-b"), true);
    await a.refresh();
    assert.deepEqual(a.snapshot(), []);
    // Learned bundles persist in KV for a fresh isolate.
    const c = new KvWorkerDirectory(opts);
    await c.refresh();
    assert.equal(c.learnedBundles().get("x/y"), "extract");
    await c.close();
  } finally {
    await a.close();
    await b.close();
    kv.close();
  }
});

Deno.test("directory: KV records are validated when read back; invalid ones are left out", async () => {
  const kv = await Deno.openKv(":memory:");
  const warnings: string[] = [];
  const dir = new KvWorkerDirectory({
    kv,
    prefix: "v",
    staleMs: 3000,
    refreshMs: 60_000,
    log: (level, msg) => level === "warn" && warnings.push(msg),
    now,
  });
  try {
    await dir.put(rec("good", "conn-g"));
    // Written by something else: an older release, another fleet, a hand edit.
    await kv.set(["v", "workers", "bad-shape"], { id: "bad-shape", conn_id: "c" });
    await kv.set(["v", "workers", "bad-count"], { ...rec("bad-count", "c2"), queue_depth: -5 });
    await kv.set(["v", "workers", "not-an-object"], "hello");
    await kv.set(["v", "bundles", "m/x"], 42);
    await dir.refresh();
    await dir.refresh();
    assert.deepEqual(dir.snapshot().map((r) => r.id), ["good"]);
    assert.equal(dir.learnedBundles().get("m/x"), undefined);
    assert.equal(warnings.length, 3, "one warning per invalid record, not one per refresh");
    // An invalid stored record owns nothing: a valid write replaces it, a removal cannot match.
    assert.equal(await dir.remove("bad-shape", "c"), false);
    await dir.put(rec("bad-shape", "conn-new"));
    await dir.refresh();
    assert.deepEqual(dir.snapshot().map((r) => r.id).sort(), ["bad-shape", "good"]);
  } finally {
    await dir.close();
    kv.close();
  }
});

Deno.test("directory: what workers report is remembered within SVC_MAX_LEARNED_MODELS", async () => {
  const kv = await Deno.openKv(":memory:");
  const learned = { maxModels: 100, ttlMs: 60_000 };
  const dirs: WorkerDirectory[] = [
    new MemoryWorkerDirectory({ staleMs: 3000, learned, now }),
    new KvWorkerDirectory({
      kv,
      prefix: "b",
      staleMs: 3000,
      refreshMs: 60_000, // refreshed by hand: no background churn mid-test
      learned,
      log: silentLogger,
      now,
    }),
  ];
  try {
    for (const dir of dirs) {
      for (let k = 0; k < 20; k++) {
        const models = Array.from({ length: 50 }, (_, i) => ({
          name: `org/m-${k}-${i}`,
          bundle: "default",
          state: "available" as const,
          queue_depth: 0,
        }));
        await dir.put(rec(`w${k}`, `c${k}`, { models }));
      }
      assert.ok(dir.learnedBundles().size <= 100, `${dir.kind}: ${dir.learnedBundles().size}`);
      // The most recent reports are the ones kept.
      assert.equal(dir.learnedBundles().get("org/m-19-49"), "default", dir.kind);
      assert.equal(dir.learnedBundles().get("org/m-0-0"), undefined, dir.kind);
    }
    // A fresh KV isolate reads back no more than the bound.
    const fresh = new KvWorkerDirectory({
      kv,
      prefix: "b",
      staleMs: 3000,
      refreshMs: 60_000, // refreshed by hand: no background churn mid-test
      learned,
      log: silentLogger,
      now,
    });
    await fresh.refresh();
    assert.ok(fresh.learnedBundles().size <= 100);
    assert.ok(fresh.learnedBundles().size > 0);
    await fresh.close();
  } finally {
    for (const d of dirs) await d.close();
    kv.close();
  }
});

Deno.test("directory: a live worker id is claimed only by the same instance", async () => {
  const kv = await Deno.openKv(":memory:");
  const dirs: WorkerDirectory[] = [
    new MemoryWorkerDirectory({ staleMs: 3000, now }),
    new KvWorkerDirectory({
      kv,
      prefix: "c",
      staleMs: 3000,
      refreshMs: 50,
      log: silentLogger,
      now,
    }),
  ];
  // Instance hashes are SHA-256 hex (stored records are validated when read back).
  const A = "a".repeat(64);
  const B = "b".repeat(64);
  try {
    for (const dir of dirs) {
      assert.equal(await dir.claim(rec("w", "c1", { instance_hash: A })), true, dir.kind);
      assert.equal(await dir.claim(rec("w", "c2")), false, `${dir.kind}: no proof`);
      assert.equal(await dir.claim(rec("w", "c3", { instance_hash: B })), false, dir.kind);
      assert.equal(dir.snapshot()[0].conn_id, "c1");
      assert.equal(await dir.claim(rec("w", "c4", { instance_hash: A })), true, dir.kind);
      assert.equal(dir.snapshot()[0].conn_id, "c4");
      // A stale record no longer holds the id.
      await dir.put(rec("w", "c4", { instance_hash: A, last_seen: NOW - 60_000 }));
      assert.equal(await dir.claim(rec("w", "c5")), true, `${dir.kind}: stale`);
    }
  } finally {
    for (const d of dirs) await d.close();
    kv.close();
  }
});
