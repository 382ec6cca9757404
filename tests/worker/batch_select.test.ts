/** How the next batch is chosen from a queue (worker/scheduler/batch_select.ts). */
import assert from "node:assert/strict";
import { type BatchCaps, type Candidate, selectBatch } from "#worker/scheduler/batch_select.ts";
import { planSubBatches } from "#worker/scheduler/sub_batches.ts";
import { Prng } from "@svc/fixture-models/prng";

const CAPS: BatchCaps = { maxItems: 64, maxRequests: 64, tokenBudget: 4096 };

/** A queue of one-item requests of the given lengths. */
const oneEach = (lengths: number[]): Candidate[] =>
  lengths.map((tokens) => ({ tokens, request: {} }));

/** Lengths in [min, max] from a seeded generator. */
function lengths(seed: number, n: number, min: number, max: number): number[] {
  const rng = new Prng(seed);
  return Array.from({ length: n }, () => min + rng.int(max - min + 1));
}

/** Take batches until the queue is empty; each batch as the candidates it took. */
function drain(queue: Candidate[], caps: BatchCaps): Candidate[][] {
  const batches: Candidate[][] = [];
  let rest = queue;
  while (rest.length > 0) {
    const picked = new Set(selectBatch(rest, caps));
    batches.push(rest.filter((_, i) => picked.has(i)));
    rest = rest.filter((_, i) => !picked.has(i));
  }
  return batches;
}

/** Padded tokens of a batch as the inference thread runs it (sorted, cut by planSubBatches). */
function padded(batch: Candidate[]): number {
  const sorted = batch.map((c) => ({ length: c.tokens })).sort((a, b) => a.length - b.length);
  return planSubBatches(sorted, 1024).reduce((s, run) => s + run.length * run.at(-1)!.length, 0);
}

Deno.test("batch selection: one length is first come, first served, within the caps", () => {
  assert.deepEqual(selectBatch([], CAPS), []);
  assert.deepEqual(selectBatch(oneEach([7]), CAPS), [0]);
  const q = oneEach(Array(10).fill(5));
  assert.deepEqual(selectBatch(q, { ...CAPS, maxItems: 4 }), [0, 1, 2, 3]);
  assert.deepEqual(selectBatch(q, { ...CAPS, tokenBudget: 12 }), [0, 1]);
  assert.deepEqual(selectBatch(q, { ...CAPS, maxRequests: 3 }), [0, 1, 2]);
  // The oldest goes even when it alone is over the budget.
  assert.deepEqual(selectBatch(oneEach([50, 1, 1]), { ...CAPS, tokenBudget: 10 }), [0]);
});

Deno.test("batch selection: requests in arrival order; an oldest request over a batch goes shortest first", () => {
  // One-item requests: the front of the queue, whatever the lengths.
  const singles = oneEach([40, 10, 90, 38, 11, 41, 92, 12]);
  assert.deepEqual(selectBatch(singles, { ...CAPS, maxItems: 3 }), [0, 1, 2]);
  // The oldest request fits: it goes whole, and the next ones fill the batch in order.
  const a = {};
  const b = {};
  const small: Candidate[] = [
    { tokens: 90, request: a },
    { tokens: 10, request: a },
    { tokens: 50, request: b },
    { tokens: 20, request: b },
  ];
  assert.deepEqual(selectBatch(small, { ...CAPS, maxItems: 3 }), [0, 1, 2]);
  // The oldest request holds more than a batch: its shortest items, not the next request's.
  const big: Candidate[] = [
    ...[90, 10, 60, 11, 95, 12].map((tokens) => ({ tokens, request: a })),
    { tokens: 10, request: b },
  ];
  assert.deepEqual(selectBatch(big, { ...CAPS, maxItems: 3 }), [1, 3, 5]);
  assert.deepEqual(selectBatch(big, { ...CAPS, tokenBudget: 100 }), [1, 2, 3, 5]);
});

Deno.test("batch selection: on random queues the caps hold and requests keep their order", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const rng = new Prng(seed);
    const queue: Candidate[] = [];
    for (let r = 0, n = 1 + rng.int(12); r < n; r++) {
      const request = {};
      for (let k = 0, items = 1 + rng.int(30); k < items; k++) {
        queue.push({ tokens: 1 + rng.int(300), request });
      }
    }
    const caps = {
      maxItems: 1 + rng.int(40),
      maxRequests: 1 + rng.int(8),
      tokenBudget: 200 + rng.int(3000),
    };
    const picked = selectBatch(queue, caps);
    const why = `seed ${seed}`;
    assert.ok(picked.length >= 1 && picked.length <= caps.maxItems, why);
    assert.ok(new Set(picked.map((i) => queue[i].request)).size <= caps.maxRequests, why);
    const tokens = picked.reduce((s, i) => s + queue[i].tokens, 0);
    assert.ok(picked.length === 1 || tokens <= caps.tokenBudget, `${why}: budget`);
    const own = queue.filter((c) => c.request === queue[0].request).length;
    if (picked.at(-1)! + 1 === picked.length && picked.length >= own) continue; // the front, in order
    // Otherwise only the oldest request's items, and none of its items left out is shorter.
    assert.ok(picked.every((i) => i < own), `${why}: only the oldest request`);
    const longest = Math.max(...picked.map((i) => queue[i].tokens));
    for (let i = 0; i < own; i++) {
      if (!picked.includes(i)) assert.ok(queue[i].tokens >= longest, `${why}: item ${i} shorter`);
    }
  }
});

Deno.test("batch selection: a large request pads far less than taken in arrival order", () => {
  // A 256-text request of the bench's throughput texts (32–160 tokens), 4,096-token batches.
  const request = {};
  const queue = lengths(7, 256, 32, 160).map((tokens) => ({ tokens, request }));
  const real = queue.reduce((s, c) => s + c.tokens, 0);
  const byLength = drain(queue, CAPS).reduce((s, b) => s + padded(b), 0);
  const fifo: Candidate[][] = [];
  for (let i = 0, tokens = 0; i < queue.length; i++) {
    if (fifo.length === 0 || tokens + queue[i].tokens > CAPS.tokenBudget) {
      fifo.push([]);
      tokens = 0;
    }
    fifo.at(-1)!.push(queue[i]);
    tokens += queue[i].tokens;
  }
  const inOrder = fifo.reduce((s, b) => s + padded(b), 0);
  const share = (p: number) => (p - real) / p;
  assert.ok(share(byLength) < share(inOrder) / 2, `${share(byLength)} vs ${share(inOrder)}`);
  assert.ok(share(byLength) < 0.05, `padding share ${share(byLength)}`);
});
