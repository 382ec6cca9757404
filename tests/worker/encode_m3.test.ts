/**
 * The BGE-M3 family through a real worker: fixture/m3's three heads from one graph, any subset of
 * output types, dense only by default; results equal a direct run of each text alone.
 */
import assert from "node:assert/strict";
import { ensureFixtures, VOCAB_SIZE } from "@svc/fixture-models";
import { M3_COLBERT_DIM } from "@svc/fixture-models/models";
import { expectedM3, maxDiff } from "./expected.ts";
import { type Json, postJson, withWorker } from "./harness.ts";

const TEXTS = [
  "the cat sat on the mat",
  "hello world",
  "the bank reported strong earnings and the cat slept",
];

Deno.test("encode m3: dense, sparse and multivector in one request match direct runs", async () => {
  await withWorker(async (w) => {
    const want = await expectedM3(TEXTS);
    const r = await postJson(`${w.url}/v1/encode/fixture/m3`, {
      items: TEXTS.map((text, i) => ({ id: `t${i}`, text })),
      params: { output_types: ["dense", "sparse", "multivector"] },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.items.length, TEXTS.length);
    r.body.items.forEach((item: Json, i: number) => {
      const e = want[i];
      assert.equal(item.id, `t${i}`);
      assert.equal(item.dense.dims, 32);
      assert.ok(maxDiff(item.dense.values, e.dense) < 1e-4, `dense ${i}`);

      assert.equal(item.sparse.dims, VOCAB_SIZE);
      assert.deepEqual(item.sparse.indices, [...e.sparse.keys()].sort((a, b) => a - b));
      const got = new Map<number, number>(
        item.sparse.indices.map((k: number, j: number) => [k, item.sparse.values[j]]),
      );
      for (const [k, v] of e.sparse) assert.ok(Math.abs(got.get(k)! - v) < 1e-4, `sparse ${k}`);
      assert.ok(e.sparse.size > 0, "the fixture gives some lexical weight");

      const mv = item.multivector;
      assert.equal(mv.token_dims, M3_COLBERT_DIM);
      assert.equal(mv.num_tokens, e.multivector.length, `text ${i}: tokens after [CLS]`);
      e.multivector.forEach((row, t) => {
        assert.ok(maxDiff(mv.values[t], row) < 1e-4, `text ${i} token ${t}`);
      });
    });
  });
});

Deno.test("encode m3: dense only by default; any subset of output types", async () => {
  await withWorker(async (w) => {
    const url = `${w.url}/v1/encode/fixture/m3`;
    const items = [{ text: TEXTS[0] }];
    const keys = (body: Json) => Object.keys(body.items[0]).sort();
    const def = await postJson(url, { items });
    assert.equal(def.status, 200);
    assert.deepEqual(keys(def.body), ["dense"]);
    for (
      const types of [["sparse"], ["multivector"], ["sparse", "dense"], ["multivector", "sparse"]]
    ) {
      const r = await postJson(url, { items, params: { output_types: types } });
      assert.equal(r.status, 200, JSON.stringify(types));
      assert.deepEqual(keys(r.body), [...types].sort(), JSON.stringify(types));
    }
    // Subsets come from the same heads: the sparse vector alone equals the one of a full request.
    const [e] = await expectedM3([TEXTS[0]]);
    const s = await postJson(url, { items, params: { output_types: ["sparse"] } });
    assert.deepEqual(s.body.items[0].sparse.indices, [...e.sparse.keys()].sort((a, b) => a - b));
  });
});

Deno.test("encode m3: quantised dtypes apply per head (sparse stays float32)", async () => {
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}/v1/encode/fixture/m3`, {
      items: [{ text: TEXTS[1] }],
      params: { output_types: ["dense", "sparse", "multivector"], output_dtype: "int8" },
    });
    assert.equal(r.status, 200);
    const item = r.body.items[0];
    assert.equal(item.dense.dtype, "int8");
    assert.equal(item.sparse.dtype, "float32");
    assert.equal(item.multivector.dtype, "int8");
    for (const row of item.multivector.values) {
      assert.equal(Math.max(...row.map(Math.abs)), 127, "each token row scaled on its own");
    }
  });
});

Deno.test("encode m3: a graph without a declared head fails to load with a clear message", async () => {
  const fx = await ensureFixtures();
  const dir = await Deno.makeTempDir({ prefix: "svc-m3-broken-" });
  try {
    // fixture/dense's graph has only last_hidden_state: no head of the BGE-M3 family.
    const entry = JSON.parse(await Deno.readTextFile(`${fx}/models/m3.json`));
    entry.id = "fixture/m3-broken";
    entry.hub.repo = "fixture/dense";
    await Deno.writeTextFile(`${dir}/m3-broken.json`, JSON.stringify(entry));
    await Deno.copyFile(`${fx}/models/m3.json`, `${dir}/m3.json`);
    await withWorker(async (w) => {
      const r = await postJson(`${w.url}/v1/encode/fixture/m3-broken`, {
        items: [{ text: "x" }],
      });
      assert.equal(r.status, 502);
      assert.equal(r.body.detail.code, "MODEL_LOAD_FAILED");
      assert.equal(r.body.detail.error_class, "incompatible");
      assert.equal(r.body.detail.permanent, true);
      assert.match(r.body.detail.message, /declares 'dense' but its graph has none of/);
      assert.match(r.body.detail.message, /last_hidden_state/);
      const ok = await postJson(`${w.url}/v1/encode/fixture/m3`, { items: [{ text: "x" }] });
      assert.equal(ok.status, 200, "the worker keeps serving");
    }, { SVC_MODELS_DIR: dir });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
