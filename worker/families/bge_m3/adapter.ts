/**
 * BGE-M3 family: one graph, three heads, one forward pass per batch. The published export
 * (`aapot/bge-m3-onnx`) names its outputs `dense_vecs [B, H]` (CLS, L2-normalised),
 * `sparse_vecs [B, L, 1]` (a ReLU weight per token) and `colbert_vecs [B, L-1, D]` (projected
 * tokens after CLS); other exports call them `dense`, `sparse`, `colbert` and leave
 * normalisation and masking to the caller. So the heads are found by `session.outputNames`, and
 * post-processing normalises and masks whatever the graph did or did not do:
 * - dense: the CLS row (already pooled when rank 2), L2;
 * - sparse: per vocabulary id, the largest weight over its occurrences among attended tokens,
 *   special tokens and zero weights dropped (as BGE-M3's lexical weights);
 * - multi-vector: every attended token after CLS (padding dropped), each row L2-normalised.
 * Only the heads a batch asked for (`params.outputs`) are post-processed and sent back.
 */
import type ort from "onnxruntime-node";
import type { OutputType } from "@svc/shared/schemas/encode";
import type { AdapterContext, ItemOutput, ModelAdapter, WorkParams } from "../types.ts";
import type { TokenTensors } from "../text/tensors.ts";
import { l2Normalize } from "../text/pooling.ts";
import type { TextItem } from "../text/prepare.ts";
import { loadTextModel, TextAdapter, type TextModel } from "../text/base.ts";
import { M3_HEAD_OUTPUTS } from "../output_names.ts";

/** The graph output name of each head the model has. */
export type M3Heads = Partial<Record<OutputType, string>>;

/** Find the heads among a session's output names. */
export function findHeads(outputNames: readonly string[]): M3Heads {
  const heads: M3Heads = {};
  for (
    const [type, names] of Object.entries(M3_HEAD_OUTPUTS) as [OutputType, readonly string[]][]
  ) {
    const name = names.find((n) => outputNames.includes(n));
    if (name) heads[type] = name;
  }
  return heads;
}

/** A float32 output tensor as the post-processing functions read it. */
export interface HeadTensor {
  data: Float32Array;
  dims: readonly number[];
}

/** Dense vector of row `b`: `[B, H]` as is, `[B, L, H]` by its CLS row; L2-normalised. */
export function m3Dense(head: HeadTensor, b: number): Float32Array {
  const dim = head.dims[head.dims.length - 1];
  const stride = head.dims.length === 3 ? head.dims[1] * dim : dim;
  return l2Normalize(head.data.slice(b * stride, b * stride + dim));
}

/**
 * Lexical weights of row `b` from per-token weights `[B, L, 1]` (or `[B, L]`): for each token id,
 * the largest weight among its attended, non-special occurrences; zeros dropped; by index.
 */
export function m3Sparse(
  head: HeadTensor,
  t: TokenTensors,
  b: number,
  special: ReadonlySet<number>,
): { indices: Int32Array; values: Float32Array } {
  const best = new Map<number, number>();
  for (let p = 0; p < t.seq; p++) {
    const at = b * t.seq + p;
    if (t.attentionMask[at] === 0n) continue;
    const id = Number(t.inputIds[at]);
    if (special.has(id)) continue;
    const w = head.data[at]; // [B, L, 1] and [B, L] share this layout
    if (w > (best.get(id) ?? 0)) best.set(id, w);
  }
  const ids = [...best.keys()].sort((x, y) => x - y);
  return {
    indices: Int32Array.from(ids),
    values: Float32Array.from(ids, (id) => best.get(id) ?? 0),
  };
}

/**
 * Token vectors of row `b`: the attended tokens after CLS, each L2-normalised. The head holds
 * either the `L-1` tokens after CLS or all `L` tokens (then the CLS row is skipped).
 */
export function m3MultiVector(
  head: HeadTensor,
  t: TokenTensors,
  b: number,
): { values: Float32Array; numTokens: number; tokenDims: number } {
  const [, rows, dim] = head.dims;
  const offset = t.seq - rows; // 1 when the head starts after CLS, 0 when it has every token
  if (offset !== 0 && offset !== 1) {
    throw new Error(`multi-vector head has ${rows} rows for ${t.seq} tokens`);
  }
  const keep: number[] = [];
  for (let p = 1; p < t.seq; p++) if (t.attentionMask[b * t.seq + p] !== 0n) keep.push(p);
  const values = new Float32Array(keep.length * dim);
  keep.forEach((p, r) => {
    const src = (b * rows + p - offset) * dim;
    values.set(head.data.subarray(src, src + dim), r * dim);
    l2Normalize(values, r * dim, (r + 1) * dim);
  });
  return { values, numTokens: keep.length, tokenDims: dim };
}

/** Build the BGE-M3 adapter; a declared output without a matching head fails the load. */
export async function createBgeM3Adapter(ctx: AdapterContext): Promise<ModelAdapter<TextItem>> {
  const model = await loadTextModel(ctx);
  const heads = findHeads(model.session.outputNames);
  const produced: OutputType[] = [];
  for (const kind of ctx.config.outputs) {
    if (kind !== "dense" && kind !== "sparse" && kind !== "multivector") continue;
    if (!heads[kind]) {
      await model.session.session.release();
      throw new Error(
        `model '${ctx.config.id}' declares '${kind}' but its graph has none of the outputs ` +
          `${M3_HEAD_OUTPUTS[kind].join(", ")} (it has: ${model.session.outputNames.join(", ")})`,
      );
    }
    produced.push(kind);
  }
  const sparseDims = ctx.config.dims.sparse ?? model.tokenizer.vocabSize;
  return new BgeM3Adapter(model, heads, produced, sparseDims);
}

class BgeM3Adapter extends TextAdapter {
  constructor(
    model: TextModel,
    private readonly heads: M3Heads,
    private readonly produced: readonly OutputType[],
    private readonly sparseDims: number,
  ) {
    super(model);
  }

  protected postprocess(
    group: TextItem[],
    out: ort.InferenceSession.ReturnType,
    t: TokenTensors,
    params?: WorkParams,
  ): ItemOutput[] {
    const wanted = new Set(params?.outputs ?? this.produced);
    const head = (type: OutputType): HeadTensor | undefined => {
      const name = this.heads[type];
      if (!wanted.has(type) || !name) return undefined;
      const tensor = out[name];
      if (tensor.type !== "float32") throw new Error(`output '${name}' is ${tensor.type}`);
      return { data: tensor.data as Float32Array, dims: tensor.dims };
    };
    const dense = head("dense");
    const sparse = head("sparse");
    const multi = head("multivector");
    const special = this.model.tokenizer.specialIds;
    return group.map((item, b) => {
      const o: ItemOutput = { tokens: item.length };
      if (dense) o.dense = m3Dense(dense, b);
      if (sparse) o.sparse = { ...m3Sparse(sparse, t, b, special), dims: this.sparseDims };
      if (multi) o.multivector = m3MultiVector(multi, t, b);
      return o;
    });
  }
}
