/**
 * Multi-vector scoring (MaxSim) runs on the main thread and multiplies query tokens × the items'
 * tokens × dimensions: it is refused beyond SVC_MAX_MAXSIM_OPS before it starts, computed in
 * slices that let the event loop run, and stopped once the client is gone.
 */
import assert from "node:assert/strict";
import { ClientGoneError, ServiceError } from "@svc/shared/errors";
import { maxSimScores } from "#worker/service/embedding_score.ts";
import { maxSim, type TokenVectors } from "#worker/service/similarity.ts";
import { Prng } from "@svc/fixture-models/prng";
import { postJson, withWorker } from "./harness.ts";

function vectors(rng: Prng, numTokens: number, tokenDims: number): TokenVectors {
  const values = new Float32Array(numTokens * tokenDims);
  for (let i = 0; i < values.length; i++) values[i] = rng.next() - 0.5;
  return { values, numTokens, tokenDims };
}

const rng = new Prng(7);
const query = vectors(rng, 32, 64);
/** 200 items of 100 tokens: 41 M multiply-adds, many slices. */
const docs = Array.from({ length: 200 }, () => vectors(rng, 100, 64));
const OPS = 32 * 200 * 100 * 64;

Deno.test("MaxSim scores: equal to maxSim, computed in slices the event loop runs between", async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 0);
  try {
    const scores = await maxSimScores(query, docs, OPS);
    assert.deepEqual(scores, docs.map((d) => maxSim(query, d)));
  } finally {
    clearInterval(timer);
  }
  // All at once it would be 0: the timer could only fire after it.
  assert.ok(ticks >= 5, `${ticks} timer turns while scoring`);
});

Deno.test("MaxSim scores: over SVC_MAX_MAXSIM_OPS a 400 before any work; a gone client stops it", async () => {
  await assert.rejects(
    maxSimScores(query, docs, OPS - 1),
    (err) =>
      err instanceof ServiceError && err.code === "INVALID_INPUT" &&
      err.message.includes(
        `32 query tokens against 20000 item tokens of 64 dimensions takes ${OPS}`,
      ) &&
      err.message.includes(`at most ${OPS - 1} (SVC_MAX_MAXSIM_OPS)`),
  );
  const gone = new AbortController();
  gone.abort();
  await assert.rejects(maxSimScores(query, docs, OPS, gone.signal), ClientGoneError);
});

Deno.test("score: a ColBERT request over SVC_MAX_MAXSIM_OPS is a 400 naming it", async () => {
  const body = {
    query: { text: "where do cats sleep" },
    // 64 items of ~70 tokens against a 32-token query: several million multiply-adds.
    items: Array.from({ length: 64 }, (_, i) => ({
      text: `cats sleep on mat number ${i} `.repeat(10),
    })),
  };
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}/v1/score/fixture/colbert`, body);
    assert.equal(r.status, 400);
    assert.equal(r.body.detail.code, "INVALID_INPUT");
    assert.match(r.body.detail.message, /multiply-adds; at most 1000000 \(SVC_MAX_MAXSIM_OPS\)/);
  }, { SVC_MAX_MAXSIM_OPS: "1000000" });
  await withWorker(async (w) => {
    const r = await postJson(`${w.url}/v1/score/fixture/colbert`, body);
    assert.equal(r.status, 200, "within the default");
    assert.equal(r.body.scores.length, 64);
  });
});
