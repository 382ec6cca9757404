/** The raw baseline's batching: sort by length, cut groups whose padded size fits a budget. */

/** A batch of the baseline: indexes into the inputs, and its padded shape. */
export interface PlannedBatch {
  indexes: number[];
  /** Longest input of the batch (every row is padded to it). */
  seq: number;
}

/**
 * Sort inputs by token count and group them so that rows × longest ≤ `paddedBudget`: the best a
 * server could do with the whole workload known in advance (the optimum the worker is held to).
 */
export function planBatches(lengths: readonly number[], paddedBudget: number): PlannedBatch[] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a] - lengths[b]);
  const batches: PlannedBatch[] = [];
  let cur: number[] = [];
  for (const i of order) {
    // Ascending order: the newcomer is the longest row if it joins.
    if (cur.length > 0 && (cur.length + 1) * lengths[i] > paddedBudget) {
      batches.push({ indexes: cur, seq: lengths[cur[cur.length - 1]] });
      cur = [];
    }
    cur.push(i);
  }
  if (cur.length > 0) batches.push({ indexes: cur, seq: lengths[cur[cur.length - 1]] });
  return batches;
}

/** Fraction of the tokens run that are padding, for a plan over `lengths`. */
export function paddingFraction(lengths: readonly number[], plan: readonly PlannedBatch[]): number {
  let padded = 0;
  let real = 0;
  for (const b of plan) {
    padded += b.indexes.length * b.seq;
    for (const i of b.indexes) real += lengths[i];
  }
  return padded === 0 ? 0 : (padded - real) / padded;
}
