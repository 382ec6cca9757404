/**
 * Prompts: `input_type` picks the catalog's query or document prompt; a request that names none
 * gets the entry's `default_input_type` prompt (none when unset), on /v1/encode and /v1/embeddings
 * alike (which takes `input_type` as an extra body field). Checked against the fixture run
 * directly on the prefixed texts.
 */
import assert from "node:assert/strict";
import { type Json, postJson, withWorker } from "./harness.ts";
import { expectedDense, maxDiff } from "./expected.ts";
import { variantModelsDir } from "./variant_models.ts";

const MODEL = "fixture/dense-prompted";
const PROMPTS = { query: "search query: ", document: "search document: " };
const TEXT = "the cat sat on the mat";

Deno.test("prompts: document prompt without input_type (encode and embeddings), query on request", async () => {
  const dir = await variantModelsDir([{
    id: MODEL,
    base: "fixture/dense",
    change: (e) => {
      e.prompts = PROMPTS;
      e.default_input_type = "document";
    },
  }]);
  try {
    const [asDoc, asQuery, bare] = await expectedDense("dense", [
      PROMPTS.document + TEXT,
      PROMPTS.query + TEXT,
      TEXT,
    ]);
    assert.ok(maxDiff(asDoc, asQuery) > 1e-3 && maxDiff(asDoc, bare) > 1e-3, "prompts matter");
    await withWorker(async (w) => {
      const encode = async (options?: Record<string, unknown>) => {
        const r = await postJson(`${w.url}/v1/encode/${MODEL}`, {
          items: [{ text: TEXT }],
          params: options ? { options } : {},
        }, { accept: "application/json" });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return (r.body as Json).items[0].dense.values as number[];
      };
      const embed = async (extra: Record<string, unknown>) => {
        const r = await postJson(`${w.url}/v1/embeddings`, { model: MODEL, input: TEXT, ...extra });
        return r;
      };
      assert.ok(maxDiff(await encode(), asDoc) < 1e-4, "encode default = document prompt");
      assert.ok(maxDiff(await encode({ input_type: "document" }), asDoc) < 1e-4);
      assert.ok(maxDiff(await encode({ input_type: "query" }), asQuery) < 1e-4);
      const e0 = await embed({});
      assert.equal(e0.status, 200, JSON.stringify(e0.body));
      assert.ok(maxDiff(e0.body.data[0].embedding, asDoc) < 1e-4, "embeddings default = document");
      const eq = await embed({ input_type: "query" });
      assert.ok(maxDiff(eq.body.data[0].embedding, asQuery) < 1e-4, "embeddings input_type query");
      const bad = await embed({ input_type: "passage" });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.detail.code, "INVALID_INPUT");
      // A model without prompts reads its texts as they are.
      const plain = await postJson(`${w.url}/v1/embeddings`, {
        model: "fixture/dense",
        input: TEXT,
      });
      assert.ok(maxDiff(plain.body.data[0].embedding, bare) < 1e-4);
    }, { SVC_MODELS_DIR: dir });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
