/** The batcher's token estimates: a default guess, then each model's learned rate. */
import assert from "node:assert/strict";
import {
  DEFAULT_TOKENS_PER_CHAR,
  MIN_OBSERVED_CHARS,
  TokenEstimator,
} from "#worker/scheduler/token_estimate.ts";
import type { WorkItem } from "#worker/families/types.ts";

const text = (chars: number): WorkItem => ({ text: "a".repeat(chars) });

Deno.test("token estimate: about 4 characters a token plus [CLS]/[SEP] until enough is observed", () => {
  const e = new TokenEstimator();
  assert.equal(e.tokensPerChar, DEFAULT_TOKENS_PER_CHAR);
  assert.equal(e.estimate(text(400)), 102);
  // Less text than the threshold teaches nothing yet.
  e.observe(text(MIN_OBSERVED_CHARS - 1), 2 + 100);
  assert.equal(e.tokensPerChar, DEFAULT_TOKENS_PER_CHAR);
});

Deno.test("token estimate: the rate follows the exact counts the thread reports", () => {
  const e = new TokenEstimator();
  // A tokenizer that makes one token of 8 characters (plus the two special tokens).
  for (let i = 0; i < 10; i++) e.observe(text(800), 2 + 100);
  assert.equal(e.tokensPerChar, 1 / 8);
  assert.equal(e.estimate(text(400)), 52);
  // Query and document both count for a pair.
  assert.equal(e.estimate({ text: "a".repeat(300), query: "a".repeat(100) }), 52);
});

Deno.test("token estimate: token ids are exact, images count patches, neither teaches the rate", () => {
  const e = new TokenEstimator();
  assert.equal(e.estimate({ tokenIds: [5, 6, 7] }), 5);
  const image: WorkItem = {
    pixels: [{
      data: new Float32Array(0),
      width: 224,
      height: 224,
      original: { width: 224, height: 224 },
      frame: { width: 224, height: 224 },
    }],
  };
  assert.equal(e.estimate(image), 50);
  for (let i = 0; i < 100; i++) {
    e.observe({ tokenIds: new Array(4000).fill(1) }, 4002);
    e.observe(image, 50);
  }
  assert.equal(e.tokensPerChar, DEFAULT_TOKENS_PER_CHAR);
});

Deno.test("token estimate: truncated items (at the model's longest) are not learned from", () => {
  const e = new TokenEstimator(512);
  // 10,000 characters cut to 512 tokens would teach 0.05 tokens a character.
  for (let i = 0; i < 5; i++) e.observe(text(10_000), 512);
  assert.equal(e.tokensPerChar, DEFAULT_TOKENS_PER_CHAR);
  for (let i = 0; i < 5; i++) e.observe(text(1_000), 2 + 500);
  assert.equal(e.tokensPerChar, 0.5);
});

Deno.test("token estimate: old observations fade, so a change of traffic is followed", () => {
  const e = new TokenEstimator();
  for (let i = 0; i < 400; i++) e.observe(text(1_000), 2 + 125); // 1/8
  assert.equal(e.tokensPerChar, 1 / 8);
  for (let i = 0; i < 400; i++) e.observe(text(1_000), 2 + 500); // 1/2
  assert.ok(e.tokensPerChar > 0.4, `rate ${e.tokensPerChar} still held by the old traffic`);
});
