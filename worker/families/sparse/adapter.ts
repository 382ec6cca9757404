/** SPLADE sparse family: masked-LM logits → log(1+ReLU) max-pooled over tokens, non-zeros only. */
import type ort from "onnxruntime-node";
import type { AdapterContext, ItemOutput, ModelAdapter } from "../types.ts";
import type { TokenTensors } from "../text/tensors.ts";
import { outputF32 } from "../onnx_session.ts";
import type { TextItem } from "../text/prepare.ts";
import { loadTextModel, TextAdapter } from "../text/base.ts";
import { SPARSE_OUTPUTS } from "../output_names.ts";

/** Build the SPLADE adapter. */
export async function createSparseAdapter(ctx: AdapterContext): Promise<ModelAdapter<TextItem>> {
  return new SparseAdapter(await loadTextModel(ctx));
}

/** SPLADE weights of one row: max over attended tokens of log(1 + relu(logit)). */
export function spladeRow(
  logits: Float32Array,
  mask: BigInt64Array,
  b: number,
  seq: number,
  vocab: number,
): { indices: Int32Array; values: Float32Array } {
  const best = new Float32Array(vocab);
  for (let t = 0; t < seq; t++) {
    if (mask[b * seq + t] === 0n) continue;
    const base = (b * seq + t) * vocab;
    for (let v = 0; v < vocab; v++) {
      const x = logits[base + v];
      if (x > best[v]) best[v] = x;
    }
  }
  // log1p is monotonic, so max-then-log equals log-then-max and costs vocab calls, not seq·vocab.
  let nnz = 0;
  for (let v = 0; v < vocab; v++) if (best[v] > 0) nnz++;
  const indices = new Int32Array(nnz);
  const values = new Float32Array(nnz);
  let k = 0;
  for (let v = 0; v < vocab; v++) {
    if (best[v] > 0) {
      indices[k] = v;
      values[k++] = Math.log1p(best[v]);
    }
  }
  return { indices, values };
}

class SparseAdapter extends TextAdapter {
  protected postprocess(
    group: TextItem[],
    out: ort.InferenceSession.ReturnType,
    t: TokenTensors,
  ): ItemOutput[] {
    const { data, dims } = outputF32(out, SPARSE_OUTPUTS);
    const vocab = dims[2];
    return group.map((item, b) => ({
      sparse: { ...spladeRow(data, t.attentionMask, b, t.seq, vocab), dims: vocab },
      tokens: item.length,
    }));
  }
}
