/**
 * BGE-M3 post-processing on hand-made tensors, for exports other than the fixture's: plain head
 * names (`dense`, `sparse`, `colbert`), an un-normalised dense head, a pooled-or-not dense head,
 * a ColBERT head with every token (CLS included) and padding left in.
 */
import assert from "node:assert/strict";
import { findHeads, m3Dense, m3MultiVector, m3Sparse } from "#worker/families/bge_m3/adapter.ts";
import { padTokens } from "#worker/families/text/tensors.ts";

Deno.test("bge_m3 heads: published names first, plain names too, missing heads absent", () => {
  assert.deepEqual(findHeads(["dense_vecs", "sparse_vecs", "colbert_vecs"]), {
    dense: "dense_vecs",
    sparse: "sparse_vecs",
    multivector: "colbert_vecs",
  });
  assert.deepEqual(findHeads(["colbert", "dense", "sparse"]), {
    dense: "dense",
    sparse: "sparse",
    multivector: "colbert",
  });
  assert.deepEqual(findHeads(["last_hidden_state", "sparse"]), { sparse: "sparse" });
});

Deno.test("bge_m3 dense: normalised whatever the export did; [B, L, H] takes the CLS row", () => {
  const pooled = { data: new Float32Array([3, 4, 0, 0, 5, 12]), dims: [2, 3] };
  assert.deepEqual([...m3Dense(pooled, 0)], [Math.fround(0.6), Math.fround(0.8), 0]);
  assert.deepEqual([...m3Dense(pooled, 1)], [0, Math.fround(5 / 13), Math.fround(12 / 13)]);
  const perToken = {
    // batch 2, 2 tokens, H 2: CLS rows are [0, 2] and [1, 0]
    data: new Float32Array([0, 2, 9, 9, 1, 0, 9, 9]),
    dims: [2, 2, 2],
  };
  assert.deepEqual([...m3Dense(perToken, 0)], [0, 1]);
  assert.deepEqual([...m3Dense(perToken, 1)], [1, 0]);
});

Deno.test("bge_m3 sparse: max per id over attended tokens; specials and zeros dropped; by index", () => {
  // Row 0: [CLS]=4, 20, 9, 20, [SEP]=5; row 1: [CLS], 9, [SEP], pad, pad.
  const t = padTokens([{ ids: [4, 20, 9, 20, 5] }, { ids: [4, 9, 5] }]);
  const weights = new Float32Array([
    0.9,
    0.2,
    0,
    0.7,
    0.8, // row 0 ([B, L, 1] and [B, L] share this layout)
    0.5,
    0.3,
    0.4,
    0.6,
    0.6, // row 1: the last two are padding
  ]);
  const special = new Set([0, 3, 4, 5, 6]);
  for (const dims of [[2, 5, 1], [2, 5]]) {
    const head = { data: weights, dims };
    const r0 = m3Sparse(head, t, 0, special);
    assert.deepEqual([...r0.indices], [20]); // id 9 has weight 0: dropped
    assert.deepEqual([...r0.values], [Math.fround(0.7)]);
    const r1 = m3Sparse(head, t, 1, special);
    // Padding (id 0, weight 0.6) is neither attended nor kept.
    assert.deepEqual([...r1.indices], [9]);
    assert.deepEqual([...r1.values], [Math.fround(0.3)]);
  }
});

Deno.test("bge_m3 multivector: tokens after CLS, padding dropped, rows normalised (L-1 or L rows)", () => {
  const t = padTokens([{ ids: [4, 20, 5] }, { ids: [4, 5] }]); // seq 3; row 1 has one pad
  // All L rows (CLS included), D 2.
  const all = {
    data: new Float32Array([
      ...[7, 7],
      ...[3, 4],
      ...[0, 2], // row 0: CLS, 20, SEP
      ...[7, 7],
      ...[5, 0],
      ...[1, 1], // row 1: CLS, SEP, pad
    ]),
    dims: [2, 3, 2],
  };
  const a0 = m3MultiVector(all, t, 0);
  assert.equal(a0.numTokens, 2);
  assert.deepEqual([...a0.values], [0.6000000238418579, 0.800000011920929, 0, 1]);
  const a1 = m3MultiVector(all, t, 1);
  assert.equal(a1.numTokens, 1);
  assert.deepEqual([...a1.values], [1, 0]);
  // The published layout: L-1 rows, starting after CLS.
  const after = {
    data: new Float32Array([...[3, 4], ...[0, 2], ...[5, 0], ...[1, 1]]),
    dims: [2, 2, 2],
  };
  assert.deepEqual([...m3MultiVector(after, t, 0).values], [...a0.values]);
  assert.deepEqual([...m3MultiVector(after, t, 1).values], [1, 0]);
  assert.throws(() => m3MultiVector({ data: new Float32Array(2), dims: [1, 1, 2] }, t, 0), /rows/);
});
