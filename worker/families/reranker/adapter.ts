/** Cross-encoder reranker family: (query, document) pairs → one relevance logit each. */
import type ort from "onnxruntime-node";
import type { AdapterContext, ItemOutput, ModelAdapter, WorkItem, WorkParams } from "../types.ts";
import type { TokenTensors } from "../text/tensors.ts";
import { outputF32 } from "../onnx_session.ts";
import type { TextItem } from "../text/prepare.ts";
import { loadTextModel, TextAdapter, type TextModel } from "../text/base.ts";
import { memoLast } from "../text/memo.ts";
import { RERANKER_OUTPUTS } from "../output_names.ts";

interface PairItem extends TextItem {
  typeIds: number[];
}

/** Build the reranker adapter. */
export async function createRerankerAdapter(ctx: AdapterContext): Promise<ModelAdapter<PairItem>> {
  const sigmoid = ctx.config.family_options.activation === "sigmoid";
  return new RerankerAdapter(await loadTextModel(ctx), sigmoid);
}

/** The relevance score of row `b` from `[B,1]` logits, or `[B,2]` (softmax, positive class). */
export function pairScore(data: Float32Array, dims: readonly number[], b: number): number {
  const classes = dims.length > 1 ? dims[dims.length - 1] : 1;
  if (classes === 1) return data[b];
  const neg = data[b * classes];
  const pos = data[b * classes + classes - 1];
  return pos - neg; // logit of the positive class against the negative one
}

class RerankerAdapter extends TextAdapter<PairItem> {
  /** Every item of a score request carries the same query: tokenise it once. */
  readonly #queryIds: (query: string) => { ids: number[]; cut: boolean };

  constructor(model: TextModel, private readonly sigmoid: boolean) {
    super(model);
    const tok = model.tokenizer;
    this.#queryIds = memoLast((q) => tok.bodyIdsCut(q, tok.pairRoom()));
  }

  override prepare(item: WorkItem, index: number, params: WorkParams): PairItem {
    const tok = this.model.tokenizer;
    const query = this.#queryIds((params.prefix ?? "") + (item.query ?? ""));
    // A cap on the document's tokens (Cohere's max_tokens_per_doc) applies before the pair's.
    const doc = params.maxTokens === undefined
      ? { ids: item.text ?? "", cut: false }
      : tok.bodyIdsCut(item.text ?? "", Math.min(params.maxTokens, tok.pairRoom()));
    const pair = tok.encodePair(query.ids, doc.ids);
    const { ids, typeIds } = pair;
    const truncated = query.cut || doc.cut || pair.truncated === true;
    return { index, length: ids.length, ids, typeIds: typeIds ?? [], truncated };
  }

  protected postprocess(
    group: PairItem[],
    out: ort.InferenceSession.ReturnType,
    _t: TokenTensors,
  ): ItemOutput[] {
    const { data, dims } = outputF32(out, RERANKER_OUTPUTS);
    return group.map((item, b) => {
      const logit = pairScore(data, dims, b);
      return { score: this.sigmoid ? 1 / (1 + Math.exp(-logit)) : logit, tokens: item.length };
    });
  }
}
