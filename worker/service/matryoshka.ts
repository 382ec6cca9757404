/** Matryoshka truncation of dense vectors: keep the first N values, re-normalise. */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { l2Normalize } from "../families/text/pooling.ts";

/**
 * Truncate to `dims` values and L2-normalise. Models trained with a layer norm before truncation
 * (Nomic: `family_options.matryoshka_layer_norm`) get it first; layer norm is scale-invariant, so
 * applying it to the already-normalised vector gives the same result as on the raw one.
 */
export function truncateDense(v: Float32Array, dims: number, config: ModelConfig): Float32Array {
  if (dims >= v.length) return v;
  let src = v;
  if (config.family_options.matryoshka_layer_norm === true) {
    let mean = 0;
    for (const x of v) mean += x;
    mean /= v.length;
    let variance = 0;
    for (const x of v) variance += (x - mean) * (x - mean);
    const inv = 1 / Math.sqrt(variance / v.length + 1e-5);
    src = v.map((x) => (x - mean) * inv);
  }
  return l2Normalize(src.slice(0, dims));
}
