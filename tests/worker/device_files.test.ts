/**
 * Per-device files: a catalog entry naming an int8 graph for CPUs runs it on a CPU worker (real
 * ORT runs of the fixture's quantised twin), SVC_FORCE_FP32 keeps the float graph, and the
 * worker reports its compute budget.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ensureFixtures } from "@svc/fixture-models";
import { INT8_MODEL_PATH } from "@svc/fixture-models/models";
import { configForDevice } from "../../worker/catalog/device_files.ts";
import { parseModelConfig } from "@svc/shared/catalog/schema";
import { type Json, postJson, withWorker } from "./harness.ts";
import { cosine, expectedDense, maxDiff } from "./expected.ts";

const TEXTS = ["the cat sat on the mat", "a longer sentence about the weather in the city"];

/** A models dir holding fixture/dense with `device_files.cpu` naming its int8 twin. */
async function int8Catalog(): Promise<string> {
  const fx = await ensureFixtures();
  const entry = JSON.parse(await Deno.readTextFile(join(fx, "models", "dense.json")));
  entry.device_files = { cpu: { model: INT8_MODEL_PATH } };
  const dir = await Deno.makeTempDir({ prefix: "svc-device-files-" });
  await Deno.writeTextFile(join(dir, "dense.json"), JSON.stringify(entry));
  return dir;
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
        assert.ok(cosine(v, want[i]) > 0.99, `item ${i}: cosine too low`);
      });
      const metrics = await (await fetch(`${w.url}/metrics`)).text();
      assert.match(metrics, /^svc_compute_threads 1$/m);
    }, env);
    await withWorker(async (w) => {
      const got = await encode(w.url);
      got.forEach((v, i) => assert.ok(maxDiff(v, want[i]) < 1e-4, `item ${i} differs`));
    }, { ...env, SVC_FORCE_FP32: "1" });
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
