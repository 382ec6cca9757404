import assert from "node:assert/strict";
import { planSubBatches, RUN_COST_TOKENS } from "#worker/scheduler/sub_batches.ts";
import type { PreparedItem } from "#worker/families/types.ts";
import { runTokenBudget } from "#worker/inference/device_policy.ts";

const items = (...lengths: number[]): PreparedItem[] =>
  lengths.sort((a, b) => a - b).map((length, index) => ({ index, length }));

function cost(groups: PreparedItem[][]): number {
  return groups.reduce((s, g) => s + g.length * g[g.length - 1].length + RUN_COST_TOKENS, 0);
}

/** Every way to cut a sorted list into contiguous runs within the budget; the cheapest cost. */
function bruteForce(sorted: PreparedItem[], budget: number): number {
  let bestCost = Infinity;
  const n = sorted.length;
  for (let mask = 0; mask < 1 << (n - 1); mask++) {
    const groups: PreparedItem[][] = [[sorted[0]]];
    for (let k = 1; k < n; k++) {
      if (mask & (1 << (k - 1))) groups.push([sorted[k]]);
      else groups[groups.length - 1].push(sorted[k]);
    }
    const ok = groups.every((g) => g.length === 1 || g.length * g[g.length - 1].length <= budget);
    if (ok) bestCost = Math.min(bestCost, cost(groups));
  }
  return bestCost;
}

Deno.test("sub-batches: optimal cuts (checked against brute force), budget respected, order kept", () => {
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let trial = 0; trial < 40; trial++) {
    const n = 1 + Math.floor(rnd() * 11);
    const sorted = items(...Array.from({ length: n }, () => 5 + Math.floor(rnd() * 500)));
    const budget = 256 + Math.floor(rnd() * 4096);
    const groups = planSubBatches(sorted, budget);
    assert.deepEqual(groups.flat(), sorted, "every item once, in order");
    for (const g of groups) {
      assert.ok(g.length === 1 || g.length * g[g.length - 1].length <= budget);
    }
    assert.equal(cost(groups), bruteForce(sorted, budget), `trial ${trial}`);
  }
});

Deno.test("sub-batches: mixed lengths waste little padding; an over-long item runs alone", () => {
  const lengths = Array.from({ length: 64 }, (_, i) => 5 + ((i * 37) % 496));
  const sorted = items(...lengths);
  const groups = planSubBatches(sorted, 4096);
  const real = lengths.reduce((a, b) => a + b, 0);
  const padded = groups.reduce((s, g) => s + g.length * g[g.length - 1].length, 0);
  assert.ok((padded - real) / padded < 0.15, `padding ${((padded - real) / padded).toFixed(3)}`);
  const huge = planSubBatches(items(10, 20, 9000), 4096);
  assert.deepEqual(huge.map((g) => g.map((p) => p.length)), [[10, 20], [9000]]);
  assert.deepEqual(planSubBatches([], 4096), []);
});

Deno.test("run budget: 1k tokens per run on CPU by default, the model's budget on CUDA, or the cap", () => {
  assert.equal(runTokenBudget(8192, "cpu", 0), 1024);
  assert.equal(runTokenBudget(512, "cpu", 0), 512, "never above the model's own budget");
  assert.equal(runTokenBudget(8192, "cuda", 0), 8192);
  assert.equal(runTokenBudget(8192, "cpu", 4096), 4096);
  assert.equal(runTokenBudget(8192, "cuda", 2048), 2048);
});
