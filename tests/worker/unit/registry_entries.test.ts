/**
 * The model registry with fakes (registry_helpers.ts): served-catalog entries added at run time,
 * SVC_MODELS entries, 404 suggestions, revisions and the int8 probe.
 */
import assert from "node:assert/strict";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { ServiceError } from "@svc/shared/errors";
import { IncompatibleModelError } from "#worker/registry/runner.ts";
import { type Deferred, deferred } from "../fake_backend.ts";
import { sourceFailedError } from "#worker/weights/errors.ts";
import { catalogForDevice } from "#worker/catalog/device_files.ts";
import { CATALOG, COOLDOWN_MS, model, rejectsWith, settle, setup } from "./registry_helpers.ts";

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
