/**
 * Similarity of two embeddings of the same model, by output type (docs/api.md, "Score"): dense by
 * cosine, sparse by dot product, multi-vector by MaxSim. Every result is a finite number: empty
 * or all-zero inputs score 0 instead of NaN.
 */

/** Cosine of two dense vectors of equal length; 0 when either is all zeros. */
export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`dense lengths differ: ${a.length} and ${b.length}`);
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return aa > 0 && bb > 0 ? ab / Math.sqrt(aa * bb) : 0;
}

/** A sparse vector: parallel index and weight lists (indices unique, in any order). */
export interface SparseTerms {
  indices: Int32Array;
  values: Float32Array;
}

/** Dot product of two sparse vectors: the sum of products over the indices they share. */
export function sparseDot(a: SparseTerms, b: SparseTerms): number {
  const [small, large] = a.indices.length <= b.indices.length ? [a, b] : [b, a];
  const weights = new Map<number, number>();
  for (let i = 0; i < small.indices.length; i++) weights.set(small.indices[i], small.values[i]);
  let sum = 0;
  for (let i = 0; i < large.indices.length; i++) {
    const w = weights.get(large.indices[i]);
    if (w !== undefined) sum += w * large.values[i];
  }
  return sum;
}

/** Row-major token vectors: `numTokens` rows of `tokenDims` values. */
export interface TokenVectors {
  values: Float32Array;
  numTokens: number;
  tokenDims: number;
}

/**
 * MaxSim (ColBERT late interaction): for every query token, the largest dot product with any
 * document token, summed over the query tokens. A document without tokens scores 0.
 */
export function maxSim(query: TokenVectors, doc: TokenVectors): number {
  if (query.tokenDims !== doc.tokenDims) {
    throw new Error(`token dimensions differ: ${query.tokenDims} and ${doc.tokenDims}`);
  }
  if (doc.numTokens === 0) return 0;
  const dim = query.tokenDims;
  const q = query.values;
  const d = doc.values;
  let sum = 0;
  for (let i = 0; i < query.numTokens; i++) {
    let best = -Infinity;
    const qo = i * dim;
    for (let j = 0; j < doc.numTokens; j++) {
      const dO = j * dim;
      let dot = 0;
      for (let k = 0; k < dim; k++) dot += q[qo + k] * d[dO + k];
      if (dot > best) best = dot;
    }
    sum += best;
  }
  return sum;
}
