/**
 * The model registry with a fake backend, weights store, memory probe and clock: loading,
 * eviction, failure memory and state transitions in milliseconds. Real ONNX models go through
 * the same registry in tests/worker/registry.test.ts.
 */
import assert from "node:assert/strict";
import { ServiceError } from "@svc/shared/errors";
import { IncompatibleModelError } from "#worker/registry/runner.ts";
import { deferred } from "../fake_backend.ts";
import {
  accessDeniedError,
  sourceFailedError,
  weightsNotFoundError,
} from "#worker/weights/errors.ts";
import { HttpTimeoutError } from "#worker/weights/http.ts";
import { COOLDOWN_MS, ENCODE, rejectsWith, settle, setup } from "./registry_helpers.ts";

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
