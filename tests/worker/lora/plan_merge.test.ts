import assert from "node:assert/strict";
import ort from "onnxruntime-node";
import { ensureFixtures } from "@svc/fixture-models";
import { dense } from "@svc/fixture-models/models";
import type { EncoderWeights } from "@svc/fixture-models/models";
import {
  type AdapterSpec,
  DENSE_QV_SPEC,
  denseAdapter,
  type LoraFixture,
  mergedWeights,
} from "@svc/fixture-models/lora";
import { maxDiff, referenceDense } from "../../fixtures/lora/reference.ts";
import { fixtureTokenizer, textFeeds } from "../../fixtures/testing.ts";
import { indexOnnxModel } from "@svc/onnx";
import { linearTargets } from "#worker/lora/graph_targets.ts";
import { parseLoraConfig } from "#worker/lora/lora_config.ts";
import { LoraMismatchError, planLora } from "#worker/lora/plan.ts";
import { mergeLoraIntoModel } from "#worker/lora/merge.ts";
import { parseSafetensorsHeader, tensorFloat32 } from "#worker/lora/safetensors.ts";
import { disableOrtTelemetry } from "#worker/inference/ort_telemetry.ts";

// Off before any session exists (see ort_telemetry.ts).
disableOrtTelemetry();

const W = dense.weights() as EncoderWeights;
const MODEL = { id: "fixture/dense", repo: "fixture/dense" };
const TEXTS = ["hello world", "the cat sat on the warm mat", "red apples and green pears"];

async function denseModel(): Promise<Uint8Array> {
  const fx = await ensureFixtures();
  return await Deno.readFile(`${fx}/cache/fixture/dense/onnx/model.onnx`);
}

function filesOf(lora: LoraFixture) {
  const file = (p: string) => lora.files.find((f) => f.path === p)!.bytes;
  const config = JSON.parse(new TextDecoder().decode(file("adapter_config.json")));
  const weights = file("adapter_model.safetensors");
  return { config, weights, header: parseSafetensorsHeader(weights, weights.length) };
}

/** Plan `spec` against fixture/dense (config JSON may be edited first). */
async function plan(spec: AdapterSpec, edit: (config: Record<string, unknown>) => void = () => {}) {
  const lora = denseAdapter(W, spec);
  const f = filesOf(lora);
  edit(f.config);
  const targets = linearTargets(indexOnnxModel(await denseModel()));
  return {
    lora,
    ...f,
    plan: planLora({
      config: parseLoraConfig(f.config),
      tensors: f.header.tensors,
      targets,
      model: MODEL,
    }),
  };
}

async function embed(bytes: Uint8Array, texts: string[]): Promise<Float32Array[]> {
  const session = await ort.InferenceSession.create(bytes);
  const tok = fixtureTokenizer();
  try {
    const out: Float32Array[] = [];
    for (const text of texts) {
      const feeds = textFeeds(tok, [text], true);
      const tensors: Record<string, ort.Tensor> = {};
      for (const [k, f] of Object.entries(feeds)) {
        tensors[k] = new ort.Tensor(
          "int64",
          BigInt64Array.from(Array.from(f.data), BigInt),
          f.dims,
        );
      }
      const r = await session.run(tensors);
      const h = r.last_hidden_state;
      const [, seq, dim] = h.dims;
      const v = new Float32Array(dim);
      const data = h.data as Float32Array;
      for (let p = 0; p < seq; p++) for (let d = 0; d < dim; d++) v[d] += data[p * dim + d] / seq;
      const n = Math.hypot(...v);
      out.push(v.map((x) => x / n));
    }
    return out;
  } finally {
    await session.release();
  }
}

const SPEC = DENSE_QV_SPEC;

Deno.test("merge: the patched fixture/dense equals a TypeScript reference run with merged weights", async () => {
  for (const dtype of ["F32", "F16", "BF16"] as const) {
    const p = await plan({ ...SPEC, dtype });
    assert.equal(p.plan.patches.length, 6, "three modules in each of two layers");
    assert.equal(p.plan.scale, 2);
    const merged = mergeLoraIntoModel(
      await denseModel(),
      p.plan,
      (name) => tensorFloat32(p.weights, p.header.tensors.get(name)!),
    );
    assert.equal(merged.patched, 6);
    const got = await embed(merged.bytes, TEXTS);
    const want = referenceDense(mergedWeights(W, p.lora), TEXTS);
    const base = referenceDense(W, TEXTS);
    got.forEach((v, i) => {
      assert.ok(maxDiff(v, want[i]) < 1e-4, `${dtype} text ${i}: ${maxDiff(v, want[i])}`);
      assert.ok(maxDiff(v, base[i]) > 1e-2, `${dtype}: the adapter changes the vector`);
    });
  }
  // The base file is read, never modified: its vectors are still the base reference.
  const base = await embed(await denseModel(), TEXTS);
  referenceDense(W, TEXTS).forEach((v, i) => assert.ok(maxDiff(base[i], v) < 1e-4));
});

Deno.test("plan: adapters that do not fit are refused naming the module and the shapes", async () => {
  const cases: [string, AdapterSpec, RegExp, ((c: Record<string, unknown>) => void)?][] = [
    [
      "wrong hidden size",
      { ...SPEC, hiddenOverride: 48 },
      /module encoder\.layer\.0\.attention\.self\.query: lora_A is \[4,48\] \(48 inputs\) but the base layer takes 32 inputs \(graph weight onnx::MatMul_\d+ \[in, out = 32, 32\] of node \/encoder\/layer\.0\/attention\/self\/query\/MatMul\)/,
    ],
    [
      "unknown target module",
      { ...SPEC, extraModule: "encoder.layer.0.attention.self.rotary", targetModules: undefined },
      /unknown target module encoder\.layer\.0\.attention\.self\.rotary: no MatMul\/Gemm weight/,
    ],
    [
      "rank differs from r",
      SPEC,
      /rank shapes lora_A \[4,32\] and lora_B \[32,4\] do not match r = 8/,
      (c) => c.r = 8,
    ],
    [
      "module outside target_modules",
      SPEC,
      /module encoder\.layer\.0\.intermediate\.dense is not in target_modules \[query, value\]/,
      (c) => c.target_modules = ["query", "value"],
    ],
    [
      "target module without weights",
      SPEC,
      /target module 'key' has no weights/,
      (c) => c.target_modules = ["query", "value", "intermediate.dense", "key"],
    ],
    [
      "another base model",
      SPEC,
      /trained on base model 'BAAI\/bge-small-en-v1\.5', not on 'fixture\/dense'/,
      (c) => c.base_model_name_or_path = "BAAI/bge-small-en-v1.5",
    ],
  ];
  for (const [what, spec, message, edit] of cases) {
    await assert.rejects(
      () => plan(spec, edit),
      (e) => e instanceof LoraMismatchError && message.test(e.message),
      what,
    );
  }
});

Deno.test("plan: a same-name mirror and a local path are accepted as base model; PEFT's prefix may differ", async () => {
  for (const base of ["Mirror-Org/dense", "/home/me/checkpoints/bert"]) {
    const p = await plan(SPEC, (c) => c.base_model_name_or_path = base);
    assert.equal(p.plan.patches.length, 6, base);
  }
  // Keys saved from a wrapper (`bert.` prefix) still find the export's `encoder.` paths.
  const lora = denseAdapter(W, SPEC);
  const f = filesOf(lora);
  const renamed = new Map(
    [...f.header.tensors].map((
      [k, v],
    ) => [k.replace("base_model.model.", "base_model.model.bert."), v]),
  );
  const targets = linearTargets(indexOnnxModel(await denseModel()));
  const p = planLora({
    config: parseLoraConfig(f.config),
    tensors: renamed,
    targets,
    model: MODEL,
  });
  assert.deepEqual(
    p.patches.map((x) => x.module).slice(0, 2),
    ["bert.encoder.layer.0.attention.self.query", "bert.encoder.layer.0.attention.self.value"],
  );
});

Deno.test("adapter_config.json: what cannot be applied is refused by name", () => {
  const base = { peft_type: "LORA", r: 4, lora_alpha: 8, target_modules: ["query"] };
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ ...base, use_dora: true }, /DoRA/],
    [{ ...base, bias: "lora_only" }, /bias 'lora_only'/],
    [{ ...base, modules_to_save: ["classifier"] }, /modules_to_save \(classifier\)/],
    [{ ...base, rank_pattern: { query: 8 } }, /rank_pattern/],
    [{ ...base, peft_type: "IA3" }, /peft_type 'IA3' is not LORA/],
    [{ ...base, r: 0 }, /r:/],
    [{ ...base, target_modules: [] }, /target_modules is missing or empty/],
    [{ ...base, r: "4" }, /r:/],
  ];
  for (const [config, message] of cases) assert.throws(() => parseLoraConfig(config), message);
  const rs = parseLoraConfig({ ...base, r: 16, lora_alpha: 32, use_rslora: true });
  assert.equal(rs.scale, 8, "rsLoRA scales by alpha / sqrt(r)");
  assert.deepEqual(parseLoraConfig({ ...base, target_modules: ".*query" }).targetModules, {
    pattern: ".*query",
  });
});
