/**
 * Items of clients that went away: the batcher flags them in the running batch, and the inference
 * thread's driver never tokenises or runs flagged items (fake adapter: no ONNX here).
 */
import assert from "node:assert/strict";
import { ClientGoneError } from "@svc/shared/errors";
import { driveBatch } from "#worker/inference/driver.ts";
import type { ModelAdapter, PreparedItem, WorkItem } from "#worker/families/types.ts";
import { Batcher, type BatcherOptions } from "#worker/scheduler/batcher.ts";
import { waitFor } from "../../helpers/wait.ts";

/** An adapter that records what it prepared and ran; one item per run (length = budget). */
function recordingAdapter(onRun?: (group: PreparedItem[]) => void) {
  const prepared: number[] = [];
  const runs: number[][] = [];
  const adapter: ModelAdapter = {
    prepare(_item, index) {
      prepared.push(index);
      return { index, length: 10 };
    },
    run(group) {
      runs.push(group.map((p) => p.index));
      onRun?.(group);
      return Promise.resolve({
        outputs: group.map(() => ({ tokens: 10, score: 1 })),
        inferenceMs: 0,
        postprocessingMs: 0,
      });
    },
    dispose: () => Promise.resolve(),
  };
  return { adapter, prepared, runs };
}

const items = (n: number): WorkItem[] => Array.from({ length: n }, (_, i) => ({ text: `${i}` }));

Deno.test("driver: flagged items are not tokenised, and runs not started yet skip them", async () => {
  const abandoned = new Int32Array(new SharedArrayBuffer(6 * 4));
  abandoned[1] = 1;
  // While the first run goes on, the clients of items 3, 4 and 5 go away.
  const r = recordingAdapter((group) => {
    if (group[0].index === 0) { for (const i of [3, 4, 5]) Atomics.store(abandoned, i, 1); }
  });
  // A budget of 10 tokens: one item per run.
  const out = await driveBatch(r.adapter, items(6), { op: "encode" }, 10, abandoned);
  assert.deepEqual(r.prepared, [0, 2, 3, 4, 5]);
  assert.deepEqual(r.runs, [[0], [2]]);
  assert.equal(out.outputs[0].tokens, 10);
  assert.equal(out.outputs[2].tokens, 10);
  for (const i of [1, 3, 4, 5]) assert.equal(out.outputs[i], undefined);
});

Deno.test("batcher: a cancelled request's items in the running batch are flagged for the thread", async () => {
  let flags: Int32Array | undefined;
  let release!: () => void;
  const run: BatcherOptions["run"] = (batch, _params, abandoned) => {
    flags = abandoned;
    return new Promise((resolve) =>
      release = () =>
        resolve({
          outputs: batch.map(() => ({ tokens: 1 })),
          timing: { tokenizationMs: 0, inferenceMs: 0, postprocessingMs: 0 },
          paddedTokens: 0,
        })
    );
  };
  const b = new Batcher({
    maxBatchItems: 8,
    maxBatchRequests: 8,
    batchTokenBudget: 10_000,
    maxWaitMs: 5,
    maxQueueItems: 100,
    run,
  });
  const keep = b.submit(items(2), { op: "encode" });
  const gone = new AbortController();
  const dropped = b.submit(items(3), { op: "encode" }, gone.signal);
  // Both requests share the batch (dispatched after the 5 ms window).
  await waitFor(() => flags !== undefined, "the shared batch's run", { everyMs: 1 });
  assert.ok(flags);
  assert.equal(flags.length, 5);
  gone.abort();
  await assert.rejects(dropped, ClientGoneError);
  assert.deepEqual([...flags], [0, 0, 1, 1, 1]);
  release();
  assert.equal((await keep).outputs.length, 2);
});

Deno.test("driver: an item refused while tokenising takes its request's other items with it", async () => {
  const prepared: number[] = [];
  const runs: number[][] = [];
  const adapter: ModelAdapter = {
    prepare(_item, index) {
      prepared.push(index);
      return index === 1
        ? { index, length: 0, error: { code: "INVALID_INPUT", message: "over the bound" } }
        : { index, length: 10 };
    },
    run(group) {
      runs.push(group.map((p) => p.index));
      return Promise.resolve({
        outputs: group.map(() => ({ tokens: 10 })),
        inferenceMs: 0,
        postprocessingMs: 0,
      });
    },
    dispose: () => Promise.resolve(),
  };
  // Items 0, 1 and 4 are one request's; 2 and 3 another's; 5 a third's.
  const out = await driveBatch(adapter, items(6), { op: "extract" }, 10, undefined, {
    requestOf: [0, 0, 1, 1, 0, 2],
  });
  assert.deepEqual(prepared, [0, 1, 2, 3, 5], "item 4 is not even tokenised");
  assert.deepEqual(runs, [[2], [3], [5]]);
  assert.equal(out.outputs[1].error?.code, "INVALID_INPUT");
  for (const i of [0, 4]) assert.equal(out.outputs[i], undefined);
  for (const i of [2, 3, 5]) assert.equal(out.outputs[i].tokens, 10);
});
