/** GLiNER input tensors for a group of rows, padded to the longest row and the most words. */
import ort from "onnxruntime-node";
import type { ModelSession } from "../onnx_session.ts";
import type { GlinerRow } from "./rows.ts";

/**
 * The GLiNER inputs the graph declares: `input_ids`, `attention_mask`, `words_mask`,
 * `text_lengths`, and for span-level exports `span_idx`/`span_mask` (plus zero `token_type_ids`
 * for exports that declare it). Spans are `[i, i + j]` for start word i and width j; the mask is
 * true when the span ends inside the row's words; padding words get `[0, 0]`, masked.
 */
export function glinerFeeds(
  ms: ModelSession,
  rows: readonly GlinerRow[],
  maxWidth: number,
): Record<string, ort.Tensor> {
  const B = rows.length;
  const T = Math.max(1, ...rows.map((r) => r.ids.length));
  const W = Math.max(1, ...rows.map((r) => r.words));
  const S = W * maxWidth;
  const inputIds = new BigInt64Array(B * T);
  const attention = new BigInt64Array(B * T);
  const wordsMask = new BigInt64Array(B * T);
  const lengths = new BigInt64Array(B);
  rows.forEach((r, b) => {
    r.ids.forEach((id, t) => {
      inputIds[b * T + t] = BigInt(id);
      attention[b * T + t] = 1n;
      wordsMask[b * T + t] = BigInt(r.wordsMask[t]);
    });
    lengths[b] = BigInt(r.words);
  });
  const spans = (): { idx: BigInt64Array; mask: Uint8Array } => {
    const idx = new BigInt64Array(B * S * 2);
    const mask = new Uint8Array(B * S);
    rows.forEach((r, b) => {
      for (let i = 0; i < r.words; i++) {
        for (let j = 0; j < maxWidth; j++) {
          const s = b * S + i * maxWidth + j;
          idx[2 * s] = BigInt(i);
          idx[2 * s + 1] = BigInt(i + j);
          mask[s] = i + j < r.words ? 1 : 0;
        }
      }
    });
    return { idx, mask };
  };
  let spanTensors: { idx: BigInt64Array; mask: Uint8Array } | undefined;
  const all: Record<string, () => ort.Tensor> = {
    input_ids: () => new ort.Tensor("int64", inputIds, [B, T]),
    attention_mask: () => new ort.Tensor("int64", attention, [B, T]),
    token_type_ids: () => new ort.Tensor("int64", new BigInt64Array(B * T), [B, T]),
    words_mask: () => new ort.Tensor("int64", wordsMask, [B, T]),
    text_lengths: () => new ort.Tensor("int64", lengths, [B, 1]),
    span_idx: () => new ort.Tensor("int64", (spanTensors ??= spans()).idx, [B, S, 2]),
    span_mask: () => new ort.Tensor("bool", (spanTensors ??= spans()).mask, [B, S]),
  };
  const feeds: Record<string, ort.Tensor> = {};
  for (const name of ms.inputNames) {
    const make = all[name];
    if (!make) throw new Error(`model input '${name}' is not a GLiNER input this family provides`);
    feeds[name] = make();
  }
  return feeds;
}
