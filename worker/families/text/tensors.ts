/** Padded int64 token tensors for a group of tokenised texts. */

/** Row-major `[batch, seq]` int64 buffers ready for ONNX Runtime. */
export interface TokenTensors {
  batch: number;
  seq: number;
  inputIds: BigInt64Array;
  attentionMask: BigInt64Array;
  tokenTypeIds: BigInt64Array;
}

/** Pad a group of id lists to the longest one (pad id 0 unless given). */
export function padTokens(
  rows: { ids: readonly number[]; typeIds?: readonly number[]; attend?: number }[],
  padId = 0,
): TokenTensors {
  const batch = rows.length;
  let seq = 1;
  for (const r of rows) if (r.ids.length > seq) seq = r.ids.length;
  const inputIds = new BigInt64Array(batch * seq).fill(BigInt(padId));
  const attentionMask = new BigInt64Array(batch * seq);
  const tokenTypeIds = new BigInt64Array(batch * seq);
  for (let b = 0; b < batch; b++) {
    const { ids, typeIds } = rows[b];
    // `attend` lets a family attend to fewer tokens than it feeds (ColBERT query [MASK] padding).
    const attend = rows[b].attend ?? ids.length;
    const base = b * seq;
    for (let t = 0; t < ids.length; t++) {
      inputIds[base + t] = BigInt(ids[t]);
      if (t < attend) attentionMask[base + t] = 1n;
      if (typeIds) tokenTypeIds[base + t] = BigInt(typeIds[t]);
    }
  }
  return { batch, seq, inputIds, attentionMask, tokenTypeIds };
}
