import assert from "node:assert/strict";
import ort from "onnxruntime-node";
import { DataType, encodeModel, GraphBuilder } from "@svc/onnx/writer";
import { ensureFixtures } from "@svc/fixture-models";
import {
  indexOnnxModel,
  ProtoFormatError,
  readFloatInitializer,
  replaceFloatInitializers,
} from "@svc/onnx";
import { linearTargets, nodeModulePath } from "#worker/lora/graph_targets.ts";
import { addLoraUpdate } from "#worker/lora/merge.ts";
import { float32ToFloat16 } from "@svc/shared/codec/float16";
import { disableOrtTelemetry } from "#worker/inference/ort_telemetry.ts";

// Off before any session exists (see ort_telemetry.ts).
disableOrtTelemetry();

const X = Float32Array.from([0.5, -1, 2, 0.25, 1, 0, -0.5, 3]); // [2, 4]
const W_OUT_IN = Float32Array.from([1, 2, 3, 4, -1, 0, 1, 0, 0.5, 0.5, -0.5, 2]); // [3, 4]
const W_IN_OUT = Float32Array.from([1, -1, 0.5, 2, 0, 0.5, 3, 1, -0.5, 4, 0, 2]); // [4, 3]

/** x [2, 4] through three linear layers stored three ways; outputs y1, y2, y3 [2, 3]. */
function threeLayouts(): Uint8Array {
  const g = new GraphBuilder("layouts");
  const x = g.input("x", "float32", [2, 4]);
  // PyTorch's exporter for a 2-D input: Gemm(transB = 1) on the named [out, in] parameter.
  const gemmW = g.initializer("pooler.dense.weight", W_OUT_IN, [3, 4]);
  g.withScope(["pooler", "dense"], () => g.op("Gemm", [x, gemmW], { transB: 1 }, "y1"));
  // A folded [in, out] constant with an anonymous name, found through the node's scope.
  const anon = g.initializer("onnx::MatMul_7", W_IN_OUT, [4, 3]);
  g.withScope(
    ["encoder", "layer.0", "attention", "self", "query"],
    () => g.op("MatMul", [x, anon], {}, "y2"),
  );
  // A weight kept in PyTorch's layout and transposed in the graph; the node has no scope.
  const named = g.initializer("classifier.weight", W_OUT_IN, [3, 4]);
  g.op("MatMul", [x, g.op("Transpose", [named], { perm: [1, 0] })], {}, "y3");
  // Anonymous weight, anonymous node: no module can be told.
  const lost = g.initializer("onnx::MatMul_9", W_IN_OUT, [4, 3]);
  g.op("MatMul", [x, lost], {}, "y4");
  for (const y of ["y1", "y2", "y3", "y4"]) g.output(y, "float32", [2, 3]);
  return g.toBytes();
}

async function run(bytes: Uint8Array, feeds: Record<string, ort.Tensor>) {
  const s = await ort.InferenceSession.create(bytes);
  try {
    return await s.run(feeds);
  } finally {
    await s.release();
  }
}

/** x · W (W [in, out]) on the host, float64. */
function matmul(x: Float32Array, w: Float32Array, n: number, m: number): number[] {
  const rows = x.length / n;
  const out: number[] = [];
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < m; o++) {
      let s = 0;
      for (let i = 0; i < n; i++) s += x[r * n + i] * w[i * m + o];
      out.push(s);
    }
  }
  return out;
}

function transpose(w: Float32Array, rows: number, cols: number): Float32Array {
  const t = new Float32Array(w.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = w[r * cols + c];
  return t;
}

function close(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string) {
  assert.equal(actual.length, expected.length, what);
  for (let i = 0; i < actual.length; i++) {
    assert.ok(
      Math.abs(actual[i] - expected[i]) < 1e-4,
      `${what}[${i}]: ${actual[i]} vs ${expected[i]}`,
    );
  }
}

Deno.test("graph targets: module paths from node scopes or parameter names, layout from the operator", () => {
  const targets = linearTargets(indexOnnxModel(threeLayouts()));
  const summary = targets.map((
    t,
  ) => [t.module, t.initializer, t.layout, t.inFeatures, t.outFeatures]);
  assert.deepEqual(summary, [
    ["pooler.dense", "pooler.dense.weight", "out_in", 4, 3],
    ["encoder.layer.0.attention.self.query", "onnx::MatMul_7", "in_out", 4, 3],
    ["classifier", "classifier.weight", "out_in", 4, 3],
  ]);
  assert.equal(
    nodeModulePath("/encoder/layer.0/output/dense/MatMul_1"),
    "encoder.layer.0.output.dense",
  );
  assert.equal(nodeModulePath("MatMul_12"), undefined);
});

Deno.test("patching: LoRA updates in every layout change the graph's outputs exactly as merged weights do", async () => {
  const bytes = threeLayouts();
  const original = bytes.slice();
  const index = indexOnnxModel(bytes);
  const a = Float32Array.from([0.2, -0.1, 0.3, 0.05, -0.4, 0.1, 0, 0.2]); // [r=2, in=4]
  const b = Float32Array.from([1, -1, 0.5, 2, -0.5, 0]); // [out=3, r=2]
  const dims = { inFeatures: 4, outFeatures: 3, rank: 2 };
  const values = new Map<string, Float32Array>();
  for (const t of linearTargets(index)) {
    const w = readFloatInitializer(index, index.initializers.get(t.initializer)!);
    addLoraUpdate(w, t.layout, a, b, dims, 0.5);
    values.set(t.initializer, w);
  }
  const patched = replaceFloatInitializers(index, values);
  assert.deepEqual(bytes, original, "the input bytes are not modified");

  // Expected: W' (PyTorch [out, in]) = W + 0.5·B·A, then y = x·W'ᵀ.
  const ba = new Float32Array(12);
  for (let o = 0; o < 3; o++) {
    for (let i = 0; i < 4; i++) {
      ba[o * 4 + i] = 0.5 * (b[o * 2] * a[i] + b[o * 2 + 1] * a[4 + i]);
    }
  }
  const torchOutIn = W_OUT_IN.map((v, k) => v + ba[k]);
  const inOutBase = transpose(W_IN_OUT, 4, 3); // [out, in] of the anonymous layer
  const torchAnon = inOutBase.map((v, k) => v + ba[k]);
  const x = new ort.Tensor("float32", X, [2, 4]);
  const out = await run(patched, { x });
  close(out.y1.data as Float32Array, matmul(X, transpose(torchOutIn, 3, 4), 4, 3), "gemm");
  close(out.y2.data as Float32Array, matmul(X, transpose(torchAnon, 3, 4), 4, 3), "matmul");
  close(out.y3.data as Float32Array, matmul(X, transpose(torchOutIn, 3, 4), 4, 3), "transpose");
  const before = await run(original, { x });
  close(out.y4.data as Float32Array, before.y4.data as Float32Array, "untouched layer");
  close(before.y2.data as Float32Array, matmul(X, W_IN_OUT, 4, 3), "base");
});

Deno.test("patching: float16 weights are read, updated and written back as float16", () => {
  const w = Float32Array.from([1, 0.5, -2, 0.25, 0, 1]); // [in=3, out=2]
  const model = encodeModel({
    irVersion: 8,
    opsetVersion: 17,
    producerName: "test",
    producerVersion: "1",
    graph: {
      name: "half",
      nodes: [{
        name: "/proj/MatMul",
        opType: "MatMul",
        inputs: ["x", "onnx::MatMul_1"],
        outputs: ["y"],
        attributes: [],
      }],
      initializers: [{
        name: "onnx::MatMul_1",
        dataType: DataType.FLOAT16,
        dims: [3, 2],
        rawData: new Uint8Array(float32ToFloat16(w).buffer),
      }],
      inputs: [{ name: "x", elemType: DataType.FLOAT16, dims: [1, 3] }],
      outputs: [{ name: "y", elemType: DataType.FLOAT16, dims: [1, 2] }],
    },
  });
  const index = indexOnnxModel(model);
  const [target] = linearTargets(index);
  assert.deepEqual([target.module, target.dataType, target.layout], ["proj", "float16", "in_out"]);
  const values = readFloatInitializer(index, index.initializers.get("onnx::MatMul_1")!);
  assert.deepEqual(values, w);
  values[0] += 0.25;
  const patched = indexOnnxModel(
    replaceFloatInitializers(index, new Map([["onnx::MatMul_1", values]])),
  );
  const again = readFloatInitializer(patched, patched.initializers.get("onnx::MatMul_1")!);
  assert.deepEqual([...again], [1.25, 0.5, -2, 0.25, 0, 1]);
  assert.equal(patched.initializers.get("onnx::MatMul_1")!.dataType, DataType.FLOAT16);
});

Deno.test("fixture/dense looks like an export: scoped node names, anonymous MatMul weights", async () => {
  const fx = await ensureFixtures();
  const index = indexOnnxModel(await Deno.readFile(`${fx}/cache/fixture/dense/onnx/model.onnx`));
  const targets = linearTargets(index);
  const layer0 = targets.filter((t) => t.module.startsWith("encoder.layer.0."));
  assert.deepEqual(layer0.map((t) => [t.module, t.node, t.inFeatures, t.outFeatures]), [
    [
      "encoder.layer.0.attention.self.query",
      "/encoder/layer.0/attention/self/query/MatMul",
      32,
      32,
    ],
    ["encoder.layer.0.attention.self.key", "/encoder/layer.0/attention/self/key/MatMul", 32, 32],
    [
      "encoder.layer.0.attention.self.value",
      "/encoder/layer.0/attention/self/value/MatMul",
      32,
      32,
    ],
    [
      "encoder.layer.0.attention.output.dense",
      "/encoder/layer.0/attention/output/dense/MatMul",
      32,
      32,
    ],
    ["encoder.layer.0.intermediate.dense", "/encoder/layer.0/intermediate/dense/MatMul", 32, 64],
    ["encoder.layer.0.output.dense", "/encoder/layer.0/output/dense/MatMul", 64, 32],
  ]);
  assert.equal(targets.length, 12, "six linear layers in each of two layers");
  assert.ok(
    targets.every((t) => /^onnx::MatMul_\d+$/.test(t.initializer) && t.layout === "in_out"),
  );
  assert.ok(
    index.initializers.has("encoder.layer.0.attention.self.query.bias"),
    "biases keep names",
  );
});

Deno.test("reading: truncated or corrupt models end in a format error, never an out-of-range read", async () => {
  const fx = await ensureFixtures();
  const bytes = await Deno.readFile(`${fx}/cache/fixture/dense/onnx/model.onnx`);
  for (const cut of [1, 10, 1000, bytes.length - 3]) {
    assert.throws(() => indexOnnxModel(bytes.subarray(0, cut)), ProtoFormatError, `cut at ${cut}`);
  }
  assert.throws(() => indexOnnxModel(new Uint8Array([0x08, 0x01])), /no graph/);
  assert.throws(() => indexOnnxModel(new Uint8Array([0xff, 0xff, 0xff])), ProtoFormatError);
});

Deno.test("reading: negative int attributes (10-byte varints) come back exact", () => {
  const g = new GraphBuilder("neg");
  const x = g.input("x", "float32", [2, 3]);
  g.op("Softmax", [x], { axis: -1 }, "y");
  g.output("y", "float32", [2, 3]);
  const [node] = indexOnnxModel(g.toBytes()).nodes;
  assert.equal(node.ints.axis, -1);
});
