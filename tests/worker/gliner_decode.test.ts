/** GLiNER decoding with hand-built logits: token-level spans, lead words, per-label selection. */
import assert from "node:assert/strict";
import {
  collectSpans,
  greedyPerLabel,
  type SpanCandidate,
} from "#worker/families/gliner/decode.ts";
import type { GlinerRow } from "#worker/families/gliner/rows.ts";

const logit = (p: number) => Math.log(p / (1 - p));
const row = (words: number, lead = 0, offset = 0): GlinerRow => ({
  ids: [],
  wordsMask: [],
  words,
  lead,
  offset,
  labels: 1,
  labelOffset: 0,
});

Deno.test("token layout: start and end above the threshold with every inside word above it", () => {
  // One row, 4 words, 1 label; planes start, end, inside over words 0..3.
  const start = [0.9, 0.2, 0.7, 0.1];
  const end = [0.1, 0.8, 0.6, 0.9];
  const inside = [0.9, 0.8, 0.2, 0.7];
  const data = Float32Array.from([...start, ...end, ...inside].map(logit));
  const out: SpanCandidate[] = [];
  collectSpans("token", data, [3, 1, 4, 1], 0, row(4), 12, 0.5, out);
  // From word 0: end at 1 → mean(0.9, 0.8) = 0.85; word 2's inside 0.2 stops longer spans.
  // From word 2: inside 0.2 < 0.5, nothing.
  assert.equal(out.length, 1);
  assert.deepEqual([out[0].start, out[0].end, out[0].label], [0, 1, 0]);
  assert.ok(Math.abs(out[0].score - 0.85) < 1e-6);
  // Width cap: at most maxWidth words.
  const capped: SpanCandidate[] = [];
  collectSpans("token", data, [3, 1, 4, 1], 0, row(4), 1, 0.5, capped);
  assert.equal(capped.length, 0, "a 1-word cap leaves no span (word 0 does not end a span)");
});

Deno.test("lead words are skipped and offsets shift to the text's words", () => {
  // 3 row words: 1 lead (instruction) word, then text words 0 and 1 of a window at offset 5.
  const start = [0.9, 0.9, 0.1];
  const end = [0.9, 0.9, 0.9];
  const inside = [0.9, 0.9, 0.9];
  const data = Float32Array.from([...start, ...end, ...inside].map(logit));
  const out: SpanCandidate[] = [];
  collectSpans("token", data, [3, 1, 3, 1], 0, row(3, 1, 5), 12, 0.5, out);
  // Row word 1 starts spans [1,1] and [1,2] → text words [5,5] and [5,6]; the lead word never.
  assert.deepEqual(out.map((s) => [s.start, s.end]), [[5, 5], [5, 6]]);
});

Deno.test("greedyPerLabel: labels do not compete; within a label no overlaps, best first", () => {
  const s = (start: number, end: number, label: number, score: number) => ({
    start,
    end,
    label,
    score,
  });
  const got = greedyPerLabel(
    [s(0, 1, 0, 0.6), s(1, 2, 0, 0.9), s(0, 1, 1, 0.7), s(3, 3, 0, 0.5)],
    5,
    2,
  );
  assert.deepEqual(got[0].map((x) => [x.start, x.end, x.score]), [[1, 2, 0.9], [3, 3, 0.5]]);
  assert.deepEqual(got[1].map((x) => [x.start, x.end, x.score]), [[0, 1, 0.7]]);
});
