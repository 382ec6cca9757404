/** Similarity functions of score-with-encode-models, on hand-checked numbers and edge cases. */
import assert from "node:assert/strict";
import { cosine, maxSim, sparseDot } from "#worker/service/similarity.ts";

const f = (...x: number[]) => Float32Array.from(x);

Deno.test("cosine: angle only, zero vectors score 0, lengths must agree", () => {
  assert.equal(cosine(f(1, 0), f(2, 0)), 1);
  assert.equal(cosine(f(1, 0), f(0, 3)), 0);
  assert.ok(Math.abs(cosine(f(1, 1), f(1, 0)) - Math.SQRT1_2) < 1e-7);
  assert.equal(cosine(f(0, 0), f(1, 0)), 0);
  assert.throws(() => cosine(f(1), f(1, 2)), /lengths differ/);
});

Deno.test("sparse dot: shared indices only, any order", () => {
  const a = { indices: Int32Array.of(7, 2, 40), values: f(0.5, 2, 1) };
  const b = { indices: Int32Array.of(2, 9, 7), values: f(3, 5, 4) };
  assert.equal(sparseDot(a, b), 2 * 3 + 0.5 * 4);
  assert.equal(sparseDot(b, a), 2 * 3 + 0.5 * 4);
  assert.equal(sparseDot(a, { indices: new Int32Array(0), values: f() }), 0);
});

Deno.test("MaxSim: best document token per query token, summed; empty document scores 0", () => {
  const q = { values: f(1, 0, 0, 1), numTokens: 2, tokenDims: 2 };
  const d = { values: f(0.5, 0.5, 0.9, 0.1, -1, 0), numTokens: 3, tokenDims: 2 };
  // token 1: max(0.5, 0.9, -1) = 0.9; token 2: max(0.5, 0.1, 0) = 0.5
  assert.ok(Math.abs(maxSim(q, d) - 1.4) < 1e-6);
  assert.equal(maxSim(q, { values: f(), numTokens: 0, tokenDims: 2 }), 0);
  assert.throws(() => maxSim(q, { values: f(1, 2, 3), numTokens: 1, tokenDims: 3 }), /differ/);
});
