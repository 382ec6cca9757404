/**
 * The KV directory's records: a model list of any size the fleet protocol allows fits (chunked
 * under KV's value limit), writes happen on change plus one renewal per `renewMs`, and a dead
 * instance's workers leave the other instances' views (its heartbeat stops).
 */
import assert from "node:assert/strict";
import { silentLogger } from "@svc/shared/log";
import { KvWorkerDirectory } from "#router/directory/kv.ts";
import type { WorkerModel, WorkerRecord } from "#router/directory/types.ts";
import { countingKv } from "../../helpers/kv_count.ts";
import { waitFor } from "../../helpers/wait.ts";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { startTestRouter, TEST_TOKEN } from "../helpers/router.ts";

const T0 = 1_700_000_000_000;

function rec(id: string, conn: string, models: WorkerModel[], at: number): WorkerRecord {
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
    models,
    queue_depth: 0,
    in_flight: 0,
    memory_used_bytes: 0,
    memory_total_bytes: 0,
    draining: false,
    registered_at: T0,
    last_seen: at,
  };
}

function models(n: number, len: number): WorkerModel[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `org/${String(i).padStart(4, "0")}-${"m".repeat(len - 9)}`,
    bundle: "default",
    state: "available" as const,
    queue_depth: 0,
  }));
}

/** Two directories (instances) on one in-memory database, on a clock the test moves. */
async function pair(
  fn: (
    a: KvWorkerDirectory,
    b: KvWorkerDirectory,
    clock: { t: number },
    counts: ReturnType<typeof countingKv>["counts"],
  ) => Promise<void>,
): Promise<void> {
  const raw = await Deno.openKv(":memory:");
  const { kv, counts } = countingKv(raw);
  const clock = { t: T0 };
  const opts = {
    kv,
    prefix: "f",
    staleMs: 3000,
    refreshMs: 60_000, // refreshed by hand
    renewMs: 10_000,
    log: silentLogger,
    now: () => clock.t,
  };
  const a = new KvWorkerDirectory({ ...opts, routerId: "a" });
  const b = new KvWorkerDirectory({ ...opts, routerId: "b" });
  try {
    await fn(a, b, clock, counts);
  } finally {
    await a.close();
    await b.close();
    raw.close();
  }
}

Deno.test("kv records: 1000 model names of 256 characters register and reach other routers", async () => {
  await pair(async (a, b) => {
    const list = models(1000, 256);
    assert.equal(list[999].name.length, 256);
    assert.equal(await a.claim(rec("big", "c1", list, T0)), true);
    await b.refresh();
    const seen = b.snapshot().find((r) => r.id === "big");
    assert.ok(seen, "router b sees the worker");
    assert.equal(seen.models.length, 1000);
    assert.deepEqual(seen.models.map((m) => m.name), list.map((m) => m.name));
    // A change to the list is a new generation: b reads the new list, whole.
    const changed = list.map((m, i) => i === 500 ? { ...m, state: "loaded" as const } : m);
    await a.put(rec("big", "c1", changed, T0 + 1));
    await b.refresh();
    assert.equal(b.snapshot()[0].models[500].state, "loaded");
    assert.equal(b.snapshot()[0].models.length, 1000);
    // Removal takes the chunks with it.
    assert.equal(await a.remove("big", "c1"), true);
    await b.refresh();
    assert.deepEqual(b.snapshot(), []);
  });
});

Deno.test("kv records: at rest one write per worker per renewal; changes written at once", async () => {
  await pair(async (a, b, clock, counts) => {
    const list = models(30, 40);
    assert.equal(await a.claim(rec("w", "c1", list, clock.t)), true);
    const before = counts.commits;
    // Ten seconds of status frames, one a second, nothing changing: no write until renewal.
    for (let s = 1; s < 10; s++) {
      clock.t = T0 + s * 1000;
      await a.put({ ...rec("w", "c1", list, clock.t), in_flight: s % 2 });
    }
    assert.equal(counts.commits - before, 0, "no write before the renewal is due");
    clock.t = T0 + 10_000;
    await a.put(rec("w", "c1", list, clock.t));
    assert.equal(counts.commits - before, 1, "one renewal");
    // A state change is written at once.
    clock.t += 500;
    await a.put(rec("w", "c1", list.map((m) => ({ ...m, state: "loaded" as const })), clock.t));
    assert.equal(counts.commits - before, 2);
    // Read within a's last heartbeat (its timer beats on real time, not this clock).
    clock.t = T0 + 1000;
    await b.refresh();
    assert.equal(b.snapshot()[0].models[0].state, "loaded");
  });
});

Deno.test("kv records: an instance that stops beating loses its workers from other views", async () => {
  await pair(async (a, b, clock) => {
    assert.equal(await a.claim(rec("w", "c1", models(2, 20), clock.t)), true);
    await b.refresh();
    assert.equal(b.snapshot().length, 1);
    // a's heartbeat said "until T0 + 3 s"; nothing renewed it (a's timers run on real time).
    clock.t = T0 + 3001;
    await b.refresh();
    assert.equal(b.snapshot().length, 0, "holder's heartbeat expired: not routed to");
    // The head's own deadline also bounds it (renewMs × 3), whatever the heartbeat says.
    clock.t = T0;
    await b.refresh();
    assert.equal(b.snapshot().length, 1);
  });
});

Deno.test("kv records: a worker announcing 1000 names of 256 characters registers via the hub", async () => {
  const kv = await Deno.openKv(":memory:");
  const env = { SVC_DIRECTORY: "kv", SVC_KV_REFRESH_MS: "100", SVC_MACHINE_PROFILES: "cpu" };
  const a = await startTestRouter(env, { kv });
  const b = await startTestRouter(env, { kv });
  const names = models(1000, 256).map((m) => ({ name: m.name }));
  const w = startFakeWorker({
    routerUrl: a.url,
    token: TEST_TOKEN,
    id: "kv-big-w",
    profile: "cpu",
    models: names,
  });
  try {
    await waitFor(() => w.link.connected, "registered on a");
    await waitFor(
      () => b.directory.snapshot().find((r) => r.id === "kv-big-w")?.models.length === 1000,
      "b sees all 1000 models",
    );
    assert.ok(!a.logs.some((l) => l.level === "error"), JSON.stringify(a.logs.slice(-3)));
  } finally {
    await w.close();
    await a.close();
    await b.close();
    kv.close();
  }
});
