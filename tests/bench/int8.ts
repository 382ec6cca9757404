/**
 * The int8 line of the bench: fixture/bench-small's dynamically quantised twin (@svc/onnx/writer
 * quantizeMatMulWeights) against the float graph, in-process, same texts and thread count.
 * Speed is measured in the rounds (interleaved with the float baseline); agreement here, as the
 * cosine between the mean-pooled vectors each graph gives (what the worker serves as `dense`).
 */
import { planBatches } from "./batching.ts";
import { buildFeeds, type RawModel } from "./raw_ort.ts";
import { cosine } from "../worker/expected.ts";

/** Mean over the real tokens of each row of a `[B, S, H]` output, row by row. */
export function meanPool(data: Float32Array, rows: readonly (readonly number[])[], seq: number) {
  const hidden = data.length / (rows.length * seq);
  return rows.map((r, b) => {
    const v = new Float64Array(hidden);
    for (let t = 0; t < r.length; t++) {
      const o = (b * seq + t) * hidden;
      for (let h = 0; h < hidden; h++) v[h] += data[o + h];
    }
    return v.map((x) => x / r.length);
  });
}

/** Pooled vectors of every input through `model` (sorted batches of ≤ `budget` padded tokens). */
async function pooled(model: RawModel, ids: readonly number[][], budget: number) {
  const out: Float64Array[] = new Array(ids.length);
  for (const b of planBatches(ids.map((r) => r.length), budget)) {
    const rows = b.indexes.map((i) => ids[i]);
    const res = await model.session.run(buildFeeds(model, rows));
    const first = res[model.session.outputNames[0]];
    const vecs = meanPool(first.data as Float32Array, rows, b.seq);
    b.indexes.forEach((i, k) => out[i] = vecs[k]);
  }
  return out;
}

/** Cosine per input between the float and the int8 graph's pooled vectors. */
export async function int8Cosines(
  fp32: RawModel,
  int8: RawModel,
  ids: readonly number[][],
  budget: number,
): Promise<number[]> {
  const a = await pooled(fp32, ids, budget);
  const b = await pooled(int8, ids, budget);
  return a.map((v, i) => cosine(v, b[i]));
}
