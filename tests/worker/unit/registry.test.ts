/**
 * The model registry with a fake backend, weights store, memory probe and clock: loading,
 * eviction, failure memory and state transitions in milliseconds. Real ONNX models go through
 * the same registry in tests/worker/registry.test.ts.
 */
import assert from "node:assert/strict";
import { parseModelConfig } from "@svc/shared/catalog/schema";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { ServiceError } from "@svc/shared/errors";
import { ModelRegistry, type RegistryOptions } from "../../../worker/registry/registry.ts";
import { ServedCatalog } from "../../../worker/catalog/served.ts";
import type { DeferredEntry } from "../../../worker/catalog/deferred.ts";
import { IncompatibleModelError } from "../../../worker/registry/runner.ts";
import { type Deferred, deferred, FakeBackend } from "../fake_backend.ts";
import type { WeightStore } from "../../../worker/weights/types.ts";
import {
  accessDeniedError,
  sourceFailedError,
  weightsNotFoundError,
} from "../../../worker/weights/errors.ts";
import { HttpTimeoutError } from "../../../worker/weights/http.ts";
import type { BatchStats } from "../../../worker/scheduler/batcher.ts";
import type { WorkParams } from "../../../worker/families/types.ts";
import { catalogForDevice } from "../../../worker/catalog/device_files.ts";

/** Let every pending promise callback run (a timer fires only after the microtask queue). */
const settle = () => new Promise<void>((r) => setTimeout(r, 0));

const ENCODE: WorkParams = { op: "encode" };

/** A weights store that answers paths at once, or fails for chosen repositories. */
class FakeWeights implements WeightStore {
  readonly calls: { repo: string; files: Record<string, string> }[] = [];
  readonly failures = new Map<string, unknown>();
  /** What the caches hold per repository (a test changes it to "replace a file"). */
  readonly stamps = new Map<string, string>();
  /** Repositories whose cache cannot be read. */
  readonly unreadable = new Set<string>();
  stampReads = 0;

  cacheStamp(repo: string, _revision: string, files: Record<string, string>) {
    this.stampReads++;
    if (this.unreadable.has(repo)) return Promise.reject(new Error("permission denied"));
    return Promise.resolve(`${Object.values(files).sort()}:${this.stamps.get(repo) ?? "v0"}`);
  }

  ensureFiles(repo: string, _revision: string, files: Record<string, string>) {
    this.calls.push({ repo, files });
    if (this.failures.has(repo)) return Promise.reject(this.failures.get(repo));
    const paths = Object.entries(files).map(([role, path]) => [role, `/fake/${repo}/${path}`]);
    return Promise.resolve(Object.fromEntries(paths));
  }
}

function model(id: string, extra: Record<string, unknown> = {}): ModelConfig {
  return parseModelConfig({
    id,
    family: "dense",
    hub: { repo: id, revision: "main" },
    files: { model: "onnx/model.onnx", model_data: "onnx/model.onnx_data", tokenizer: "t.json" },
    inputs: ["text"],
    outputs: ["dense"],
    max_sequence_length: 128,
    ...extra,
  }, id);
}

const CATALOG = new Map(
  [
    model("org/a", {
      profiles: {
        default: { is_default: true, output_types: ["dense"] },
        small: {
          is_default: false,
          output_types: ["dense"],
          options: { model_file: "onnx/model_int8.onnx" },
        },
      },
    }),
    model("org/b"),
    model("org/c"),
  ].map((c) => [c.id, c]),
);

/** The failure cool-down of the test registries. */
const COOLDOWN_MS = 5_000;

/** Options of {@link setup}: registry settings, and what the served catalog is built from. */
type SetupOptions = Partial<Omit<RegistryOptions, "catalog">> & {
  device?: "cpu" | "cuda";
  entries?: Map<string, ModelConfig>;
  deferred?: DeferredEntry[];
};

/**
 * A registry (and its served catalog) over fakes; `mem.usedPercent` and `clock.now` are the
 * test's to move.
 */
function setup(opts: SetupOptions = {}) {
  const { entries = CATALOG, deferred, ...registryOpts } = opts;
  const backend = new FakeBackend(opts.device);
  const weights = new FakeWeights();
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  const batches: BatchStats[] = [];
  const mem = { usedPercent: 10 };
  const clock = { now: 1_000 };
  const catalog = new ServedCatalog({
    entries,
    device: backend.device,
    deferred,
    failureCooldownMs: COOLDOWN_MS,
    now: () => clock.now,
    onEvent: (event, fields) => events.push({ event, fields }),
  });
  const registry = new ModelRegistry({
    catalog,
    weights,
    backend,
    maxBatchRequests: 8,
    maxBatchItems: 8,
    maxWaitMs: 0,
    maxQueueItems: 100,
    maxLoadedModels: 8,
    loadFailureCooldownMs: COOLDOWN_MS,
    maxRunTokens: 0,
    memoryThresholdPercent: 90,
    memoryProbe: () => ({
      usedPercent: mem.usedPercent,
      usedBytes: mem.usedPercent,
      totalBytes: 100,
    }),
    onEvent: (event, fields) => events.push({ event, fields }),
    onBatch: (_model, s) => batches.push(s),
    now: () => clock.now,
    ...registryOpts,
  });
  const count = (event: string, id: string) =>
    events.filter((e) => e.event === event && e.fields.model === id).length;
  const state = (id: string) => registry.status(id)?.state;
  const acquire = (name: string, waitMs = 10_000) =>
    registry.acquire(catalog.resolve(name), waitMs);
  return {
    catalog,
    registry,
    backend,
    weights,
    events,
    batches,
    mem,
    clock,
    count,
    state,
    acquire,
  };
}

/** Assert that `p` rejects with a ServiceError of `code` whose message matches `message`. */
async function rejectsWith(
  p: Promise<unknown>,
  code: string,
  message: RegExp,
): Promise<ServiceError> {
  const err = await p.then(() => assert.fail("expected a rejection"), (e) => e);
  assert.ok(err instanceof ServiceError, String(err));
  assert.equal(err.code, code);
  assert.match(err.message, message);
  return err;
}

Deno.test("registry: concurrent first requests share one load (available → loading → loaded)", async () => {
  const t = setup();
  assert.equal(t.state("org/a"), "available");
  t.backend.gate = deferred();
  const first = t.acquire("org/a");
  const second = t.acquire("org/a");
  await settle();
  assert.equal(t.state("org/a"), "loading");
  assert.equal(t.backend.starts.length, 1);
  t.backend.gate.resolve();
  const [m1, m2] = await Promise.all([first, second]);
  assert.equal(m1, m2);
  assert.equal(t.state("org/a"), "loaded");
  assert.equal(t.backend.starts.length, 1);
  assert.equal(t.count("model_loading", "org/a"), 1);
  assert.equal(t.count("model_loaded", "org/a"), 1);
  assert.equal(m1.device, "cpu");
  // A loaded model is handed out without another load; its batches run on its runner.
  assert.equal(await t.acquire("org/a"), m1);
  const r = await t.registry.use(m1, () => m1.batcher.submit([{ text: "hello" }], ENCODE));
  assert.deepEqual(r.outputs, [{ tokens: 5 }]);
  assert.deepEqual(t.backend.runners.get("org/a")?.batches, [[{ text: "hello" }]]);
  assert.deepEqual(t.batches.map((b) => [b.size, b.tokens, b.paddedTokens]), [[1, 5, 5]]);
});

Deno.test("registry: a wait past waitMs answers 503 MODEL_LOADING (Retry-After 5) while the load goes on", async () => {
  const t = setup();
  t.backend.gate = deferred();
  const err = await rejectsWith(t.acquire("org/b", 0), "MODEL_LOADING", /still loading/);
  assert.equal(err.status, 503);
  assert.equal(err.retryAfterS, 5);
  assert.equal(t.state("org/b"), "loading");
  t.backend.gate.resolve();
  await t.acquire("org/b");
  assert.equal(t.state("org/b"), "loaded");
  assert.equal(t.backend.starts.length, 1, "the late request joined the same load");
});

/** The detail fields a MODEL_LOAD_FAILED answer carries. */
function failedDetail(err: ServiceError) {
  assert.equal(err.code, "MODEL_LOAD_FAILED");
  assert.equal(err.status, 502);
  assert.equal(err.retryAfterS, undefined, "no Retry-After: the clients must not retry");
  const d = err.toBody().detail;
  return { error_class: d.error_class, attempts: d.attempts, permanent: d.permanent };
}

Deno.test("registry: a failed load answers 502 MODEL_LOAD_FAILED at once, without a new load, for the cool-down", async () => {
  const t = setup();
  t.backend.failures.set("org/a", new Error("inference thread crashed: out of memory"));
  const first = await rejectsWith(
    t.acquire("org/a"),
    "MODEL_LOAD_FAILED",
    /^model 'org\/a' failed to load: inference thread crashed: out of memory$/,
  );
  assert.deepEqual(failedDetail(first), {
    error_class: "internal",
    attempts: 1,
    permanent: false,
  });
  assert.deepEqual(first.toBody().detail, {
    code: "MODEL_LOAD_FAILED",
    message: "model 'org/a' failed to load: inference thread crashed: out of memory",
    error_class: "internal",
    attempts: 1,
    permanent: false,
  });
  assert.equal(t.state("org/a"), "failed");
  // The model's status says what the client got.
  assert.deepEqual(t.registry.status("org/a")?.lastError, {
    code: "MODEL_LOAD_FAILED",
    message: "inference thread crashed: out of memory",
  });
  assert.deepEqual(
    t.events.filter((e) => e.event === "model_load_failed").map((e) => e.fields),
    [{
      model: "org/a",
      key: "org/a",
      error_class: "internal",
      permanent: false,
      attempts: 1,
      error: "inference thread crashed: out of memory",
    }],
  );

  t.clock.now += COOLDOWN_MS - 1;
  assert.equal(await t.acquire("org/a").catch((e) => e), first, "the same answer, repeated");
  assert.equal(t.backend.starts.length, 1);
  assert.equal(t.weights.stampReads, 0, "a transient failure never looks at the caches");

  // Cool-down over: the next request loads again (and the failure is forgotten once it works).
  t.clock.now += 1;
  t.backend.failures.delete("org/a");
  await t.acquire("org/a");
  assert.equal(t.backend.starts.length, 2);
  assert.equal(t.state("org/a"), "loaded");
  assert.equal(t.registry.status("org/a")?.lastError, null);
});

Deno.test("registry: a transient failure is retried after each cool-down; attempts count the failures in a row", async () => {
  const t = setup();
  t.weights.failures.set(
    "org/b",
    sourceFailedError(
      "hub",
      { repo: "org/b", revision: "main", path: "m" },
      new TypeError("connection refused"),
    ),
  );
  const one = await rejectsWith(t.acquire("org/b"), "MODEL_LOAD_FAILED", /connection refused/);
  assert.deepEqual(failedDetail(one), {
    error_class: "hub_unreachable",
    attempts: 1,
    permanent: false,
  });
  t.clock.now += COOLDOWN_MS;
  // Concurrent requests after the cool-down share one new attempt.
  const again = await Promise.all(
    [t.acquire("org/b"), t.acquire("org/b")].map((p) => p.catch((e) => e)),
  );
  assert.equal(again[0], again[1]);
  assert.deepEqual(failedDetail(again[0]), {
    error_class: "hub_unreachable",
    attempts: 2,
    permanent: false,
  });
  assert.equal(t.weights.calls.length, 2);
  t.clock.now += COOLDOWN_MS;
  t.weights.failures.delete("org/b");
  await t.acquire("org/b");
  assert.equal(t.state("org/b"), "loaded");
  // A later failure counts from one again.
  await t.registry.unload("org/b");
  t.backend.failures.set("org/b", new Error("thread crashed"));
  const later = await rejectsWith(t.acquire("org/b"), "MODEL_LOAD_FAILED", /thread crashed/);
  assert.equal(failedDetail(later).attempts, 1);
});

Deno.test("registry: a permanent failure stays failed after the cool-down until the model's cached files change", async () => {
  const t = setup();
  t.backend.failures.set("org/c", new IncompatibleModelError("graph has no output 'logits'"));
  const first = await rejectsWith(t.acquire("org/c"), "MODEL_LOAD_FAILED", /no output 'logits'/);
  assert.deepEqual(failedDetail(first), {
    error_class: "incompatible",
    attempts: 1,
    permanent: true,
  });
  t.clock.now += COOLDOWN_MS * 10;
  assert.equal(await t.acquire("org/c").catch((e) => e), first, "same files: same answer");
  assert.equal(await t.acquire("org/c").catch((e) => e), first);
  assert.equal(t.backend.starts.length, 1, "no new load");
  assert.equal(t.state("org/c"), "failed");

  // An operator replaces the model's files in the cache: the next request loads again.
  t.weights.stamps.set("org/c", "v1");
  const second = await rejectsWith(t.acquire("org/c"), "MODEL_LOAD_FAILED", /no output/);
  assert.equal(t.backend.starts.length, 2);
  assert.equal(failedDetail(second).attempts, 2);
  // Within the cool-down the caches are not even read.
  const reads = t.weights.stampReads;
  t.weights.stamps.set("org/c", "v2");
  t.backend.failures.delete("org/c");
  t.clock.now += COOLDOWN_MS - 1;
  assert.equal(await t.acquire("org/c").catch((e) => e), second);
  assert.equal(t.weights.stampReads, reads);
  t.clock.now += 1;
  await t.acquire("org/c");
  assert.equal(t.state("org/c"), "loaded");
  assert.equal(t.registry.status("org/c")?.lastError, null);
});

Deno.test("registry: a permanent failure whose caches cannot be read is retried after the cool-down", async () => {
  const t = setup();
  t.weights.unreadable.add("org/a");
  t.weights.failures.set(
    "org/a",
    weightsNotFoundError({ repo: "org/a", revision: "main", path: "m" }, ["local-cache", "hub"]),
  );
  await rejectsWith(t.acquire("org/a"), "MODEL_LOAD_FAILED", /not found/);
  t.clock.now += COOLDOWN_MS;
  await rejectsWith(t.acquire("org/a"), "MODEL_LOAD_FAILED", /not found/);
  assert.equal(t.weights.calls.length, 2, "a fresh attempt reports the fresh cause");
});

Deno.test("registry: the class of each load failure, and which ones are permanent", async () => {
  const ref = { repo: "org/c", revision: "main", path: "onnx/model.onnx" };
  const cases: [string, unknown, string, boolean][] = [
    // [where, error, error_class, permanent]
    ["weights", weightsNotFoundError(ref, ["local-cache", "hub"]), "not_found", true],
    ["weights", accessDeniedError(ref, 401, false), "gated", true],
    [
      "weights",
      sourceFailedError("hub", ref, new TypeError("dns failure")),
      "hub_unreachable",
      false,
    ],
    ["weights", sourceFailedError("hub", ref, new HttpTimeoutError(300)), "timeout", false],
    ["weights", new Error("disk full"), "internal", false],
    ["backend", new IncompatibleModelError("tokenizer.json is not valid"), "incompatible", true],
    ["backend", "a thrown string", "internal", false],
  ];
  for (const [where, cause, errorClass, permanent] of cases) {
    const t = setup();
    if (where === "weights") t.weights.failures.set("org/c", cause);
    else t.backend.failures.set("org/c", cause);
    const err = await rejectsWith(
      t.acquire("org/c"),
      "MODEL_LOAD_FAILED",
      /^model 'org\/c' failed to load: /,
    );
    assert.deepEqual(
      failedDetail(err),
      { error_class: errorClass, attempts: 1, permanent },
      String(cause),
    );
    assert.equal(t.registry.status("org/c")?.lastError?.code, "MODEL_LOAD_FAILED");
    assert.equal(t.backend.starts.length, where === "weights" ? 0 : 1);
  }
});

Deno.test("registry: the model cap evicts the least recently used idle model before a load", async () => {
  const t = setup({ maxLoadedModels: 2 });
  await t.acquire("org/a");
  t.clock.now += 10;
  await t.acquire("org/b");
  t.clock.now += 10;
  await t.acquire("org/a"); // a is now the most recent
  t.clock.now += 10;
  await t.acquire("org/c");
  assert.equal(t.state("org/b"), "available");
  assert.equal(t.backend.runners.get("org/b")?.disposed, true);
  assert.equal(t.state("org/a"), "loaded");
  assert.equal(t.state("org/c"), "loaded");
  const evicted = t.events.filter((e) => e.event === "model_evicted");
  assert.deepEqual(evicted.map((e) => [e.fields.model, e.fields.reason]), [["org/b", "model_cap"]]);
  assert.equal(t.count("model_unloaded", "org/b"), 1);
});

Deno.test("registry: models in use or with work on the thread are never evicted", async () => {
  const t = setup({ maxLoadedModels: 2 });
  const a = await t.acquire("org/a");
  t.clock.now += 10;
  const b = await t.acquire("org/b");
  const release = deferred();
  const using = t.registry.use(a, () => release.promise);
  const runnerB = t.backend.runners.get("org/b")!;
  runnerB.hold = deferred();
  const running = b.batcher.submit([{ text: "x" }], ENCODE);
  t.clock.now += 10;
  // No idle victim: the load goes ahead over the cap rather than wait or fail.
  await t.acquire("org/c");
  assert.deepEqual(["org/a", "org/b", "org/c"].map(t.state), ["loaded", "loaded", "loaded"]);
  assert.equal(t.events.filter((e) => e.event === "model_evicted").length, 0);
  release.resolve();
  runnerB.hold.resolve();
  await Promise.all([using, running]);
});

Deno.test("registry: memory pressure evicts idle models, oldest first, until below the threshold", async () => {
  const t = setup({ memoryThresholdPercent: 50 });
  await t.acquire("org/a");
  t.clock.now += 10;
  await t.acquire("org/b");
  t.mem.usedPercent = 80;
  t.backend.onDispose = () => t.mem.usedPercent -= 40;
  t.clock.now += 10;
  await t.acquire("org/c");
  assert.equal(t.state("org/a"), "available", "the oldest went first");
  assert.equal(t.state("org/b"), "loaded", "one eviction brought memory under the threshold");
  const evicted = t.events.filter((e) => e.event === "model_evicted");
  assert.deepEqual(evicted.map((e) => e.fields), [
    { model: "org/a", memory_used_percent: 80, reason: "memory_pressure" },
  ]);
});

Deno.test("registry: unload lets running work finish, then disposes; requests meanwhile get 503", async () => {
  const t = setup();
  const a = await t.acquire("org/a");
  const runner = t.backend.runners.get("org/a")!;
  runner.hold = deferred();
  const running = a.batcher.submit([{ text: "abc" }], ENCODE);
  const unloading = t.registry.unload("org/a");
  await settle();
  assert.equal(t.state("org/a"), "unloading");
  assert.equal(runner.disposed, false, "not while a batch runs");
  await rejectsWith(t.acquire("org/a"), "MODEL_NOT_LOADED", /unloading/);
  runner.hold.resolve();
  assert.deepEqual((await running).outputs, [{ tokens: 3 }]);
  await unloading;
  assert.equal(runner.disposed, true);
  assert.equal(t.state("org/a"), "available");
  assert.equal(t.count("model_unloaded", "org/a"), 1);
  // Available again: the next request loads it anew.
  await t.acquire("org/a");
  assert.equal(t.backend.starts.length, 2);
});

Deno.test("registry: closeAll fails queued and running work with SHUTTING_DOWN and stops every runner within its bound", async () => {
  const t = setup();
  const a = await t.acquire("org/a");
  await t.acquire("org/b");
  const runner = t.backend.runners.get("org/a")!;
  runner.hold = deferred();
  const running = a.batcher.submit([{ text: "on the thread" }], ENCODE).catch((e) => e);
  const queued = a.batcher.submit([{ text: "waiting" }], ENCODE).catch((e) => e);
  await t.registry.closeAll(250);
  const err = await queued;
  assert.ok(err instanceof ServiceError);
  assert.equal(err.code, "SHUTTING_DOWN");
  // The batch torn down on the thread gets the same retryable answer, not an inference error.
  const cut = await running;
  assert.ok(cut instanceof ServiceError);
  assert.equal(cut.code, "SHUTTING_DOWN");
  assert.equal(cut.retryAfterS, 5);
  assert.equal(runner.disposedWith, 250);
  assert.equal(t.backend.runners.get("org/b")?.disposedWith, 250);
  assert.deepEqual(["org/a", "org/b"].map(t.state), ["available", "available"]);
});

Deno.test("registry: a profile's own model file is its own unit; the run budget follows the device", async () => {
  const cpu = setup();
  await cpu.acquire("org/a:small");
  assert.deepEqual(cpu.weights.calls[0].files, {
    model: "onnx/model_int8.onnx",
    tokenizer: "t.json",
  });
  assert.deepEqual(cpu.registry.statuses().map((s) => [s.name, s.state]), [
    ["org/a", "available"],
    ["org/b", "available"],
    ["org/c", "available"],
    ["org/a@onnx/model_int8.onnx", "loaded"],
  ]);
  assert.equal(cpu.backend.starts[0].files.model, "/fake/org/a/onnx/model_int8.onnx");
  // A served name reports the state of the file it runs.
  assert.equal(cpu.registry.servedStatus(cpu.catalog.resolve("org/a:small"))?.state, "loaded");
  assert.equal(cpu.registry.servedStatus(cpu.catalog.resolve("org/a"))?.state, "available");
  const fresh = setup();
  assert.equal(
    fresh.registry.servedStatus(fresh.catalog.resolve("org/a:small"))?.state,
    "available",
  );
  assert.equal(fresh.registry.statuses().length, 3, "asking adds no unit");
  assert.equal(cpu.backend.starts[0].runTokenBudget, 1024, "CPU runs stay near 1k tokens");

  const gpu = setup({ device: "cuda" });
  const m = await gpu.acquire("org/b");
  assert.equal(m.device, "cuda");
  assert.equal(gpu.registry.deviceName, "cuda");
  assert.equal(gpu.backend.starts[0].runTokenBudget, 8192, "GPUs take the model's whole budget");
  const capped = setup({ device: "cuda", maxRunTokens: 2000 });
  await capped.acquire("org/b");
  assert.equal(capped.backend.starts[0].runTokenBudget, 2000);
});

Deno.test("registry: an entry added to the served catalog at run time is served (a taken id is refused)", async () => {
  const entries = new Map(CATALOG);
  const t = setup({ entries });
  assert.throws(() => t.catalog.resolve("org/late"), /not in the catalog/);
  assert.equal(t.catalog.add(model("org/late")), true);
  // Announced at once (the status frames list every unit), without being loaded.
  assert.equal(t.state("org/late"), "available");
  assert.ok(t.registry.statuses().some((s) => s.name === "org/late"));
  assert.equal(t.catalog.get("org/late")?.id, "org/late");
  const m = await t.acquire("org/late");
  assert.equal(t.state("org/late"), "loaded");
  assert.equal(m.config.id, "org/late");
  // An id already served keeps its entry.
  const before = t.catalog.get("org/a");
  assert.equal(t.catalog.add(model("org/a")), false);
  assert.equal(t.catalog.get("org/a"), before);
  assert.ok(!CATALOG.has("org/late"));
});

/** `catalog.resolve(name)` as a promise (its throw becomes a rejection). */
function resolving(t: ReturnType<typeof setup>, name: string): Promise<unknown> {
  return Promise.resolve().then(() => t.catalog.resolve(name));
}

/** A run-time configured entry whose configure calls the test answers one by one. */
function deferredEntry(id: string) {
  const calls: Deferred<ModelConfig>[] = [];
  const files = { stamp: "v0" };
  const entry = {
    id,
    bundle: "default",
    source: { kind: "directory" as const },
    configure: () => {
      const d = deferred<ModelConfig>();
      calls.push(d);
      return d.promise;
    },
    stamp: () => Promise.resolve(files.stamp),
  };
  return { entry, calls, files };
}

Deno.test("registry: an SVC_MODELS entry answers 503 while configured, then serves like any entry", async () => {
  const late = deferredEntry("org/late");
  const t = setup({ deferred: [late.entry] });
  assert.equal(late.calls.length, 1, "configuring starts with the served catalog");
  assert.deepEqual(t.catalog.pendingEntries().map((p) => [p.id, p.state]), [
    ["org/late", "loading"],
  ]);
  await rejectsWith(resolving(t, "org/late"), "MODEL_LOADING", /configured/);
  // A request waits at most its bound, then gets the 503.
  await t.catalog.settle("org/late", 1);
  await rejectsWith(resolving(t, "org/late"), "MODEL_LOADING", /configured/);
  late.calls[0].resolve(model("org/late"));
  await t.catalog.settle("org/late", 1000);
  await t.catalog.settled();
  assert.deepEqual(t.catalog.pendingEntries(), []);
  assert.equal(t.catalog.resolve("org/late").config.id, "org/late");
  assert.equal((await t.acquire("org/late")).config.id, "org/late");
  assert.equal(t.count("model_configured", "org/late"), 1);
});

Deno.test("registry: a failed SVC_MODELS entry fails alone; transient causes retry after the cool-down", async () => {
  const hubDown = deferredEntry("org/hub");
  const broken = deferredEntry("org/broken");
  const t = setup({ deferred: [hubDown.entry, broken.entry] });
  const ref = { repo: "org/hub", revision: "main", path: "(file list)" };
  hubDown.calls[0].reject(sourceFailedError("hub", ref, new Error("connection refused")));
  broken.calls[0].reject(new IncompatibleModelError("config.json architectures: names Foo"));
  await t.catalog.settled();
  const facts = t.catalog.pendingEntries();
  assert.deepEqual(facts.map((p) => [p.id, p.state]), [
    ["org/hub", "failed"],
    ["org/broken", "failed"],
  ]);
  assert.match(facts[1].lastError!.message, /config\.json architectures/);
  // The others serve.
  assert.equal((await t.acquire("org/b")).config.id, "org/b");
  await rejectsWith(resolving(t, "org/hub"), "MODEL_LOAD_FAILED", /refused/);
  assert.throws(() => t.catalog.resolve("org/broken"), (err) => {
    assert.deepEqual((err as ServiceError).extra, {
      error_class: "incompatible",
      attempts: 1,
      permanent: true,
    });
    return true;
  });
  // Within the cool-down nothing is tried again.
  await t.catalog.settle("org/hub", 1000);
  await t.catalog.settle("org/broken", 1000);
  assert.equal(hubDown.calls.length, 1);
  assert.equal(broken.calls.length, 1);
  t.clock.now += COOLDOWN_MS;
  // After it, a transient cause is tried again by the next request (and may now succeed)...
  const retried = t.catalog.settle("org/hub", 1000);
  await settle();
  assert.equal(hubDown.calls.length, 2);
  hubDown.calls[1].resolve(model("org/hub"));
  await retried;
  assert.equal(t.catalog.resolve("org/hub").config.id, "org/hub");
  // ...a permanent one only once the files it read changed.
  await t.catalog.settle("org/broken", 1000);
  assert.equal(broken.calls.length, 1);
  broken.files.stamp = "v1";
  const again = t.catalog.settle("org/broken", 1000);
  await settle();
  assert.equal(broken.calls.length, 2);
  broken.calls[1].resolve(model("org/broken"));
  await again;
  assert.equal(t.catalog.resolve("org/broken").config.id, "org/broken");
});

Deno.test("registry: a 404 names the closest served names", () => {
  const late = deferredEntry("org/pending");
  const t = setup({ deferred: [late.entry] });
  assert.throws(
    () => t.catalog.resolve("org/aa"),
    (err) =>
      err instanceof ServiceError && err.code === "MODEL_NOT_FOUND" &&
      /not in the catalog; did you mean org\/a\?$/.test(err.message),
  );
  assert.throws(() => t.catalog.resolve("org/pendin"), /did you mean org\/pending\?/);
  assert.throws(
    () => t.catalog.resolve("something/else-entirely"),
    (err) => err instanceof Error && !err.message.includes("did you mean"),
  );
});

Deno.test("registry: a loaded model reports its revision; one not loaded, or unhashable, none", async () => {
  const seen: string[] = [];
  const t = setup({
    revisions: {
      revisionOf: (config, modelFile) => {
        seen.push(`${config.id} ${modelFile}`);
        return config.id === "org/c"
          ? Promise.reject(new Error("unreadable"))
          : Promise.resolve("0123456789abcdef0123456789abcdef");
      },
    },
  });
  assert.equal(t.registry.status("org/a")?.revision, undefined);
  const m = await t.acquire("org/a");
  assert.equal(m.revision, "0123456789abcdef0123456789abcdef");
  assert.equal(t.registry.status("org/a")?.revision, m.revision);
  await t.registry.unload("org/a");
  assert.equal(t.registry.status("org/a")?.revision, undefined);
  // A model whose files cannot be hashed still loads, announcing no revision.
  const c = await t.acquire("org/c");
  assert.equal(c.revision, undefined);
  assert.equal(t.registry.status("org/c")?.state, "loaded");
  assert.equal(t.count("model_revision_unknown", "org/c"), 1);
  assert.deepEqual(seen, ["org/a onnx/model.onnx", "org/c onnx/model.onnx"]);
});

/** org/q with an int8 graph for CPUs, as a CPU worker's catalog holds it. */
function int8Entries(): Map<string, ModelConfig> {
  const q = model("org/q", { device_files: { cpu: { model: "onnx/model_quantized.onnx" } } });
  return catalogForDevice(new Map([[q.id, q]]), "cpu", false);
}

Deno.test("registry: an int8 graph is probed against its float files; refused, the float files run", async () => {
  const t = setup({ entries: int8Entries() });
  const probe = { metric: "mean_cosine" as const, value: 0.968, threshold: 0.99, inputs: 8 };
  t.backend.int8.set("org/q", { accepted: false, probe, ms: 4 });
  assert.equal(t.registry.status("org/q")?.quantization?.checked, false, "before its load");
  await t.acquire("org/q");
  // Its own files, then the float ones for the probe, which the runner is started with.
  assert.deepEqual(t.weights.calls.map((c) => c.files), [
    { model: "onnx/model_quantized.onnx", tokenizer: "t.json" },
    { model: "onnx/model.onnx", model_data: "onnx/model.onnx_data" },
  ]);
  assert.deepEqual(t.backend.starts[0].int8Probe, {
    floatFiles: {
      model: "/fake/org/q/onnx/model.onnx",
      model_data: "/fake/org/q/onnx/model.onnx_data",
    },
  });
  const st = t.registry.status("org/q")!;
  assert.equal(st.quantization?.serving, "float");
  assert.equal(st.quantization?.checked, true);
  assert.deepEqual(st.files, {
    model: "onnx/model.onnx",
    model_data: "onnx/model.onnx_data",
    tokenizer: "t.json",
  });
  const refused = t.events.find((e) => e.event === "model_int8_refused");
  assert.ok(refused, JSON.stringify(t.events));
  assert.equal(refused.fields.serving, "float");
  assert.match(String(refused.fields.reason), /mean cosine 0\.9680 < 0\.99/);
});

Deno.test("registry: a kept int8 graph runs; float files that cannot be had leave it unchecked", async () => {
  const kept = setup({ entries: int8Entries() });
  const probe = { metric: "mean_cosine" as const, value: 0.9995, threshold: 0.99, inputs: 8 };
  kept.backend.int8.set("org/q", { accepted: true, probe, ms: 4 });
  await kept.acquire("org/q");
  const st = kept.registry.status("org/q")!;
  assert.equal(st.quantization?.serving, "quantized");
  assert.equal(st.files?.model, "onnx/model_quantized.onnx");
  assert.equal(kept.count("model_int8_checked", "org/q"), 1);
  // The float graph's download fails: the quantised graph still serves, marked as not checked.
  const lost = setup({ entries: int8Entries() });
  const ensure = lost.weights.ensureFiles.bind(lost.weights);
  lost.weights.ensureFiles = (repo, revision, files) =>
    files.model === "onnx/model.onnx"
      ? Promise.reject(new Error("hub unreachable"))
      : ensure(repo, revision, files);
  await lost.acquire("org/q");
  assert.equal(lost.backend.starts[0].int8Probe, undefined);
  const q = lost.registry.status("org/q")!.quantization!;
  assert.equal(q.serving, "quantized");
  assert.equal(q.checked, false);
  assert.match(q.reason, /not checked: .*float graph could not be had: hub unreachable/);
  assert.equal(lost.count("model_int8_unchecked", "org/q"), 1);
  // No probe on a GPU worker (the plan is the CPU's; a CUDA catalog has none anyway).
  const gpu = setup({ entries: int8Entries(), device: "cuda" });
  await gpu.acquire("org/q");
  assert.equal(gpu.backend.starts[0].int8Probe, undefined);
  assert.equal(gpu.weights.calls.length, 1);
});
