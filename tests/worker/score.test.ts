import assert from "node:assert/strict";
import { ensureFixtures } from "@svc/fixture-models";
import { fixtureTokenizer, openModel, runModel, textFeeds } from "../fixtures/testing.ts";
import { type Json, postJson, startTestWorker } from "./harness.ts";
import { splitRoom } from "#worker/families/text/tokenizer.ts";
import { fixtureIds } from "./expected.ts";

/** Logits of each (query, document) pair run alone, straight through onnxruntime. */
async function expectedScores(query: string, docs: string[]): Promise<number[]> {
  const fx = await ensureFixtures();
  const m = await openModel(await Deno.readFile(`${fx}/cache/fixture/reranker/onnx/model.onnx`));
  const out: number[] = [];
  for (const d of docs) {
    const r = await runModel(m, textFeeds(fixtureTokenizer(), [[query, d]], true));
    out.push(r[m.outputNames[0]].data[0]);
  }
  await m.session.release();
  return out;
}

Deno.test("score: cross-encoder logits match a direct run; sorted, ranked, ids echoed", async () => {
  const w = await startTestWorker();
  try {
    const query = "where do cats sleep";
    const docs = ["cats sleep on the warm mat", "the stock market fell", "dogs play in the park"];
    const r = await postJson(`${w.url}/v1/score/fixture/reranker`, {
      query: { id: "q", text: query },
      items: docs.map((text, i) => i === 2 ? { text } : { id: `d${i}`, text }),
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.model, "fixture/reranker");
    assert.equal(r.body.query_id, "q");
    const want = await expectedScores(query, docs);
    const byId = new Map<string | null, number>();
    r.body.scores.forEach((e: Json, rank: number) => {
      assert.equal(e.rank, rank);
      byId.set(e.item_id, e.score);
    });
    assert.ok(Math.abs(byId.get("d0")! - want[0]) < 1e-4);
    assert.ok(Math.abs(byId.get("d1")! - want[1]) < 1e-4);
    assert.ok(Math.abs(byId.get("item-2")! - want[2]) < 1e-4, "item without id → item-{i}");
    const scores = r.body.scores.map((e: Json) => e.score);
    assert.deepEqual(scores, [...scores].sort((a: number, b: number) => b - a));
    assert.ok(r.headers.get("x-inference-time"));

    const noQuery = await postJson(`${w.url}/v1/score/fixture/reranker`, {
      query: { id: "q" },
      items: [{ text: "a" }],
    });
    assert.equal(noQuery.status, 400);
    // Encode models score too (tests/worker/score_embeddings.test.ts); extraction models do not.
    const wrongModel = await postJson(`${w.url}/v1/score/fixture/gliner`, {
      query: { text: "a" },
      items: [{ text: "b" }],
    });
    assert.equal(wrongModel.status, 400);
    assert.match(wrongModel.body.detail.message, /\/v1\/extract/);
  } finally {
    await w.close();
  }
});

Deno.test("score: long pairs are truncated longest-first to the model's limit", async () => {
  assert.deepEqual(splitRoom(10, 20, 100), [10, 20]);
  assert.deepEqual(splitRoom(10, 200, 100), [10, 90]);
  assert.deepEqual(splitRoom(200, 10, 100), [90, 10]);
  assert.deepEqual(splitRoom(200, 300, 100), [50, 50]);
  const w = await startTestWorker();
  try {
    const cats = (n: number) => Array.from({ length: n }, () => "cat").join(" ");
    assert.equal(fixtureIds(cats(300)).length, 302, "one token per word");
    const r = await postJson(`${w.url}/v1/score/fixture/reranker`, {
      query: { text: cats(300) },
      items: [{ text: cats(300) }],
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.scores.length, 1);
    assert.equal(r.headers.get("x-truncated-items"), "1");
    // 128 tokens minus [CLS] [SEP] [SEP] leave 125: split longest-first into 63 + 62.
    const [want] = await expectedScores(cats(63), [cats(62)]);
    assert.ok(Math.abs(r.body.scores[0].score - want) < 1e-4, "scored on the truncated pair");
    const fits = await postJson(`${w.url}/v1/score/fixture/reranker`, {
      query: { text: cats(60) },
      items: [{ text: cats(65) }, { text: cats(300) }],
    });
    assert.equal(fits.headers.get("x-truncated-items"), "1", "only the pair that did not fit");
  } finally {
    await w.close();
  }
});
