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
