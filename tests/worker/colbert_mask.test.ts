/**
 * ColBERT query padding: the [MASK] tokens that pad a query to 32 get attention 0 unless the
 * entry sets `attend_to_mask_tokens: true` (ColBERT's and fastembed's default is false). Both
 * settings are checked against the fixture graph run directly with the recipe's ids and mask.
 */
import assert from "node:assert/strict";
import { ensureFixtures, SPECIAL_IDS } from "@svc/fixture-models";
import { fixtureTokenizer, openModel, runModel } from "../fixtures/testing.ts";
import { type Json, postJson, withWorker } from "./harness.ts";
import { maxDiff } from "./expected.ts";
import { variantModelsDir } from "./variant_models.ts";

const QUERY = "cats and dogs";
const QUERY_LENGTH = 32;

/** The query's 32 token vectors, computed outside the worker with the given mask rule. */
async function referenceQuery(attendToMask: boolean): Promise<Float32Array[]> {
  const fx = await ensureFixtures();
  const m = await openModel(await Deno.readFile(`${fx}/cache/fixture/colbert/onnx/model.onnx`));
  const body = fixtureTokenizer().encode(QUERY, { add_special_tokens: false }).ids;
  const ids = [SPECIAL_IDS.cls, SPECIAL_IDS.unused0, ...body, SPECIAL_IDS.sep];
  const real = ids.length;
  while (ids.length < QUERY_LENGTH) ids.push(SPECIAL_IDS.mask);
  const mask = ids.map((_, p) => (attendToMask || p < real ? 1 : 0));
  const out = await runModel(m, {
    input_ids: { type: "int64", dims: [1, QUERY_LENGTH], data: ids },
    attention_mask: { type: "int64", dims: [1, QUERY_LENGTH], data: mask },
  });
  await m.session.release();
  const { dims, data } = out.contextual;
  const dim = dims[2];
  return ids.map((_, p) => data.slice(p * dim, (p + 1) * dim));
}

async function queryRows(url: string, model: string): Promise<number[][]> {
  const r = await postJson(`${url}/v1/encode/${model}`, {
    items: [{ text: QUERY }],
    params: { output_types: ["multivector"], options: { input_type: "query" } },
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return (r.body as Json).items[0].multivector.values;
}

Deno.test("ColBERT: [MASK] query padding is not attended by default, attended when the entry says so", async () => {
  const dir = await variantModelsDir([{
    id: "fixture/colbert-attend-mask",
    base: "fixture/colbert",
    change: (e) => {
      (e.family_options as Record<string, unknown>).attend_to_mask_tokens = true;
    },
  }]);
  try {
    const [off, on] = [await referenceQuery(false), await referenceQuery(true)];
    // The two recipes really give different vectors (else this test could not fail).
    assert.ok(maxDiff(off[1], on[1]) > 1e-3, "mask attention changes the query's vectors");
    await withWorker(async (w) => {
      const byDefault = await queryRows(w.url, "fixture/colbert");
      const attended = await queryRows(w.url, "fixture/colbert-attend-mask");
      assert.equal(byDefault.length, QUERY_LENGTH);
      assert.equal(attended.length, QUERY_LENGTH);
      for (let p = 0; p < QUERY_LENGTH; p++) {
        assert.ok(maxDiff(byDefault[p], off[p]) < 1e-4, `default row ${p} = attention 0 on [MASK]`);
        assert.ok(maxDiff(attended[p], on[p]) < 1e-4, `attend row ${p} = attention 1 on [MASK]`);
      }
    }, { SVC_MODELS_DIR: dir });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
