/**
 * Score with encode models through a real worker: the scores must equal the similarity of what
 * /v1/encode returns for the query (as a query) and the items (as documents): dense by cosine,
 * sparse by dot product, multi-vector by MaxSim. Sorting, ranks and ids follow the score rules.
 */
import assert from "node:assert/strict";
import { cosine } from "./expected.ts";
import { type Json, postJson, type TestWorker, withWorker } from "./harness.ts";

const QUERY = "where do cats sleep";
const DOCS = [
  "cats sleep on the warm mat",
  "the bank reported strong earnings",
  "a cat and a dog sleep in the sun",
];

/** /v1/encode of `texts` with one output type and input type (JSON answer). */
async function encode(
  w: TestWorker,
  model: string,
  texts: string[],
  output: string,
  options: Record<string, unknown>,
  instruction?: string,
): Promise<Json[]> {
  const r = await postJson(`${w.url}/v1/encode/${model}`, {
    items: texts.map((text) => ({ text })),
    params: { output_types: [output], options, instruction },
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.items.map((it: Json) => it[output]);
}

function sparseDot(a: Json, b: Json): number {
  const w = new Map<number, number>(a.indices.map((k: number, i: number) => [k, a.values[i]]));
  let s = 0;
  b.indices.forEach((k: number, i: number) => s += (w.get(k) ?? 0) * b.values[i]);
  return s;
}

function maxSim(q: Json, d: Json): number {
  let sum = 0;
  for (const qr of q.values as number[][]) {
    let best = -Infinity;
    for (const dr of d.values as number[][]) {
      best = Math.max(best, qr.reduce((s, x, k) => s + x * dr[k], 0));
    }
    sum += best;
  }
  return sum;
}

/** POST a score request and return the body after checking the ranking rules. */
async function score(
  w: TestWorker,
  model: string,
  extra: Record<string, unknown> = {},
  ids: (string | undefined)[] = ["a", undefined, "c"],
): Promise<Json> {
  const r = await postJson(`${w.url}/v1/score/${model}`, {
    query: { id: "q", text: QUERY },
    items: DOCS.map((text, i) => (ids[i] === undefined ? { text } : { id: ids[i], text })),
    ...extra,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.query_id, "q");
  const s = r.body.scores as Json[];
  assert.equal(s.length, DOCS.length);
  s.forEach((e, rank) => {
    assert.equal(e.rank, rank);
    if (rank > 0) assert.ok(s[rank - 1].score >= e.score, "sorted by score, highest first");
    assert.ok(Number.isFinite(e.score));
  });
  return r.body;
}

/** The score of each document, in request order, from a response sorted by score. */
function byDoc(body: Json, ids: (string | null)[]): number[] {
  return ids.map((id) => body.scores.find((e: Json) => e.item_id === id).score);
}

function assertClose(got: number[], want: number[], what: string): void {
  got.forEach((g, i) =>
    assert.ok(Math.abs(g - want[i]) < 1e-5, `${what} ${i}: ${g} vs ${want[i]}`)
  );
}

Deno.test("score dense: cosine of the query (query prompt) and documents (document prompt)", async () => {
  await withWorker(async (w) => {
    const body = await score(w, "fixture/dense");
    const [q] = await encode(w, "fixture/dense", [QUERY], "dense", { input_type: "query" });
    const d = await encode(w, "fixture/dense", DOCS, "dense", { input_type: "document" });
    const want = d.map((v) => cosine(q.values, v.values));
    assertClose(byDoc(body, ["a", "item-1", "c"]), want, "dense");
    // The prompts matter: with none on either side the scores differ.
    const [qPlain] = await encode(w, "fixture/dense", [QUERY], "dense", {});
    assert.ok(Math.abs(cosine(qPlain.values, d[0].values) - want[0]) > 1e-4);

    // `instruction` replaces the query prompt, as in encode.
    const ins = await score(w, "fixture/dense", { instruction: "find: " });
    const [qi] = await encode(w, "fixture/dense", [QUERY], "dense", {}, "find: ");
    assertClose(
      byDoc(ins, ["a", "item-1", "c"]),
      d.map((v) => cosine(qi.values, v.values)),
      "instruction",
    );

    // Matryoshka: the `small` profile (16 dims) compares truncated, re-normalised vectors.
    const small = await score(w, "fixture/dense:small");
    const [qs] = await encode(w, "fixture/dense:small", [QUERY], "dense", { input_type: "query" });
    const ds = await encode(w, "fixture/dense:small", DOCS, "dense", { input_type: "document" });
    assert.equal(qs.values.length, 16);
    assertClose(
      byDoc(small, ["a", "item-1", "c"]),
      ds.map((v) => cosine(qs.values, v.values)),
      "small",
    );
  });
});

Deno.test("score sparse and multi-vector: dot product and MaxSim with ColBERT markers per side", async () => {
  await withWorker(async (w) => {
    const sp = await score(w, "fixture/sparse");
    const [sq] = await encode(w, "fixture/sparse", [QUERY], "sparse", { input_type: "query" });
    const sd = await encode(w, "fixture/sparse", DOCS, "sparse", { input_type: "document" });
    assertClose(byDoc(sp, ["a", "item-1", "c"]), sd.map((v) => sparseDot(sq, v)), "sparse");

    const cb = await score(w, "fixture/colbert");
    const [cq] = await encode(w, "fixture/colbert", [QUERY], "multivector", {
      input_type: "query",
    });
    const cd = await encode(w, "fixture/colbert", DOCS, "multivector", { input_type: "document" });
    assert.equal(cq.num_tokens, 32, "the query side is padded with [MASK] to 32 tokens");
    const want = cd.map((v) => maxSim(cq, v));
    assertClose(byDoc(cb, ["a", "item-1", "c"]), want, "colbert");
    // Markers matter: the query encoded as a document scores differently.
    const [asDoc] = await encode(w, "fixture/colbert", [QUERY], "multivector", {
      input_type: "document",
    });
    assert.ok(Math.abs(maxSim(asDoc, cd[0]) - want[0]) > 1e-3);
  });
});

Deno.test("score m3: dense by default; options.output_type picks sparse or multi-vector", async () => {
  await withWorker(async (w) => {
    const ids = ["a", "b", "c"];
    const m = "fixture/m3";
    const expect = async (output: string, sim: (q: Json, d: Json) => number) => {
      const [q] = await encode(w, m, [QUERY], output, { input_type: "query" });
      const d = await encode(w, m, DOCS, output, { input_type: "document" });
      return d.map((v) => sim(q, v));
    };
    const dense = await score(w, m, {}, ids);
    assertClose(
      byDoc(dense, ids),
      await expect("dense", (q, d) => cosine(q.values, d.values)),
      "d",
    );
    const sparse = await score(w, m, { options: { output_type: "sparse" } }, ids);
    assertClose(byDoc(sparse, ids), await expect("sparse", sparseDot), "sparse");
    const multi = await score(w, m, { options: { output_type: "multivector" } }, ids);
    assertClose(byDoc(multi, ids), await expect("multivector", maxSim), "multivector");

    const bad = await postJson(`${w.url}/v1/score/${m}`, {
      query: { text: QUERY },
      items: [{ text: "x" }],
      options: { output_type: "colbert" },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.detail.code, "INVALID_INPUT");
    const missing = await postJson(`${w.url}/v1/score/fixture/dense`, {
      query: { text: QUERY },
      items: [{ text: "x" }],
      options: { output_type: "sparse" },
    });
    assert.equal(missing.status, 400);
    assert.match(missing.body.detail.message, /does not produce 'sparse'/);
  });
});

Deno.test("score: ties keep request order; extraction models still refuse score", async () => {
  await withWorker(async (w) => {
    // Identical items embed identically: equal scores, ranked in request order.
    const r = await postJson(`${w.url}/v1/score/fixture/dense`, {
      query: { text: QUERY },
      items: ["x", "y", "z"].map((id) => ({ id, text: "same text" })),
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.scores.map((e: Json) => e.item_id), ["x", "y", "z"]);
    assert.equal(r.body.query_id, null);
    const ner = await postJson(`${w.url}/v1/score/fixture/ner`, {
      query: { text: QUERY },
      items: [{ text: "x" }],
    });
    assert.equal(ner.status, 400);
    assert.match(ner.body.detail.message, /use \/v1\/extract\//);
  });
});

Deno.test("models: every encode model lists score among its outputs; rerankers and NER as before", async () => {
  await withWorker(async (w) => {
    const r = await fetch(`${w.url}/v1/models`);
    const { models } = await r.json();
    const outputs = (name: string) => models.find((m: Json) => m.name === name).outputs;
    assert.deepEqual(outputs("fixture/dense"), ["dense", "score"]);
    assert.deepEqual(outputs("fixture/sparse"), ["sparse", "score"]);
    assert.deepEqual(outputs("fixture/colbert"), ["multivector", "score"]);
    assert.deepEqual(outputs("fixture/m3"), ["dense", "sparse", "multivector", "score"]);
    assert.deepEqual(outputs("fixture/reranker"), ["score"]);
    assert.deepEqual(outputs("fixture/ner"), ["entities"]);
    const one = await (await fetch(`${w.url}/v1/models/fixture%2Fm3`)).json();
    assert.deepEqual(one.outputs, ["dense", "sparse", "multivector", "score"]);
  });
});
