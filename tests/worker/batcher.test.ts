import assert from "node:assert/strict";
import { Batcher, type BatcherOptions, groupKey } from "#worker/scheduler/batcher.ts";
import type { WorkItem, WorkParams } from "#worker/families/types.ts";
import { ServiceError } from "@svc/shared/errors";
import { FakeTime } from "../helpers/fake_time.ts";

const P: WorkParams = { op: "encode" };

/**
 * A runner whose batches finish only when the test releases them; `tokensOf` is the count the
 * "thread" reports per item (default: its text's length).
 */
function gatedRunner(tokensOf: (it: WorkItem) => number = (it) => it.text?.length ?? 0) {
  const batches: { items: WorkItem[]; params: WorkParams; release: () => void }[] = [];
  const run: BatcherOptions["run"] = (items, params) =>
    new Promise((resolve) => {
      batches.push({
        items,
        params,
        release: () =>
          resolve({
            outputs: items.map((it) => ({ tokens: tokensOf(it), score: Number(it.text) })),
            timing: { tokenizationMs: 1, inferenceMs: 2, postprocessingMs: 0 },
            paddedTokens: 0,
          }),
      });
    });
  return { batches, run };
}

function make(run: BatcherOptions["run"], over: Partial<BatcherOptions> = {}) {
  return new Batcher({
    maxBatchRequests: 64,
    maxBatchItems: 4,
    batchTokenBudget: 10_000,
    maxWaitMs: 0,
    maxQueueItems: 100,
    run,
    ...over,
  });
}

const items = (...xs: number[]) => xs.map((x) => ({ text: String(x) }));
const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("idle thread gets the first item at once; later items fill the next batch", async () => {
  const g = gatedRunner();
  const b = make(g.run);
  const first = b.submit(items(1), P);
  assert.equal(g.batches.length, 1, "dispatched without waiting");
  const rest = [2, 3, 4, 5, 6].map((x) => b.submit(items(x), P));
  assert.equal(b.queueDepth, 5);
  assert.equal(b.pendingItems, 6, "waiting items plus the running one");
  g.batches[0].release();
  assert.equal((await first).outputs[0].score, 1);
  await tick();
  assert.equal(g.batches.length, 2);
  assert.deepEqual(g.batches[1].items.map((i) => i.text), ["2", "3", "4", "5"], "capped at 4");
  g.batches[1].release();
  await tick();
  g.batches[2].release();
  const out = await Promise.all(rest);
  assert.deepEqual(out.map((r) => r.outputs[0].score), [2, 3, 4, 5, 6]);
});

Deno.test("items only share a batch with equal parameters; groups take turns", async () => {
  const g = gatedRunner();
  const b = make(g.run);
  const q: WorkParams = { ...P, prefix: "query: " };
  b.submit(items(0), P);
  const a = b.submit(items(1, 2), P);
  const c = b.submit(items(3), q);
  const d = b.submit(items(4), P);
  g.batches[0].release();
  await tick();
  assert.deepEqual(g.batches[1].items.map((i) => i.text), ["1", "2", "4"]);
  g.batches[1].release();
  await tick();
  assert.deepEqual(g.batches[2].items.map((i) => i.text), ["3"]);
  assert.equal(g.batches[2].params.prefix, "query: ");
  g.batches[2].release();
  await Promise.all([a, c, d]);
  assert.notEqual(groupKey(P), groupKey(q));
});

/** Params with every WorkParams field set (the compiler names any field added later). */
const EVERY_FIELD: Required<WorkParams> = {
  op: "extract",
  prefix: "query: ",
  inputType: "query",
  outputs: ["dense"],
  labels: ["person"],
  entityLabels: ["place"],
  fieldLabels: ["name"],
  prompt: "find",
  hypothesisTemplate: "This is {}.",
  multiLabel: true,
  threshold: 0.5,
  maxTokens: 64,
  truncate: "start",
  lora: "org/adapter",
};

/** Another value of each field: a request that differs from EVERY_FIELD in that field alone. */
const OTHER_VALUE: Required<WorkParams> = {
  op: "score",
  prefix: "passage: ",
  inputType: "document",
  outputs: ["sparse"],
  labels: ["org"],
  entityLabels: ["date"],
  fieldLabels: ["title"],
  prompt: "classify",
  hypothesisTemplate: "About {}.",
  multiLabel: false,
  threshold: 0.25,
  maxTokens: 32,
  truncate: "none",
  lora: "org/other",
};

Deno.test("batch key: every WorkParams field separates batches, unset fields and order do not", () => {
  const base = groupKey(EVERY_FIELD);
  for (const field of Object.keys(EVERY_FIELD) as (keyof WorkParams)[]) {
    const changed = { ...EVERY_FIELD, [field]: OTHER_VALUE[field] };
    assert.notEqual(groupKey(changed), base, `${field} is part of the batch key`);
    const unset: WorkParams = { ...EVERY_FIELD, [field]: undefined };
    if (field !== "op") assert.notEqual(groupKey(unset), base, `${field} unset is another batch`);
  }
  const reversed = Object.fromEntries(
    Object.entries(EVERY_FIELD).reverse(),
  ) as unknown as WorkParams;
  assert.equal(groupKey(reversed), base, "the order fields were set in does not matter");
  assert.equal(groupKey({ op: "encode", prefix: undefined }), groupKey({ op: "encode" }));
});

Deno.test("requests with different token caps or truncation never share a batch", async () => {
  const g = gatedRunner();
  const b = make(g.run);
  const score: WorkParams = { op: "score", maxTokens: 64 };
  const sent = new Map<string, WorkParams>([
    ["0", score],
    ["1", { ...score, maxTokens: 8 }],
    ["2", { ...score, truncate: "start" }],
    ["3", score],
  ]);
  const answers = [...sent].map(([text, params]) => b.submit([{ text }], params));
  for (let i = 0; i < 3; i++) {
    g.batches[i].release();
    await tick();
  }
  g.batches[3].release();
  await Promise.all(answers);
  // "0" ran alone (the thread was idle); "3" has the params of "0" but came after the others.
  assert.deepEqual(g.batches.map((batch) => batch.items.length), [1, 1, 1, 1]);
  for (const batch of g.batches) {
    assert.deepEqual(batch.params, sent.get(batch.items[0].text!), batch.items[0].text);
  }
});

Deno.test("a request's items are split across batches and reassembled in order", async () => {
  const g = gatedRunner();
  const b = make(g.run);
  const r = b.submit(items(1, 2, 3, 4, 5, 6, 7), P);
  g.batches[0].release();
  await tick();
  g.batches[1].release();
  const res = await r;
  assert.deepEqual(res.outputs.map((o) => o.score), [1, 2, 3, 4, 5, 6, 7]);
  assert.equal(res.timing.inferenceMs, 4, "timing summed over the two batches");
});

Deno.test("a request larger than a batch is drawn shortest first and answered in its own order", async () => {
  const g = gatedRunner();
  const b = make(g.run);
  const texts = ["aaaaaaaaaaaaaaaaaaaa", "a", "aaaaaaaaaaaaaaaa", "aa", "a".repeat(24), "aaaaaaaa"];
  const r = b.submit(texts.map((text) => ({ text })), P);
  assert.deepEqual(g.batches[0].items.map((i) => i.text?.length), [1, 16, 2, 8], "the 4 shortest");
  g.batches[0].release();
  await tick();
  assert.deepEqual(g.batches[1].items.map((i) => i.text?.length), [20, 24]);
  g.batches[1].release();
  const res = await r;
  assert.deepEqual(res.outputs.map((o) => o.tokens), texts.map((t) => t.length));
});

Deno.test("token budget closes a batch early", async () => {
  const g = gatedRunner();
  const b = make(g.run, { batchTokenBudget: 30, maxBatchItems: 64 });
  b.submit(items(0), P);
  const long = "x".repeat(60); // ≈ 17 estimated tokens each
  const r = b.submit([{ text: long }, { text: long }, { text: long }], P);
  g.batches[0].release();
  await tick();
  assert.equal(g.batches[1].items.length, 1);
  g.batches[1].release();
  await tick();
  g.batches[2].release();
  await tick();
  g.batches[3].release();
  assert.equal((await r).outputs.length, 3);
});

Deno.test("a full queue answers QUEUE_FULL at once", async () => {
  const g = gatedRunner();
  const b = make(g.run, { maxQueueItems: 3 });
  b.submit(items(0), P); // running
  const ok = b.submit(items(1, 2, 3), P);
  // "At once" without a clock: the refusal settles before any timer could fire.
  const refused = b.submit(items(4), P);
  const first = await Promise.race([
    refused.then(() => "resolved", () => "rejected"),
    tick().then(() => "still pending"),
  ]);
  assert.equal(first, "rejected");
  await assert.rejects(refused, (e: unknown) => {
    assert.ok(e instanceof ServiceError);
    assert.equal(e.code, "QUEUE_FULL");
    assert.equal(e.status, 503);
    assert.ok((e.retryAfterS ?? 0) > 0);
    return true;
  });
  g.batches[0].release();
  await tick();
  g.batches[1].release();
  await ok;
});

Deno.test("a request with more items than the whole queue is a 400 naming the limit, not QUEUE_FULL", async () => {
  const g = gatedRunner();
  const b = make(g.run, { maxQueueItems: 3 });
  await assert.rejects(b.submit(items(1, 2, 3, 4), P), (e: unknown) => {
    assert.ok(e instanceof ServiceError);
    assert.equal(e.code, "INVALID_INPUT");
    assert.equal(e.status, 400);
    assert.match(e.message, /needs 4 work items .* at most 3 \(SVC_MAX_QUEUE_ITEMS\)/);
    return true;
  });
  assert.equal(b.queueDepth, 0);
  assert.equal(g.batches.length, 0, "nothing reached the model");
  // Exactly the queue's size fits.
  const ok = b.submit(items(1, 2, 3), P);
  g.batches[0].release();
  assert.equal((await ok).outputs.length, 3);
});

Deno.test("SVC_MAX_BATCH_REQUESTS counts requests: a batch takes items of at most that many", async () => {
  const g = gatedRunner();
  const b = make(g.run, { maxBatchRequests: 2, maxBatchItems: 64 });
  const first = b.submit(items(0), P); // on the thread
  const rs = [[1, 2, 3], [4, 5, 6], [7], [8, 9]].map((xs) => b.submit(items(...xs), P));
  g.batches[0].release();
  await first;
  await tick();
  assert.deepEqual(g.batches[1].items.map((i) => i.text), ["1", "2", "3", "4", "5", "6"]);
  g.batches[1].release();
  await tick();
  assert.deepEqual(g.batches[2].items.map((i) => i.text), ["7", "8", "9"]);
  g.batches[2].release();
  const out = await Promise.all(rs);
  assert.deepEqual(out.map((r) => r.outputs.map((o) => o.score)), [[1, 2, 3], [4, 5, 6], [7], [
    8,
    9,
  ]]);
});

Deno.test("the item cap still splits a request; its rest counts as one request of the next batch", async () => {
  const g = gatedRunner();
  const b = make(g.run, { maxBatchRequests: 2, maxBatchItems: 4 });
  const first = b.submit(items(0), P);
  const a = b.submit(items(1, 2, 3, 4, 5, 6), P);
  const c = b.submit(items(7), P);
  const d = b.submit(items(8), P);
  g.batches[0].release();
  await first;
  await tick();
  assert.deepEqual(g.batches[1].items.map((i) => i.text), ["1", "2", "3", "4"], "item cap");
  g.batches[1].release();
  await tick();
  assert.deepEqual(g.batches[2].items.map((i) => i.text), ["5", "6", "7"], "two requests");
  g.batches[2].release();
  await tick();
  assert.deepEqual(g.batches[3].items.map((i) => i.text), ["8"]);
  g.batches[3].release();
  await Promise.all([a, c, d]);
});

Deno.test("with a wait window, a batch goes as soon as it holds SVC_MAX_BATCH_REQUESTS requests", async () => {
  const g = gatedRunner();
  const b = make(g.run, { maxBatchRequests: 2, maxBatchItems: 64, maxWaitMs: 60_000 });
  const one = b.submit(items(1), P);
  await tick();
  assert.equal(g.batches.length, 0, "one request waits for the batch to fill");
  const two = b.submit(items(2, 3), P);
  assert.equal(g.batches.length, 1, "two requests fill it: no wait");
  assert.deepEqual(g.batches[0].items.map((i) => i.text), ["1", "2", "3"]);
  g.batches[0].release();
  await Promise.all([one, two]);
});

Deno.test("work of a client that went away is dropped before inference", async () => {
  const g = gatedRunner();
  const b = make(g.run);
  b.submit(items(0), P);
  const ac = new AbortController();
  const gone = b.submit(items(1, 2), P, ac.signal);
  const kept = b.submit(items(3), P);
  ac.abort();
  await assert.rejects(gone);
  assert.equal(b.queueDepth, 1);
  g.batches[0].release();
  await tick();
  assert.deepEqual(g.batches[1].items.map((i) => i.text), ["3"]);
  g.batches[1].release();
  await kept;
});

Deno.test("wait window: an idle batcher waits up to maxWaitMs for the batch to fill", async () => {
  using time = new FakeTime();
  const g = gatedRunner();
  const b = make(g.run, { maxWaitMs: 30 });
  const r1 = b.submit(items(1), P);
  await time.tick(5);
  const r2 = b.submit(items(2), P);
  assert.equal(g.batches.length, 0, "still filling");
  await time.tick(24);
  assert.equal(g.batches.length, 0, "still filling 29 ms after the first item");
  await time.tick(1);
  assert.equal(g.batches.length, 1, "dispatched 30 ms after the first item");
  assert.equal(g.batches[0].items.length, 2);
  g.batches[0].release();
  await Promise.all([r1, r2]);
  // A full batch does not wait for the window.
  const full = b.submit(items(1, 2, 3, 4), P);
  assert.equal(g.batches.length, 2);
  g.batches[1].release();
  await full;
});

Deno.test("a failed batch fails its requests with INFERENCE_ERROR; the batcher keeps going", async () => {
  let calls = 0;
  const b = make((its) => {
    calls++;
    if (calls === 1) return Promise.reject(new Error("boom"));
    return Promise.resolve({
      outputs: its.map(() => ({ tokens: 1 })),
      timing: { tokenizationMs: 0, inferenceMs: 0, postprocessingMs: 0 },
      paddedTokens: 0,
    });
  });
  await assert.rejects(b.submit(items(1), P), (e: unknown) => {
    assert.ok(e instanceof ServiceError);
    assert.equal(e.code, "INFERENCE_ERROR");
    return true;
  });
  assert.equal((await b.submit(items(2), P)).outputs.length, 1);
  await b.whenIdle();
});

Deno.test("a request refused by one item's error: its other items never run, nor wait", async () => {
  const ran: string[] = [];
  let abandonedSeen: number[] = [];
  // One item per batch; item "bad" is refused by the thread (an item over a work bound).
  const b = make((its, _params, abandoned) => {
    ran.push(...its.map((i) => i.text!));
    return new Promise((resolve) =>
      setTimeout(() => {
        abandonedSeen = [...(abandoned ?? [])];
        resolve({
          outputs: its.map((it) =>
            it.text === "bad"
              ? { tokens: 0, error: { code: "INVALID_INPUT" as const, message: "too costly" } }
              : { tokens: 1 }
          ),
          timing: { tokenizationMs: 0, inferenceMs: 0, postprocessingMs: 0 },
          paddedTokens: 0,
        });
      }, 5)
    );
  }, { maxBatchItems: 1 });
  const refused = b.submit([{ text: "bad" }, { text: "a" }, { text: "b" }, { text: "c" }], P);
  await assert.rejects(refused, (e: unknown) => {
    assert.ok(e instanceof ServiceError && e.code === "INVALID_INPUT");
    return true;
  });
  await b.whenIdle();
  // Before: "a", "b" and "c" ran one by one after the request had been answered 400. Now "a",
  // dispatched as "bad" finished (the thread never waits), is flagged for the thread to skip.
  assert.deepEqual(ran, ["bad", "a"]);
  assert.deepEqual(abandonedSeen, [1]);
  assert.equal(b.queueDepth, 0);
});

Deno.test("once the token rate is learned, a batch's token budget holds items by their real size", async () => {
  // The thread's counts: one token per 8 characters, plus two specials.
  const g = gatedRunner((it) => 2 + Math.ceil((it.text?.length ?? 0) / 8));
  const b = make(g.run, { batchTokenBudget: 1_020, maxBatchItems: 1000, maxQueueItems: 10_000 });
  // 400 characters: 102 estimated tokens at 4 characters a token, 52 really.
  const first = b.submit(Array.from({ length: 40 }, () => ({ text: "a".repeat(400) })), P);
  assert.equal(g.batches[0].items.length, 10, "the default guess fits 10 in the budget");
  g.batches[0].release();
  await tick();
  assert.equal(b.tokensPerChar, 1 / 8);
  // Items already queued are cut with the learned rate too (estimated at dispatch).
  assert.deepEqual(
    g.batches.map((x) => x.items.length),
    [10, 19],
    "the learned rate fits 19 (52 each)",
  );
  g.batches[1].release();
  await tick();
  assert.equal(g.batches[2].items.length, 11);
  g.batches[2].release();
  assert.equal((await first).outputs.length, 40);
});

Deno.test("a request's weight counts against the queue bound until it is answered", async () => {
  const g = gatedRunner();
  const b = make(g.run, { maxQueueItems: 10 });
  // One item that costs 8 rows: it holds 8 of the 10 while it waits and while it runs.
  const heavy = b.submit(items(1), P, undefined, 8);
  await assert.rejects(b.submit(items(2, 3, 4, 5), P), (e: unknown) => {
    assert.ok(e instanceof ServiceError);
    assert.equal(e.code, "QUEUE_FULL");
    return true;
  });
  const light = b.submit(items(5, 6), P);
  g.batches[0].release();
  await heavy;
  await tick();
  g.batches[1].release();
  await light;
  // Answered: its weight is given back.
  const after = b.submit(items(7, 8, 9), P);
  await tick();
  g.batches[2].release();
  assert.equal((await after).outputs.length, 3);
  // A weight over the whole queue is a 400, as that many items would be.
  await assert.rejects(b.submit(items(1), P, undefined, 11), /needs 11 work items/);
});
