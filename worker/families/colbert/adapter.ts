/**
 * ColBERT multi-vector family (Vespa-style export: `contextual [B,L,D]`, projected and normalised).
 * Queries get the query marker and are padded with [MASK] to a fixed length; documents get the
 * document marker and drop punctuation and padding vectors, as ColBERT does.
 */
import type ort from "onnxruntime-node";
import type { AdapterContext, ItemOutput, ModelAdapter, WorkItem, WorkParams } from "../types.ts";
import type { TokenTensors } from "../text/tensors.ts";
import { l2Normalize } from "../text/pooling.ts";
import { outputF32 } from "../onnx_session.ts";
import { textBody, type TextItem } from "../text/prepare.ts";
import { loadTextModel, TextAdapter, type TextModel } from "../text/base.ts";
import { COLBERT_OUTPUTS } from "../output_names.ts";

const PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

interface ColbertItem extends TextItem {
  isQuery: boolean;
}

interface ColbertSettings {
  queryMarker: number;
  documentMarker: number;
  queryLength: number;
  maskId: number;
  attendToMask: boolean;
  skip: Set<number>;
}

/** Build the ColBERT adapter. */
export async function createColbertAdapter(
  ctx: AdapterContext,
): Promise<ModelAdapter<ColbertItem>> {
  const model = await loadTextModel(ctx);
  const tok = model.tokenizer;
  const fo = ctx.config.family_options;
  const num = (k: string, fallback: number | undefined): number => {
    const v = fo[k] ?? fallback;
    if (typeof v !== "number") throw new Error(`ColBERT model needs family_options.${k}`);
    return v;
  };
  const skip = new Set<number>();
  for (const ch of PUNCTUATION) {
    const id = tok.tokenId(ch);
    if (id !== undefined) skip.add(id);
  }
  const settings: ColbertSettings = {
    queryMarker: num("query_marker_id", tok.tokenId("[unused0]")),
    documentMarker: num("document_marker_id", tok.tokenId("[unused1]")),
    queryLength: num("query_length", 32),
    maskId: num("mask_token_id", tok.tokenId("[MASK]")),
    // ColBERT's own default (and fastembed's): the [MASK] padding gets attention 0, so it is
    // still encoded (query augmentation) but no other token attends to it.
    attendToMask: fo.attend_to_mask_tokens === true,
    skip,
  };
  return new ColbertAdapter(model, settings);
}

class ColbertAdapter extends TextAdapter<ColbertItem> {
  constructor(model: TextModel, private readonly s: ColbertSettings) {
    super(model);
  }

  override prepare(item: WorkItem, index: number, params: WorkParams): ColbertItem {
    const tok = this.model.tokenizer;
    const isQuery = params.inputType === "query";
    const max = isQuery ? this.s.queryLength : tok.maxLength;
    const { prefix, suffix } = tok.template;
    // One extra slot for the marker, which goes right after [CLS].
    const room = Math.max(0, max - prefix.length - suffix.length - 1);
    let body: number[];
    let cut: boolean;
    if (item.tokenIds) {
      body = item.tokenIds.slice(0, room);
      cut = item.tokenIds.length > room;
    } else {
      const t = textBody(tok, params.prefix ?? "", item.text ?? "", room, params);
      if ("error" in t) return { index, length: 0, ids: [], isQuery, error: t.error };
      body = t.ids;
      cut = t.truncated;
    }
    const marker = isQuery ? this.s.queryMarker : this.s.documentMarker;
    const ids = [...prefix, marker, ...body, ...suffix];
    let attend: number | undefined;
    if (isQuery) {
      attend = this.s.attendToMask ? undefined : ids.length;
      while (ids.length < this.s.queryLength) ids.push(this.s.maskId);
    }
    return { index, length: ids.length, ids, attend, isQuery, truncated: cut };
  }

  protected postprocess(
    group: ColbertItem[],
    out: ort.InferenceSession.ReturnType,
    t: TokenTensors,
  ): ItemOutput[] {
    const { data, dims } = outputF32(out, COLBERT_OUTPUTS);
    const dim = dims[2];
    return group.map((item, b) => {
      const keep: number[] = [];
      for (let p = 0; p < item.ids.length; p++) {
        if (item.isQuery || !this.s.skip.has(item.ids[p])) keep.push(p);
      }
      const values = new Float32Array(keep.length * dim);
      keep.forEach((p, r) => {
        const src = (b * t.seq + p) * dim;
        values.set(data.subarray(src, src + dim), r * dim);
        l2Normalize(values, r * dim, (r + 1) * dim);
      });
      return {
        multivector: { values, numTokens: keep.length, tokenDims: dim },
        tokens: item.length,
      };
    });
  }
}
