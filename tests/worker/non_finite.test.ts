/**
 * Issue 23.6: a model whose outputs hold NaN or an infinity answers 500 INFERENCE_ERROR naming the
 * model, never a 200 of nulls (JSON's NaN) or an empty answer (a NaN logit falls below every
 * threshold). The models are the fixtures with their embedding LayerNorm weights set to NaN,
 * served from their own cluster cache: real graphs, real ONNX Runtime runs.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ensureFixtures } from "@svc/fixture-models";
import { elementCount, indexOnnxModel, replaceFloatInitializers } from "@svc/onnx";
import { variantModelsDir } from "./variant_models.ts";
import { postJson, withWorker } from "./harness.ts";
import { allFinite, nonFiniteOutput } from "#worker/families/finite.ts";
import type { ItemOutput } from "#worker/families/types.ts";

const POISONED = ["dense", "reranker", "nli", "gliner"];
const WEIGHT = "embeddings.LayerNorm.weight";

/**
 * A cluster cache holding `fixture/<name>-nan` for each name (the fixture with WEIGHT all NaN) and
 * `fixture/dense` as it is.
 */
async function poisonedCache(): Promise<string> {
  const fx = await ensureFixtures();
  const root = await Deno.makeTempDir({ prefix: "svc-nan-cache-" });
  for (const name of POISONED) {
    const from = join(fx, "cache", "fixture", name);
    const to = join(root, "fixture", `${name}-nan`);
    await Deno.mkdir(join(to, "onnx"), { recursive: true });
    for await (const e of Deno.readDir(from)) {
      if (e.isFile) await Deno.copyFile(join(from, e.name), join(to, e.name));
    }
    const index = indexOnnxModel(await Deno.readFile(join(from, "onnx", "model.onnx")));
    const dims = index.initializers.get(WEIGHT)!.dims;
    const nan = new Float32Array(elementCount(dims)).fill(NaN);
    await Deno.writeFile(
      join(to, "onnx", "model.onnx"),
      replaceFloatInitializers(index, new Map([[WEIGHT, nan]])),
    );
  }
  // A sound model beside them.
  await Deno.symlink(join(fx, "cache", "fixture", "dense"), join(root, "fixture", "dense"));
  return root;
}

Deno.test("non-finite outputs: every family's NaN becomes a 500 naming the model", async () => {
  const cache = await poisonedCache();
  const models = await variantModelsDir(POISONED.map((name) => ({
    id: `fixture/${name}-nan`,
    base: `fixture/${name}`,
    change: (e) => (e.hub as { repo: string }).repo = `fixture/${name}-nan`,
  })));
  try {
    await withWorker(async (w) => {
      const cases: [string, unknown, string][] = [
        ["/v1/encode/fixture/dense-nan", { items: [{ text: "hello" }] }, "dense vector"],
        [
          "/v1/score/fixture/reranker-nan",
          { query: { text: "q" }, items: [{ text: "a" }, { text: "b" }] },
          "score",
        ],
        [
          "/v1/extract/fixture/nli-nan",
          { items: [{ text: "The team won." }], params: { labels: ["sports", "food"] } },
          "logits",
        ],
        [
          "/v1/extract/fixture/gliner-nan",
          { items: [{ text: "Alice lives in Paris." }], params: { labels: ["person"] } },
          "logits",
        ],
      ];
      for (const [path, body, output] of cases) {
        const model = path.split("/").slice(3).join("/");
        const r = await postJson(`${w.url}${path}`, body);
        // Before: 200 with `null` vectors and scores, or no entities and no classes at all.
        assert.equal(r.status, 500, `${path}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.detail.code, "INFERENCE_ERROR");
        assert.equal(
          r.body.detail.message,
          `model '${model}' produced non-finite values (NaN or infinity) in its ${output}`,
        );
      }
      // The worker goes on: a sound model answers.
      const ok = await postJson(`${w.url}/v1/encode/fixture/dense`, { items: [{ text: "hi" }] });
      assert.equal(ok.status, 200);
    }, { SVC_MODELS_DIR: models, SVC_CLUSTER_CACHE: cache });
  } finally {
    await Deno.remove(cache, { recursive: true });
    await Deno.remove(models, { recursive: true });
  }
});

Deno.test("nonFiniteOutput: names the first output holding NaN or an infinity, of every kind", () => {
  const ok = { tokens: 1 };
  assert.equal(nonFiniteOutput({ ...ok, dense: Float32Array.of(1, -0, 3e38) }), undefined);
  assert.equal(allFinite(new Float32Array(0)), true);
  const cases: [ItemOutput, string][] = [
    [{ ...ok, dense: Float32Array.of(1, NaN) }, "dense vector"],
    [
      { ...ok, sparse: { indices: Int32Array.of(3), values: Float32Array.of(-Infinity), dims: 9 } },
      "sparse vector",
    ],
    [
      { ...ok, multivector: { values: Float32Array.of(0, Infinity), numTokens: 1, tokenDims: 2 } },
      "multi-vector",
    ],
    [{ ...ok, score: NaN }, "score"],
    [
      { ...ok, entities: [{ text: "a", label: "x", score: NaN, start: 0, end: 1 }] },
      "entity scores",
    ],
    [
      { ...ok, classifications: [{ label: "x", score: 0.5 }, { label: "y", score: NaN }] },
      "classification scores",
    ],
    [
      { ...ok, relations: [{ head: "a", tail: "b", relation: "r", score: Infinity }] },
      "relation scores",
    ],
    [{ ...ok, objects: [{ label: "cat", score: 0.9, bbox: [0, 0, NaN, 1] }] }, "object boxes"],
    [{ ...ok, fieldSpans: [[], [{ text: "a", score: NaN, start: 0 }]] }, "spans"],
  ];
  for (const [out, name] of cases) assert.equal(nonFiniteOutput(out), name);
});
