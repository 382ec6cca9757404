/**
 * Runs one batch inside the inference thread: tokenise every item, sort by length, split into
 * sub-batches whose padded size fits the token budget, run them, put results back in order.
 */
import type {
  ItemOutput,
  ModelAdapter,
  PreparedItem,
  WorkItem,
  WorkParams,
} from "../families/types.ts";
import type { BatchTiming } from "./protocol.ts";

/** Result of one driven batch. */
export interface DrivenBatch {
  outputs: ItemOutput[];
  timing: BatchTiming;
  paddedTokens: number;
}

/**
 * Fixed cost of one ONNX run, in padded-token equivalents (dispatch, tensor set-up): without it
 * the optimal plan would run every item alone.
 */
export const RUN_COST_TOKENS = 64;

/**
 * Cut length-sorted items into runs that minimise Σ(rows × longest) + RUN_COST_TOKENS per run,
 * each run within the token budget (an item longer than the budget runs alone). Optimal by
 * dynamic programming over cut points; a greedy "fill to the budget" split leaves about a third
 * of the tokens as padding on mixed lengths (measured: 35% → 7%).
 */
export function planSubBatches<P extends PreparedItem>(sorted: P[], tokenBudget: number): P[][] {
  const n = sorted.length;
  const best = new Float64Array(n + 1).fill(Infinity);
  const cut = new Int32Array(n + 1);
  best[0] = 0;
  for (let j = 1; j <= n; j++) {
    // Run = sorted[i..j); sorted ascending, so its longest item is sorted[j - 1].
    for (let i = j - 1; i >= 0; i--) {
      const padded = (j - i) * sorted[j - 1].length;
      if (padded > tokenBudget && j - i > 1) break;
      const cost = best[i] + padded + RUN_COST_TOKENS;
      if (cost < best[j]) {
        best[j] = cost;
        cut[j] = i;
      }
    }
  }
  const groups: P[][] = [];
  for (let j = n; j > 0; j = cut[j]) groups.unshift(sorted.slice(cut[j], j));
  return groups;
}

/** Tokenise, sub-batch, run and reassemble one batch. */
export async function driveBatch(
  adapter: ModelAdapter,
  items: WorkItem[],
  params: WorkParams,
  tokenBudget: number,
): Promise<DrivenBatch> {
  const t0 = performance.now();
  const prepared = items.map((it, i) => adapter.prepare(it, i, params));
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
  for (const group of planSubBatches(runnable, tokenBudget)) {
    const r = await adapter.run(group, params);
    inferenceMs += r.inferenceMs;
    postprocessingMs += r.postprocessingMs;
    paddedTokens += group.length * group[group.length - 1].length;
    group.forEach((p, k) => outputs[p.index] = r.outputs[k]);
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
