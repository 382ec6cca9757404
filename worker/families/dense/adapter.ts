/** Dense text encoder family (BERT, XLM-R, Nomic...): pooled, optionally normalised vectors. */
import type ort from "onnxruntime-node";
import type { AdapterContext, ItemOutput, ModelAdapter } from "../types.ts";
import type { TokenTensors } from "../text/tensors.ts";
import { clsPool, l2Normalize, lastTokenPool, maxPool, meanPool } from "../text/pooling.ts";
import type { Pooling } from "@svc/shared/catalog/schema";
import { outputF32 } from "../onnx_session.ts";
import type { TextItem } from "../text/prepare.ts";
import { loadTextModel, TextAdapter, type TextModel } from "../text/base.ts";
import { DENSE_OUTPUTS } from "../output_names.ts";

/** Build the dense adapter. */
export async function createDenseAdapter(ctx: AdapterContext): Promise<ModelAdapter<TextItem>> {
  return new DenseAdapter(await loadTextModel(ctx), ctx.config.pooling, ctx.config.normalize);
}

class DenseAdapter extends TextAdapter {
  constructor(
    model: TextModel,
    private readonly pooling: Pooling,
    private readonly normalize: boolean,
  ) {
    super(model);
  }

  protected postprocess(
    group: TextItem[],
    out: ort.InferenceSession.ReturnType,
    t: TokenTensors,
  ): ItemOutput[] {
    const { data, dims } = outputF32(out, DENSE_OUTPUTS);
    return group.map((item, b) => {
      let v: Float32Array;
      if (dims.length === 2) {
        // Already pooled by the graph (static models, some sentence-transformers exports).
        v = data.slice(b * dims[1], (b + 1) * dims[1]);
      } else {
        const dim = dims[2];
        v = this.pooling === "cls"
          ? clsPool(data, b, t.seq, dim)
          : this.pooling === "max"
          ? maxPool(data, t.attentionMask, b, t.seq, dim)
          : this.pooling === "last_token"
          ? lastTokenPool(data, t.attentionMask, b, t.seq, dim)
          : meanPool(data, t.attentionMask, b, t.seq, dim);
      }
      if (this.normalize) l2Normalize(v);
      return { dense: v, tokens: item.length };
    });
  }
}
