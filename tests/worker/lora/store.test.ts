/**
 * The adapter store's bookkeeping on a recorded clock: failure cool-down and its end, every slot
 * held, a closed store. Files come from a real weight store over a local cache; the runner is a
 * scripted stand-in for the inference thread (the serving tests run the real one).
 */
import assert from "node:assert/strict";
import { ServiceError } from "@svc/shared/errors";
import { createWeightStore } from "#worker/weights/store.ts";
import { createDirClusterCache } from "#worker/weights/cluster_cache.ts";
import { type LoraStarter, LoraStore } from "#worker/lora/store.ts";
import { LoraMismatchError } from "#worker/lora/plan.ts";
import { LoraLabels } from "#worker/lora/labels.ts";
import { DENSE_QV_SPEC, denseAdapter, writeAdapter } from "@svc/fixture-models/lora";
import { dense } from "@svc/fixture-models/models";
import type { EncoderWeights } from "@svc/fixture-models/models";

const W = dense.weights() as EncoderWeights;
const IDS = ["fixture-lora/a", "fixture-lora/b", "fixture-lora/c"];

/** Adapter starts that succeed, or fail as a mismatch for ids in `mismatched`. */
function scriptedRunner(mismatched = new Set<string>()) {
  const loads: string[] = [];
  const unloads: string[] = [];
  const start: LoraStarter = (id) => {
    loads.push(id);
    if (mismatched.has(id)) return Promise.reject(new LoraMismatchError("lora_A is [4,48]"));
    return Promise.resolve({
      runner: {
        run: () => Promise.reject(new Error("not run here")),
        dispose: () => {
          unloads.push(id);
          return Promise.resolve();
        },
      },
      loaded: { memoryBytes: 1000, patched: 6, planMs: 1, mergeMs: 1, sessionMs: 1 },
    });
  };
  return { start, loads, unloads };
}

async function withStore(
  fn: (
    ctx: { store: LoraStore; clock: { t: number }; runner: ReturnType<typeof scriptedRunner> },
  ) => Promise<void>,
  opts: { maxLoaded?: number; mismatched?: string[] } = {},
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "svc-lora-store-" });
  // Adapters in a cluster-cache directory (read in place), the local cache empty: a refused
  // adapter's local copies may be dropped and the files are still there for a later attempt.
  const cluster = `${root}/cluster`;
  try {
    for (const repo of IDS) {
      await writeAdapter(cluster, denseAdapter(W, { ...DENSE_QV_SPEC, repo }));
    }
    const clock = { t: 0 };
    const runner = scriptedRunner(new Set(opts.mismatched));
    const store = new LoraStore({
      model: { id: "fixture/dense", repo: "fixture/dense" },
      weights: createWeightStore({
        cacheDir: `${root}/local`,
        sources: [createDirClusterCache({ location: cluster })],
      }),
      start: runner.start,
      maxLoaded: opts.maxLoaded ?? 10,
      maxLoraBytes: 1024 * 1024,
      failureCooldownMs: 30_000,
      now: () => clock.t,
    });
    await fn({ store, clock, runner });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

async function rejectsWith(p: Promise<unknown>, code: string, message: RegExp): Promise<void> {
  await assert.rejects(p, (err) => {
    assert.ok(err instanceof ServiceError);
    assert.equal(err.code, code);
    assert.match(err.message, message);
    return true;
  });
}

Deno.test("lora store: a failed adapter is answered from memory during the cool-down, then tried again", async () => {
  await withStore(async ({ store, clock, runner }) => {
    const id = IDS[0];
    await rejectsWith(store.acquire(id, 5000), "INVALID_INPUT", /does not fit model.*\[4,48\]/);
    clock.t = 29_999;
    await rejectsWith(store.acquire(id, 5000), "INVALID_INPUT", /does not fit/);
    assert.deepEqual(runner.loads, [id], "no second attempt inside the cool-down");
    clock.t = 30_000;
    await rejectsWith(store.acquire(id, 5000), "INVALID_INPUT", /does not fit/);
    assert.deepEqual(runner.loads, [id, id], "tried again after it");
    assert.deepEqual(store.statuses(), []);
  }, { mismatched: [IDS[0]] });
});

Deno.test("lora store: held adapters are never evicted; with every slot held a new one is 503 LORA_LOADING", async () => {
  await withStore(async ({ store, clock, runner }) => {
    const releaseA = await store.acquire(IDS[0], 5000);
    clock.t = 1;
    const releaseB = await store.acquire(IDS[1], 5000);
    clock.t = 2;
    const busy = store.acquire(IDS[2], 5000);
    await rejectsWith(busy, "LORA_LOADING", /all 2 LoRA adapter slots .* busy/);
    await busy.catch((err: ServiceError) => assert.equal(err.retryAfterS, 2));
    releaseB();
    clock.t = 3;
    releaseA();
    clock.t = 4;
    // B was released first: it is the least recently used idle adapter.
    (await store.acquire(IDS[2], 5000))();
    assert.deepEqual(runner.unloads, [IDS[1]]);
    assert.deepEqual(store.statuses().map((s) => s.id), [IDS[2], IDS[0]]);
    assert.equal(store.memoryBytes, 2000);
  }, { maxLoaded: 2 });
});

Deno.test("lora store: a closed store answers MODEL_NOT_LOADED and holds nothing", async () => {
  await withStore(async ({ store, runner }) => {
    (await store.acquire(IDS[0], 5000))();
    await store.close();
    assert.deepEqual(runner.unloads, [IDS[0]], "its runner was released");
    await rejectsWith(store.acquire(IDS[0], 5000), "MODEL_NOT_LOADED", /unloading/);
    assert.equal(store.memoryBytes, 0);
  });
});

Deno.test("lora labels: ids become label values only once admitted, at most max of them", () => {
  const labels = new LoraLabels(2);
  assert.equal(labels.of("a/x"), "other");
  for (const id of ["a/x", "a/y", "a/z"]) labels.admit(id);
  assert.deepEqual(["a/x", "a/y", "a/z"].map((id) => labels.of(id)), ["a/x", "a/y", "other"]);
});
