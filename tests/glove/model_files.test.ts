/**
 * The files models:glove writes, offline, on a tiny hand-made word table: tokenizer ids, the
 * lookup-and-mean graph (unknown words and padding left out), the catalog entry, and a real
 * worker serving the result through the static family.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import ort from "onnxruntime-node";
import { gloveEntryPath, gloveModelDir, writeGloveModel } from "#infra/models/glove_build.ts";
import { staticEmbeddingGraph } from "#infra/models/glove_graph.ts";
import {
  FIRST_WORD_ID,
  isReachableWord,
  tokenizerConfig,
  tokenizerJson,
} from "#infra/models/glove_tokenizer.ts";
import { parseModelConfig } from "@svc/shared/catalog/schema";
import { TextTokenizer } from "#worker/families/text/tokenizer.ts";
import { postJson, startTestWorker } from "../worker/harness.ts";
import { disableOrtTelemetry } from "#worker/inference/ort_telemetry.ts";

// Off before any session exists (see ort_telemetry.ts).
disableOrtTelemetry();

const WORDS = ["the", "how", "do", "bake", "bread", "?"];
const DIMS = 3;
/** Row i is word i's vector: easy numbers so that means are exact. */
const VECTORS = Float32Array.from(WORDS.flatMap((_, i) => [i + 1, -(i + 1) / 2, i % 2]));
const id = (w: string): number => FIRST_WORD_ID + WORDS.indexOf(w);

function vectorOf(w: string): number[] {
  const i = WORDS.indexOf(w);
  return [...VECTORS.subarray(i * DIMS, (i + 1) * DIMS)];
}

function l2(v: number[]): number[] {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

function tokenizer(): Tokenizer {
  return new Tokenizer(tokenizerJson(WORDS) as object, tokenizerConfig(512) as object);
}

Deno.test("isReachableWord keeps what the pre-tokenizer can produce after lowercasing", () => {
  for (const w of ["bread", "?", "café", "h1n1", "€", "1990s"]) assert.ok(isReachableWord(w), w);
  for (const w of ["well-known", "u.s.", "Bread", "--", "", "a b"]) {
    assert.ok(!isReachableWord(w), w);
  }
});

Deno.test("tokenizer.json: lowercased word ids, [UNK] for unknown words, no special tokens", () => {
  const tok = tokenizer();
  const want = [id("how"), id("do"), 0, id("bake"), id("bread"), id("?")];
  assert.deepEqual(tok.encode("How do I bake bread?").ids, want);
  assert.deepEqual(tok.encode("How do I bake bread?", { add_special_tokens: false }).ids, want);
  // The worker learns the special-token template from the tokenizer: it must be empty.
  const worker = new TextTokenizer(tokenizerJson(WORDS), tokenizerConfig(512), 512);
  assert.deepEqual(worker.template, { prefix: [], suffix: [] });
  assert.equal(worker.vocabSize, FIRST_WORD_ID + WORDS.length);
  assert.deepEqual(worker.encode("bread bread bread", 2).ids, [id("bread"), id("bread")]);
});

Deno.test("graph: mean over known, attended words; [UNK] and padding do not count", async () => {
  const table = new Float32Array((FIRST_WORD_ID + WORDS.length) * DIMS);
  table.set(VECTORS, FIRST_WORD_ID * DIMS);
  const bytes = staticEmbeddingGraph({
    name: "test",
    table,
    rows: FIRST_WORD_ID + WORDS.length,
    dims: DIMS,
    firstWordId: FIRST_WORD_ID,
    docString: "test",
    metadata: {},
  });
  const session = await ort.InferenceSession.create(bytes);
  try {
    // Rows: "bread [UNK]", "the bread" + padding, all unknown, only padding.
    const ids = [id("bread"), 0, 0, id("the"), id("bread"), 1, 0, 0, 0, 1, 1, 1];
    const mask = [1, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0];
    const t = (v: number[]): ort.Tensor =>
      new ort.Tensor("int64", BigInt64Array.from(v, BigInt), [4, 3]);
    const out = await session.run({ input_ids: t(ids), attention_mask: t(mask) });
    const y = out.sentence_embedding;
    assert.deepEqual(y.dims, [4, DIMS]);
    const rows = [0, 1, 2, 3].map((b) => [...(y.data as Float32Array).slice(b * 3, b * 3 + 3)]);
    assert.deepEqual(rows[0], vectorOf("bread"), "[UNK] does not halve the mean");
    assert.deepEqual(rows[1], vectorOf("the").map((x, j) => (x + vectorOf("bread")[j]) / 2));
    assert.deepEqual(rows[2], [0, 0, 0]);
    assert.deepEqual(rows[3], [0, 0, 0]);
  } finally {
    await session.release();
  }
});

Deno.test("written model: cache layout, valid catalog entry, served by a real worker", async () => {
  const out = await Deno.makeTempDir({ prefix: "glove-tiny-" });
  try {
    const sizes = await writeGloveModel(out, {
      dims: DIMS,
      words: WORDS,
      vectors: VECTORS,
      packageWords: WORDS.length,
      stoppedEarly: false,
    });
    const dir = gloveModelDir(out);
    for (const f of ["onnx/model.onnx", "tokenizer.json", "tokenizer_config.json", "config.json"]) {
      assert.equal((await Deno.stat(join(dir, f))).size, sizes[join("cache/glove/6B-100d", f)]);
    }
    const entry = parseModelConfig(JSON.parse(await Deno.readTextFile(gloveEntryPath(out))), "e");
    assert.equal(entry.id, "glove/6B-100d");
    assert.equal(entry.family, "static");
    assert.deepEqual(entry.dims, { dense: DIMS });
    assert.equal(entry.pooling, "none");
    assert.equal(entry.profiles.default.output_similarity.dense, "cosine");

    const w = await startTestWorker({
      SVC_MODELS_DIR: join(out, "models"),
      SVC_CLUSTER_CACHE: join(out, "cache"),
      SVC_MODEL_FILTER: "glove/*",
    });
    try {
      const r = await postJson(`${w.url}/v1/encode/glove%2F6B-100d`, {
        items: [{ text: "How do I bake bread?" }],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const known = ["how", "do", "bake", "bread", "?"].map(vectorOf);
      const want = l2([0, 1, 2].map((j) => known.reduce((s, v) => s + v[j], 0)));
      const got: number[] = r.body.items[0].dense.values;
      got.forEach((x, j) =>
        assert.ok(Math.abs(x - want[j]) < 1e-6, `dim ${j}: ${x} vs ${want[j]}`)
      );
      // No known word: a 400 naming the model and the fact, never an all-zero vector.
      const none = await postJson(`${w.url}/v1/encode/glove%2F6B-100d`, {
        items: [{ text: "How do I bake bread?" }, { text: "nothing known here" }],
      });
      assert.equal(none.status, 400, JSON.stringify(none.body));
      assert.equal(none.body.detail.code, "INVALID_INPUT");
      assert.match(none.body.detail.message, /glove\/6B-100d' knows none of the words/);
    } finally {
      await w.close();
    }
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
