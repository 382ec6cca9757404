/**
 * How a batch is cut into ONNX runs. Pure arithmetic on token lengths, shared by the inference
 * thread's batch driver and by families that cut their own runs (GLiNER windows).
 */

/** Anything with a token length (a prepared item, a GLiNER window row). */
export interface Sized {
  /** Tokens the model will see for this entry; a run costs rows × its longest entry. */
  length: number;
}

/**
 * Token equivalent of one image of `width`×`height` tensor pixels: one per 32×32 patch plus one,
 * what a ViT-B/32 reads. Images and texts share the same run budgets through it.
 */
export function imageTokens(width: number, height: number): number {
  return Math.ceil((width * height) / 1024) + 1;
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
export function planSubBatches<P extends Sized>(sorted: P[], tokenBudget: number): P[][] {
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
