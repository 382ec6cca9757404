/** Classification scoring shared by the zero-shot families, with hand-computed numbers. */
import assert from "node:assert/strict";
import { nliHeads, rankLabels, sigmoid, softmax } from "#worker/families/classification.ts";

const close = (a: number[], b: number[]) =>
  a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) < 1e-12, `${a} vs ${b}`));

Deno.test("nliHeads: entailment and contradiction from 3-way and 2-way id2label", () => {
  assert.deepEqual(nliHeads(["entailment", "neutral", "contradiction"]), {
    entailment: 0,
    contradiction: 2,
  });
  assert.deepEqual(nliHeads(["contradiction", "entailment", "neutral"]), {
    entailment: 1,
    contradiction: 0,
  });
  assert.deepEqual(nliHeads(["CONTRADICTION", "NEUTRAL", "ENTAILMENT"]), {
    entailment: 2,
    contradiction: 0,
  });
  assert.deepEqual(nliHeads(["entailment", "not_entailment"]), { entailment: 0, contradiction: 1 });
  assert.deepEqual(nliHeads(["not entailment", "entailment"]), { entailment: 1, contradiction: 0 });
  assert.deepEqual(nliHeads(["entailment", "other"]), { entailment: 0, contradiction: 1 });
  assert.throws(() => nliHeads(["neutral", "a", "b"]), /entailment/);
  assert.throws(() => nliHeads(["entailment", "neutral", "other"]), /contradiction/);
});

Deno.test("single-label: softmax of entailment logits across labels", () => {
  // e = [ln 1, ln 2, ln 5] → exp = [1, 2, 5] → [1/8, 2/8, 5/8].
  close(softmax([0, Math.log(2), Math.log(5)]), [0.125, 0.25, 0.625]);
  // Shift invariance: adding 1000 to every logit changes nothing (and does not overflow).
  close(softmax([1000, 1000 + Math.log(3)]), [0.25, 0.75]);
});

Deno.test("multi-label: softmax over [contradiction, entailment] is sigmoid(e - c)", () => {
  // e = ln 3, c = 0 → exp(e) / (exp(e) + exp(c)) = 3 / 4.
  assert.ok(Math.abs(sigmoid(Math.log(3) - 0) - 0.75) < 1e-12);
  // e = 0, c = ln 4 → 1 / 5.
  assert.ok(Math.abs(sigmoid(0 - Math.log(4)) - 0.2) < 1e-12);
});

Deno.test("rankLabels: highest first, ties in label order, threshold inclusive", () => {
  const ranked = rankLabels(["a", "b", "c", "d"], [0.2, 0.5, 0.2, 0.1]);
  assert.deepEqual(ranked.map((c) => c.label), ["b", "a", "c", "d"]);
  assert.deepEqual(rankLabels(["a", "b", "c"], [0.2, 0.5, 0.3], 0.3).map((c) => c.label), [
    "b",
    "c",
  ]);
});
