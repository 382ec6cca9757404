/** Pooling and normalisation over `[batch, seq, hidden]` float32 outputs. */

/** Mean of the attended token vectors of row `b` (mask is `[batch, seq]`). */
export function meanPool(
  hidden: Float32Array,
  mask: BigInt64Array,
  b: number,
  seq: number,
  dim: number,
): Float32Array {
  const out = new Float32Array(dim);
  let count = 0;
  for (let t = 0; t < seq; t++) {
    if (mask[b * seq + t] === 0n) continue;
    count++;
    const base = (b * seq + t) * dim;
    for (let d = 0; d < dim; d++) out[d] += hidden[base + d];
  }
  if (count > 0) { for (let d = 0; d < dim; d++) out[d] /= count; }
  return out;
}

/** The first token's vector of row `b` (CLS pooling). */
export function clsPool(hidden: Float32Array, b: number, seq: number, dim: number): Float32Array {
  const base = b * seq * dim;
  return hidden.slice(base, base + dim);
}

/** The element-wise maximum of the attended token vectors of row `b` (max pooling). */
export function maxPool(
  hidden: Float32Array,
  mask: BigInt64Array,
  b: number,
  seq: number,
  dim: number,
): Float32Array {
  const out = new Float32Array(dim).fill(-Infinity);
  let any = false;
  for (let t = 0; t < seq; t++) {
    if (mask[b * seq + t] === 0n) continue;
    any = true;
    const base = (b * seq + t) * dim;
    for (let d = 0; d < dim; d++) if (hidden[base + d] > out[d]) out[d] = hidden[base + d];
  }
  return any ? out : out.fill(0);
}

/**
 * The last attended token's vector of row `b` (last-token pooling of decoder embedding models;
 * rows are padded on the right, so it is the token before the first padding).
 */
export function lastTokenPool(
  hidden: Float32Array,
  mask: BigInt64Array,
  b: number,
  seq: number,
  dim: number,
): Float32Array {
  let last = 0;
  for (let t = 0; t < seq; t++) if (mask[b * seq + t] !== 0n) last = t;
  const base = (b * seq + last) * dim;
  return hidden.slice(base, base + dim);
}

/** L2-normalise in place (a zero vector stays zero); returns the same array. */
export function l2Normalize(v: Float32Array, from = 0, to = v.length): Float32Array {
  let s = 0;
  for (let i = from; i < to; i++) s += v[i] * v[i];
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let i = from; i < to; i++) v[i] *= inv;
  }
  return v;
}
