/**
 * Runs one batch inside the inference thread: tokenise every item, sort by length, split into
 * sub-batches whose padded size fits the token budget, run them, put results back in order. Items
 * whose client went away (flagged in `abandoned` by the main thread, even while the batch runs)
 * are not tokenised and are dropped from every run not yet started.
 */
import type {
  ItemOutput,
  ModelAdapter,
  PreparedItem,
  WorkItem,
  WorkParams,
} from "../families/types.ts";
import type { BatchTiming } from "./protocol.ts";
import { planSubBatches } from "../scheduler/sub_batches.ts";
import type { ComputeGate } from "./compute_budget.ts";

/** Result of one driven batch. */
export interface DrivenBatch {
  outputs: ItemOutput[];
  timing: BatchTiming;
  paddedTokens: number;
}

/**
 * Tokenise, sub-batch, run and reassemble one batch; abandoned items keep no output. Each ONNX run
 * holds `gate` (the worker's cores) when given; tokenising does not.
 */
export async function driveBatch(
  adapter: ModelAdapter,
  items: WorkItem[],
  params: WorkParams,
  tokenBudget: number,
  abandoned?: Int32Array,
  gate?: ComputeGate,
): Promise<DrivenBatch> {
  const gone = (i: number) => abandoned !== undefined && Atomics.load(abandoned, i) !== 0;
  const t0 = performance.now();
  const prepared: PreparedItem[] = [];
  items.forEach((it, i) => {
    if (!gone(i)) prepared.push(adapter.prepare(it, i, params));
  });
  const tokenizationMs = performance.now() - t0;
  const outputs: ItemOutput[] = new Array(items.length);
  const runnable: PreparedItem[] = [];
  for (const p of prepared) {
    if (p.error) outputs[p.index] = { tokens: 0, error: p.error };
    else runnable.push(p);
  }
  runnable.sort((a, b) => a.length - b.length);
  let inferenceMs = 0;
  let postprocessingMs = 0;
  let paddedTokens = 0;
  for (const planned of planSubBatches(runnable, tokenBudget)) {
    const group = abandoned ? planned.filter((p) => !gone(p.index)) : planned;
    if (group.length === 0) continue;
    const r = gate
      ? await gate.hold(() => adapter.run(group, params))
      : await adapter.run(group, params);
    inferenceMs += r.inferenceMs;
    postprocessingMs += r.postprocessingMs;
    paddedTokens += group.length * group[group.length - 1].length;
    group.forEach((p, k) => {
      outputs[p.index] = r.outputs[k];
      if (p.truncated && r.outputs[k]) r.outputs[k].truncated = true;
    });
  }
  return { outputs, timing: { tokenizationMs, inferenceMs, postprocessingMs }, paddedTokens };
}

/** Every distinct ArrayBuffer behind the outputs' typed arrays (to transfer, not copy). */
export function transferables(outputs: ItemOutput[]): ArrayBuffer[] {
  const seen = new Set<ArrayBuffer>();
  const add = (a: ArrayBufferView | undefined) => {
    if (a && a.buffer instanceof ArrayBuffer) seen.add(a.buffer);
  };
  for (const o of outputs) {
    if (!o) continue;
    add(o.dense);
    add(o.sparse?.indices);
    add(o.sparse?.values);
    add(o.multivector?.values);
  }
  return [...seen];
}
