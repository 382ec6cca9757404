/**
 * Pair segment ids under RobertaProcessing: RoBERTa/XLM-R have one segment, so a pair gets
 * all-zero type ids (as the Rust library and transformers.js give them), not the 0/1 that
 * @huggingface/tokenizers answers. Checked on the tokenizer (every pair path: reranker and
 * zero-shot NLI both go through encodePair) and end to end on the reranker fixture, whose graph
 * declares token_type_ids, against a direct run with zeros.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { ensureFixtures, SPECIAL_IDS } from "@svc/fixture-models";
import { tokenizerConfig, tokenizerJson } from "@svc/fixture-models/tokenizer";
import { openModel, runModel } from "../fixtures/testing.ts";
import { TextTokenizer, zeroPairTypes } from "#worker/families/text/tokenizer.ts";
import { postJson, withWorker } from "./harness.ts";
import { variantModelsDir } from "./variant_models.ts";

/** The fixture tokenizer with RoBERTa's post-processor (`[CLS] A [SEP] [SEP] B [SEP]`). */
function robertaTokenizerJson(): Record<string, unknown> {
  const json = tokenizerJson() as Record<string, unknown>;
  json.post_processor = {
    type: "RobertaProcessing",
    sep: ["[SEP]", SPECIAL_IDS.sep],
    cls: ["[CLS]", SPECIAL_IDS.cls],
    trim_offsets: true,
    add_prefix_space: false,
  };
  return json;
}

const QUERY = "where do cats sleep";
const DOC = "the cat sat on the mat in the sun";

Deno.test("RobertaProcessing: pairs get all-zero type ids; BERT templates keep 0/1", () => {
  const roberta = new TextTokenizer(robertaTokenizerJson(), tokenizerConfig(128), 128);
  const pair = roberta.encodePair(QUERY, DOC);
  assert.deepEqual(pair.typeIds, pair.ids.map(() => 0));
  // The library itself says 1 on the second text: what the worker must not pass on.
  const lib = new Tokenizer(robertaTokenizerJson(), tokenizerConfig(128) as object)
    .encode(QUERY, { text_pair: DOC, return_token_type_ids: true });
  assert.deepEqual(pair.ids, lib.ids, "same ids as the library");
  assert.ok(lib.token_type_ids!.includes(1));
  // A Sequence holding RobertaProcessing counts too; TemplateProcessing does not.
  assert.equal(
    zeroPairTypes({
      post_processor: {
        type: "Sequence",
        processors: [{ type: "ByteLevel" }, { type: "RobertaProcessing" }],
      },
    }),
    true,
  );
  const bert = new TextTokenizer(tokenizerJson(), tokenizerConfig(128), 128).encodePair(QUERY, DOC);
  assert.ok(bert.typeIds!.includes(1), "BERT pairs keep segment 1");
});

Deno.test("reranker with a RoBERTa tokenizer scores pairs with type ids 0 (reference run)", async () => {
  const fx = await ensureFixtures();
  const cache = await Deno.makeTempDir({ prefix: "svc-cluster-" });
  const repo = join(cache, "fixture", "reranker-roberta");
  await Deno.mkdir(join(repo, "onnx"), { recursive: true });
  const graph = await Deno.readFile(join(fx, "cache/fixture/reranker/onnx/model.onnx"));
  await Deno.writeFile(join(repo, "onnx/model.onnx"), graph);
  await Deno.writeTextFile(join(repo, "tokenizer.json"), JSON.stringify(robertaTokenizerJson()));
  for (const name of ["tokenizer_config.json", "special_tokens_map.json", "config.json"]) {
    await Deno.copyFile(join(fx, "cache/fixture/reranker", name), join(repo, name)).catch(() => {});
  }
  const dir = await variantModelsDir([{
    id: "fixture/reranker-roberta",
    base: "fixture/reranker",
    change: (e) => {
      e.hub = { repo: "fixture/reranker-roberta", revision: "main" };
    },
  }]);
  try {
    const lib = new Tokenizer(robertaTokenizerJson(), tokenizerConfig(128) as object)
      .encode(QUERY, { text_pair: DOC, return_token_type_ids: true });
    const m = await openModel(graph);
    const n = lib.ids.length;
    const run = async (types: number[]) =>
      (await runModel(m, {
        input_ids: { type: "int64", dims: [1, n], data: lib.ids },
        attention_mask: { type: "int64", dims: [1, n], data: lib.ids.map(() => 1) },
        token_type_ids: { type: "int64", dims: [1, n], data: types },
      })).logits.data[0];
    const zeros = await run(lib.ids.map(() => 0));
    const libTypes = await run(lib.token_type_ids!);
    await m.session.release();
    assert.ok(Math.abs(zeros - libTypes) > 1e-4, "type ids change the fixture's score");
    await withWorker(async (w) => {
      const r = await postJson(`${w.url}/v1/score/fixture/reranker-roberta`, {
        query: { text: QUERY },
        items: [{ text: DOC }],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const score = r.body.scores[0].score;
      assert.ok(Math.abs(score - zeros) < 1e-4, `score ${score} vs zeros ${zeros}`);
    }, {
      SVC_MODELS_DIR: dir,
      SVC_CLUSTER_CACHE: cache,
      SVC_MODEL_FILTER: "fixture/reranker-roberta",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(cache, { recursive: true });
  }
});
