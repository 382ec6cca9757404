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

/**
 * Build the adapter of a static model (GloVe averages, model2vec): the dense one, except that a
 * text with no word the model knows is refused. Such a model averages the vectors of the words it
 * knows; with none, the mean is all zeros, a vector that scores 0 against everything and would
 * silently drag a search down. A 400 naming the model and the fact tells the client instead
 * (docs/api.md, "Static models"): an all-zero vector is never a meaningful answer.
 */
export async function createStaticAdapter(ctx: AdapterContext): Promise<ModelAdapter<TextItem>> {
  return new DenseAdapter(
    await loadTextModel(ctx),
    ctx.config.pooling,
    ctx.config.normalize,
    ctx.config.id,
  );
}

class DenseAdapter extends TextAdapter {
  constructor(
    model: TextModel,
    private readonly pooling: Pooling,
    private readonly normalize: boolean,
    /** Set for a static model: its id, named when a text has no known word (all zeros). */
    private readonly refuseZeroAs?: string,
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
      if (this.refuseZeroAs !== undefined && v.every((x) => x === 0)) {
        return { tokens: item.length, error: noKnownWord(this.refuseZeroAs) };
      }
      if (this.normalize) l2Normalize(v);
      return { dense: v, tokens: item.length };
    });
  }
}

/** The refusal of a text none of whose words a static model knows. */
function noKnownWord(model: string): { code: "INVALID_INPUT"; message: string } {
  return {
    code: "INVALID_INPUT",
    message: `model '${model}' knows none of the words of a text (a static model averages ` +
      "the vectors of the words it knows; with none the vector would be all zeros): check " +
      "its language and spelling",
  };
}
