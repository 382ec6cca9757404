/**
 * Quantised graphs on CPU workers: the plan a catalog entry gets (probe it, or keep the float
 * graph for families the probe cannot check), what `/v1/models` says in every case, how the
 * probe compares outputs, and the probe itself on real fixture graphs in onnxruntime-node: the
 * int8 twins of fixture/dense (embeddings) and fixture/reranker (scores) agree with their float
 * graphs, and a quantised graph of other weights is refused.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ensureFixtures } from "@svc/fixture-models";
import { dense, INT8_MODEL_PATH } from "@svc/fixture-models/models";
import { type ModelConfig, parseModelConfig } from "@svc/shared/catalog/schema";
import { configForDevice } from "#worker/catalog/device_files.ts";
import {
  int8PlanFor,
  isQuantizedGraph,
  quantizationInfo,
  servedFiles,
} from "#worker/catalog/int8.ts";
import {
  compareOutputs,
  MIN_MEAN_COSINE,
  MIN_SCORE_CORRELATION,
  probeAccepts,
  probeQuantized,
} from "#worker/inference/int8_probe.ts";
import { FAMILY_ADAPTERS } from "#worker/families/adapters.ts";
import type { ItemOutput, ModelAdapter } from "#worker/families/types.ts";
import { cpuFeatures } from "../helpers/cpu_features.ts";

function entry(family: string, extra: Record<string, unknown> = {}): ModelConfig {
  return parseModelConfig({
    id: "org/m",
    family,
    hub: { repo: "org/m", revision: "main" },
    files: { model: "onnx/model.onnx", model_data: "onnx/model.onnx_data", tokenizer: "t.json" },
    device_files: { cpu: { model: "onnx/model_quantized.onnx" } },
    inputs: ["text"],
    outputs: family === "reranker" ? ["score"] : family === "gliner" ? ["entities"] : ["dense"],
    max_sequence_length: 128,
    ...extra,
  }, "test");
}

Deno.test("isQuantizedGraph: the names hub exports give their int8 variants", () => {
  for (
    const p of [
      "onnx/model_quantized.onnx",
      "onnx/model_int8.onnx",
      "model_uint8.onnx",
      "onnx/model_qint8_avx512_vnni.onnx",
      "onnx/model_quint8_avx2.onnx",
      "onnx/text_model_quantized.onnx",
    ]
  ) assert.ok(isQuantizedGraph(p), p);
  for (const p of ["onnx/model.onnx", "model_fp16.onnx", "vespa_colbert.onnx", "int8/model.onnx"]) {
    assert.ok(!isQuantizedGraph(p), p);
  }
});

Deno.test("CPU plan: probe the int8 graph against the float files, or keep float where no probe", () => {
  const d = configForDevice(entry("dense"), "cpu", false);
  assert.equal(d.files.model, "onnx/model_quantized.onnx");
  assert.equal(d.files.model_data, undefined, "the float graph's external data is not fetched");
  assert.deepEqual(d.int8, {
    graph: "onnx/model_quantized.onnx",
    float_files: { model: "onnx/model.onnx", model_data: "onnx/model.onnx_data" },
  });
  // GLiNER answers spans: the probe cannot compare them, so the float graph runs from the start.
  const g = configForDevice(entry("gliner"), "cpu", false);
  assert.equal(g.files.model, "onnx/model.onnx");
  assert.equal(g.files.model_data, "onnx/model.onnx_data");
  assert.match(g.int8!.skipped!, /not gliner outputs: the float graph onnx\/model.onnx runs/);
  // No plan on CUDA, with SVC_FORCE_FP32, or for a CPU file that is not a quantised graph.
  assert.equal(configForDevice(entry("dense"), "cuda", false).int8, undefined);
  assert.equal(configForDevice(entry("dense"), "cpu", true).int8, undefined);
  const other = entry("dense", { device_files: { cpu: { model: "onnx/model_cpu.onnx" } } });
  assert.equal(int8PlanFor(other, { model: "onnx/model_cpu.onnx" }), undefined);
});

Deno.test("quantization info: pending, checked, refused, probe failed, skipped, not checked", () => {
  const d = configForDevice(entry("dense"), "cpu", false);
  const probe = { metric: "mean_cosine" as const, value: 0.9993, threshold: 0.99, inputs: 8 };
  assert.deepEqual(quantizationInfo(d, d.files.model), {
    graph: "onnx/model_quantized.onnx",
    float_graph: "onnx/model.onnx",
    serving: "quantized",
    checked: false,
    reason: "checked against onnx/model.onnx when the model loads on this worker",
  });
  const ok = quantizationInfo(d, d.files.model, { accepted: true, probe, ms: 5 })!;
  assert.equal(ok.serving, "quantized");
  assert.equal(ok.checked, true);
  assert.equal(
    ok.reason,
    "agrees with onnx/model.onnx on this CPU: mean cosine 0.9993 ≥ 0.99 over 8 texts",
  );
  const low = { ...probe, value: 0.968 };
  const refused = quantizationInfo(d, d.files.model, { accepted: false, probe: low, ms: 5 })!;
  assert.equal(refused.serving, "float");
  assert.match(
    refused.reason,
    /^disagrees with onnx\/model.onnx on this CPU \(mean cosine 0\.9680 < 0\.99 over 8 texts\): the float graph runs$/,
  );
  // A refused graph's float files run in its place, external data included.
  assert.deepEqual(servedFiles(d, { accepted: false, probe: low, ms: 5 }), {
    model: "onnx/model.onnx",
    model_data: "onnx/model.onnx_data",
    tokenizer: "t.json",
  });
  assert.equal(servedFiles(d, { accepted: true, probe, ms: 5 }), d.files);
  const failed = quantizationInfo(d, d.files.model, { accepted: true, error: "boom", ms: 5 })!;
  assert.equal(failed.checked, false);
  assert.match(failed.reason, /not checked: the load probe failed \(boom\)/);
  const g = configForDevice(entry("gliner"), "cpu", false);
  assert.equal(quantizationInfo(g, g.files.model)!.serving, "float");
  // A quantised graph with nothing to compare it with (the repository's only graph, a profile's
  // own file) says so; a float graph says nothing.
  const only = entry("dense", { files: { model: "onnx/model_quantized.onnx" } });
  delete (only as Partial<ModelConfig>).device_files;
  assert.deepEqual(quantizationInfo(only, only.files.model), {
    graph: "onnx/model_quantized.onnx",
    serving: "quantized",
    checked: false,
    reason: "no float graph beside it to compare with: its quality was not checked",
  });
  assert.equal(quantizationInfo(entry("dense"), "onnx/model.onnx"), undefined);
  assert.match(
    quantizationInfo(entry("dense"), "onnx/model_int8.onnx")!.reason,
    /^a profile's own graph \(model_file\), run as asked: its quality was not checked$/,
  );
});

Deno.test("compareOutputs: mean cosine of embeddings, correlation of scores", () => {
  const v = (...x: number[]) => ({ dense: Float32Array.from(x), tokens: 3 });
  const same = compareOutputs([v(1, 0), v(0, 1)], [v(1, 0), v(0, 1)]);
  assert.deepEqual(same, {
    metric: "mean_cosine",
    value: 1,
    threshold: MIN_MEAN_COSINE,
    inputs: 2,
  });
  const off = compareOutputs([v(1, 0), v(1, 1)], [v(1, 0), v(0, 1)]);
  assert.ok(Math.abs(off.value - (1 + Math.SQRT1_2) / 2) < 1e-6);
  assert.ok(!probeAccepts(off));
  // Sparse vectors are compared as maps; multi-vectors token by token.
  const sp = (i: number[], x: number[]) => ({
    sparse: { indices: Int32Array.from(i), values: Float32Array.from(x), dims: 9 },
    tokens: 1,
  });
  assert.equal(compareOutputs([sp([2, 5], [1, 1])], [sp([5, 2], [1, 1])]).value, 1);
  assert.equal(compareOutputs([sp([2], [1])], [sp([5], [1])]).value, 0);
  const mv = (x: number[]) => ({
    multivector: { values: Float32Array.from(x), numTokens: 2, tokenDims: 2 },
    tokens: 2,
  });
  assert.ok(Math.abs(compareOutputs([mv([1, 0, 0, 1])], [mv([1, 0, 1, 0])]).value - 0.5) < 1e-9);
  // Scores: their correlation, blind to a shift or a scale common to all of them.
  const s = (score: number): ItemOutput => ({ score, tokens: 1 });
  const ss = (...x: number[]) => x.map(s);
  const shifted = compareOutputs(ss(3, -1, 2, 0), ss(1, -3, 0, -2));
  assert.equal(shifted.metric, "score_correlation");
  assert.ok(Math.abs(shifted.value - 1) < 1e-12);
  assert.ok(Math.abs(compareOutputs(ss(0.5, 0.1, 0.3), ss(5, 1, 3)).value - 1) < 1e-12);
  assert.equal(MIN_SCORE_CORRELATION, 0.99);
  // One score off by a tenth of the spread keeps the bar; two swapped ones do not.
  assert.ok(probeAccepts(compareOutputs(ss(1.5, -3, 0, 2, -1), ss(1, -3, 0, 2, -1))));
  assert.ok(!probeAccepts(compareOutputs(ss(2, -3, 0, 1, -1), ss(1, -3, 0, 2, -1))));
  // All float scores equal: agreement only when the quantised ones are equal too.
  assert.equal(compareOutputs(ss(1, 1), ss(2, 2)).value, 1);
  assert.equal(compareOutputs(ss(1, 1.1), ss(2, 2)).value, 0);
  // The quantised graph failing where the float one answers (a NaN) is a refusal.
  const nan = { tokens: 1, error: { code: "INFERENCE_ERROR" as const, message: "NaN" } };
  assert.ok(!probeAccepts(compareOutputs([nan], [v(1, 0)])));
  assert.ok(!probeAccepts(compareOutputs([nan, s(0)], [s(1), s(0)])));
  // The float graph failing means there is nothing to compare with.
  assert.throws(() => compareOutputs([v(1, 0)], [nan]), /float graph, probe item 0: NaN/);
});

/** A fixture's adapter from its cache files, with `model` replaced by `graph` when given. */
async function fixtureAdapter(name: string, graph?: string): Promise<ModelAdapter> {
  const fx = await ensureFixtures();
  const config = parseModelConfig(
    JSON.parse(await Deno.readTextFile(join(fx, "models", `${name}.json`))),
    name,
  );
  const dir = join(fx, "cache", "fixture", name);
  const files = Object.fromEntries(
    Object.entries({ ...config.files, ...(graph ? { model: graph } : {}) }).map((
      [role, p],
    ) => [role, p.startsWith("/") ? p : join(dir, p)]),
  );
  return await FAMILY_ADAPTERS[config.family]({
    config,
    files,
    executionProviders: ["cpu"],
    intraOpThreads: 1,
    runTokenBudget: 1024,
  });
}

async function fixtureConfig(name: string): Promise<ModelConfig> {
  const fx = await ensureFixtures();
  return parseModelConfig(
    JSON.parse(await Deno.readTextFile(join(fx, "models", `${name}.json`))),
    name,
  );
}

for (const name of ["dense", "reranker"]) {
  Deno.test(`probe: fixture/${name}'s int8 twin agrees with its float graph and is kept`, async () => {
    const config = await fixtureConfig(name);
    const quantized = await fixtureAdapter(name, INT8_MODEL_PATH);
    const { adapter, verdict } = await probeQuantized(
      config.family,
      config,
      quantized,
      () => fixtureAdapter(name),
      1024,
    );
    try {
      assert.ok(verdict.probe, verdict.error);
      const p = verdict.probe!;
      assert.equal(p.metric, name === "dense" ? "mean_cosine" : "score_correlation");
      assert.ok(verdict.accepted, `${JSON.stringify(p)} on ${cpuFeatures()}`);
      assert.equal(adapter, quantized);
      // Not the float graph in disguise: int8 rounding shows.
      assert.ok(p.value < 1, `${JSON.stringify(p)} on ${cpuFeatures()}`);
    } finally {
      await adapter.dispose();
    }
  });
}

Deno.test("probe: a quantised graph of other weights is refused and the float adapter kept", async () => {
  const config = await fixtureConfig("dense");
  // The dense fixture's graph with its word embeddings reversed, quantised: other answers.
  const w = dense.weights();
  w.embeddings.word.data.reverse();
  const bad = dense.files(w).find((f) => f.path === INT8_MODEL_PATH)!;
  const dir = await Deno.makeTempDir({ prefix: "svc-int8-bad-" });
  try {
    const path = join(dir, "model_bad_int8.onnx");
    await Deno.writeFile(path, bad.bytes);
    const quantized = await fixtureAdapter("dense", path);
    let float: ModelAdapter | undefined;
    const { adapter, verdict } = await probeQuantized(
      config.family,
      config,
      quantized,
      async () => float = await fixtureAdapter("dense"),
      1024,
    );
    try {
      assert.equal(verdict.accepted, false);
      assert.ok(verdict.probe!.value < MIN_MEAN_COSINE, JSON.stringify(verdict.probe));
      assert.equal(adapter, float);
      // The refused adapter was released: running it fails.
      await assert.rejects(() =>
        quantized.run([quantized.prepare({ text: "a" }, 0, { op: "encode" })], { op: "encode" })
      );
    } finally {
      await adapter.dispose();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("probe: a float graph that cannot load leaves the int8 graph serving, not checked", async () => {
  const config = await fixtureConfig("dense");
  const quantized = await fixtureAdapter("dense", INT8_MODEL_PATH);
  const { adapter, verdict } = await probeQuantized(
    config.family,
    config,
    quantized,
    () => fixtureAdapter("dense", "/nonexistent/model.onnx"),
    1024,
  );
  try {
    assert.equal(adapter, quantized);
    assert.equal(verdict.accepted, true);
    assert.equal(verdict.probe, undefined);
    assert.ok(verdict.error && verdict.error.length > 0);
  } finally {
    await adapter.dispose();
  }
});
