/**
 * Per-device files: a catalog entry naming an int8 graph for CPUs runs it on a CPU worker (real
 * ORT runs of the fixture's quantised twin) once the load probe found it agrees with the float
 * graph, and runs the float graph when it does not (with the reason in /v1/models and the log);
 * SVC_FORCE_FP32 keeps the float graph, and the worker reports its compute budget.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ensureFixtures } from "@svc/fixture-models";
import { dense, INT8_MODEL_PATH } from "@svc/fixture-models/models";
import { configForDevice } from "#worker/catalog/device_files.ts";
import { parseModelConfig } from "@svc/shared/catalog/schema";
import { type Json, postJson, withWorker } from "./harness.ts";
import { cosine, expectedDense, maxDiff } from "./expected.ts";
import { cpuFeatures } from "../helpers/cpu_features.ts";

const TEXTS = ["the cat sat on the mat", "a longer sentence about the weather in the city"];

/** A models dir holding fixture/dense with `device_files.cpu` naming `graph` (its int8 twin). */
async function int8Catalog(graph = INT8_MODEL_PATH): Promise<string> {
  const fx = await ensureFixtures();
  const entry = JSON.parse(await Deno.readTextFile(join(fx, "models", "dense.json")));
  entry.device_files = { cpu: { model: graph } };
  const dir = await Deno.makeTempDir({ prefix: "svc-device-files-" });
  await Deno.writeTextFile(join(dir, "dense.json"), JSON.stringify(entry));
  return dir;
}

async function modelInfo(url: string): Promise<Json> {
  return await (await fetch(`${url}/v1/models/fixture/dense`)).json();
}

async function encode(url: string): Promise<number[][]> {
  const r = await postJson(`${url}/v1/encode/fixture/dense`, {
    items: TEXTS.map((text) => ({ text })),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.items.map((it: Json) => it.dense.values as number[]);
}

Deno.test("configForDevice: overrides on their device only, model_data dropped with the graph", () => {
  const c = parseModelConfig({
    id: "org/m",
    family: "dense",
    hub: { repo: "org/m", revision: "main" },
    files: { model: "onnx/model.onnx", model_data: "onnx/model.onnx_data", tokenizer: "t.json" },
    device_files: { cpu: { model: "onnx/model_quantized.onnx" } },
    inputs: ["text"],
    outputs: ["dense"],
    max_sequence_length: 128,
  }, "test");
  assert.deepEqual(configForDevice(c, "cpu", false).files, {
    model: "onnx/model_quantized.onnx",
    tokenizer: "t.json",
  });
  assert.equal(configForDevice(c, "cuda", false), c);
  assert.equal(configForDevice(c, "cpu", true), c);
  assert.throws(
    () => parseModelConfig({ ...c, device_files: { tpu: { model: "x.onnx" } } }, "bad"),
    /device_files/,
  );
  assert.throws(
    () => parseModelConfig({ ...c, device_files: { cpu: { model: "../x.onnx" } } }, "bad"),
    /device_files/,
  );
});

Deno.test("a CPU worker runs the catalog's int8 file; SVC_FORCE_FP32 keeps the float graph", async () => {
  const dir = await int8Catalog();
  try {
    const want = await expectedDense("dense", TEXTS);
    const env = { SVC_MODELS_DIR: dir, SVC_PRELOAD_MODELS: "fixture/dense" };
    await withWorker(async (w) => {
      const got = await encode(w.url);
      got.forEach((v, i) => {
        // int8 rounding moves the values, but the vectors point the same way.
        assert.ok(maxDiff(v, want[i]) > 1e-4, `item ${i} is the float result`);
        const c = cosine(v, want[i]);
        assert.ok(c > 0.99, `item ${i}: cosine ${c} on ${cpuFeatures()}`);
      });
      // The load probe checked it against the float graph on this CPU, and says so.
      const q = (await modelInfo(w.url)).quantization;
      assert.equal(q.graph, INT8_MODEL_PATH);
      assert.equal(q.float_graph, "onnx/model.onnx");
      assert.equal(q.serving, "quantized", `${q.reason} on ${cpuFeatures()}`);
      assert.equal(q.checked, true);
      assert.equal(q.probe.metric, "mean_cosine");
      assert.ok(q.probe.value >= 0.99 && q.probe.value < 1, JSON.stringify(q.probe));
      assert.match(
        q.reason,
        /^agrees with onnx\/model.onnx on this CPU: mean cosine 0\.99\d\d ≥ 0\.99 over 8 texts$/,
      );
      const line = w.logs.find((l) => l.includes('"model_int8_checked"'));
      assert.ok(line, w.logs.join("\n"));
      assert.match(line, /"serving":"quantized"/);
      const metrics = await (await fetch(`${w.url}/metrics`)).text();
      assert.match(metrics, /^svc_compute_threads 1$/m);
    }, env);
    await withWorker(async (w) => {
      const got = await encode(w.url);
      got.forEach((v, i) => assert.ok(maxDiff(v, want[i]) < 1e-4, `item ${i} differs`));
      assert.equal((await modelInfo(w.url)).quantization, undefined);
    }, { ...env, SVC_FORCE_FP32: "1" });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an int8 graph that disagrees with the float one is refused: the float graph serves", async () => {
  // A quantised graph of other weights (fixture/dense's embeddings reversed), named like the
  // hub's int8 exports and put in a copy of the fixture's cache.
  const fx = await ensureFixtures();
  const cache = await Deno.makeTempDir({ prefix: "svc-int8-cache-" });
  const dir = await int8Catalog("onnx/model_bad_int8.onnx");
  try {
    const repo = join(cache, "fixture", "dense");
    await Deno.mkdir(join(repo, "onnx"), { recursive: true });
    for (
      const f of [
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "onnx/model.onnx",
      ]
    ) {
      await Deno.copyFile(join(fx, "cache", "fixture", "dense", f), join(repo, f));
    }
    const w8 = dense.weights();
    w8.embeddings.word.data.reverse();
    const bad = dense.files(w8).find((f) => f.path === INT8_MODEL_PATH)!;
    await Deno.writeFile(join(repo, "onnx", "model_bad_int8.onnx"), bad.bytes);
    const want = await expectedDense("dense", TEXTS);
    await withWorker(async (w) => {
      const got = await encode(w.url);
      got.forEach((v, i) =>
        assert.ok(maxDiff(v, want[i]) < 1e-4, `item ${i} is not the float result`)
      );
      const info = await modelInfo(w.url);
      const q = info.quantization;
      assert.equal(q.serving, "float");
      assert.equal(q.checked, true);
      assert.ok(q.probe.value < 0.99, JSON.stringify(q.probe));
      assert.match(
        q.reason,
        /^disagrees with onnx\/model.onnx on this CPU \(mean cosine 0\.\d{4} < 0\.99 over 8 texts\): the float graph runs$/,
      );
      const line = w.logs.find((l) => l.includes('"model_int8_refused"'));
      assert.ok(line, w.logs.join("\n"));
      assert.match(line, /"level":"warn"/);
      assert.match(line, /"serving":"float"/);
      // The float graph is what the model holds in memory.
      const floatBytes = (await Deno.stat(join(repo, "onnx", "model.onnx"))).size;
      const metrics = await (await fetch(`${w.url}/metrics`)).text();
      const held = /^svc_model_memory_bytes\{[^}]*model="fixture\/dense"[^}]*\} (\d+)$/m.exec(
        metrics,
      );
      assert.equal(Number(held?.[1]), floatBytes, metrics);
    }, {
      SVC_MODELS_DIR: dir,
      SVC_CLUSTER_CACHE: cache,
      SVC_MODEL_FILTER: "fixture/dense",
      SVC_PRELOAD_MODELS: "fixture/dense",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("a quantised graph with no float graph beside it says its quality was not checked", async () => {
  const fx = await ensureFixtures();
  const entry = JSON.parse(await Deno.readTextFile(join(fx, "models", "dense.json")));
  entry.files.model = INT8_MODEL_PATH;
  const dir = await Deno.makeTempDir({ prefix: "svc-int8-only-" });
  await Deno.writeTextFile(join(dir, "dense.json"), JSON.stringify(entry));
  try {
    await withWorker(async (w) => {
      assert.equal((await encode(w.url)).length, TEXTS.length);
      const q = (await modelInfo(w.url)).quantization;
      assert.deepEqual(q, {
        graph: INT8_MODEL_PATH,
        serving: "quantized",
        checked: false,
        reason: "no float graph beside it to compare with: its quality was not checked",
      });
      const line = w.logs.find((l) => l.includes('"model_int8_unchecked"'));
      assert.ok(line, w.logs.join("\n"));
      assert.match(line, /"level":"warn"/);
    }, {
      SVC_MODELS_DIR: dir,
      SVC_MODEL_FILTER: "fixture/dense",
      SVC_PRELOAD_MODELS: "fixture/dense",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("two busy models take turns on the compute gate: no deadlock, answers correct", async () => {
  const want = await expectedDense("dense", TEXTS);
  await withWorker(async (w) => {
    // Many requests to two models at once: their runs take turns on the gate across threads.
    const dense = Array.from({ length: 24 }, () => encode(w.url));
    const other = Array.from(
      { length: 24 },
      () => postJson(`${w.url}/v1/encode/fixture/colbert`, { items: [{ text: TEXTS[0] }] }),
    );
    const [a, b] = await Promise.all([Promise.all(dense), Promise.all(other)]);
    for (const got of a) got.forEach((v, i) => assert.ok(maxDiff(v, want[i]) < 1e-4));
    for (const r of b) assert.equal(r.status, 200, JSON.stringify(r.body));
  }, { SVC_PRELOAD_MODELS: "fixture/dense,fixture/colbert", SVC_INTRA_OP_THREADS: "2" });
});
