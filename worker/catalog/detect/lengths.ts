/**
 * The longest input of a detected text model, in tokens, from the files that say it
 * (sentence-transformers, the tokenizer config, the position table), capped by the position table.
 */
import type { ModelConfigInput } from "@svc/shared/catalog/schema";
import type { Ctx } from "./context.ts";
import { DetectionError, sayIt } from "./errors.ts";
import { isJsonObject } from "./repo_view.ts";

/** Model types whose position table starts after the padding index (RoBERTa's offset of 2). */
const OFFSET_POSITIONS = new Set([
  "roberta",
  "xlm-roberta",
  "xlm-roberta-xl",
  "camembert",
  "mpnet",
  "longformer",
  "data2vec-text",
  "roberta-prelayernorm",
]);

/** A tokenizer_config `model_max_length` at or above this is a "no limit" placeholder. */
const PLACEHOLDER_LENGTH = 1_000_000;

/**
 * The longest input in tokens: the sentence-transformers `max_seq_length`, else the tokenizer's
 * `model_max_length` (unless it is a "no limit" placeholder), else the position table; never
 * above the position table when one is known (longer inputs would index past it).
 */
export function maxLength(ctx: Ctx, out: ModelConfigInput): number {
  const { rec, st } = ctx;
  const positions = positionLimit(ctx);
  const tokCfg = ctx.tokenizerConfig;
  const tokMax = isJsonObject(tokCfg) && typeof tokCfg.model_max_length === "number" &&
      tokCfg.model_max_length > 0 && tokCfg.model_max_length < PLACEHOLDER_LENGTH
    ? tokCfg.model_max_length
    : undefined;
  const tokFile = out.files.tokenizer_config ?? "tokenizer_config.json";
  let value: number | undefined;
  let from = "";
  if (st?.maxSeqLength) {
    value = st.maxSeqLength.value;
    from = st.maxSeqLength.from;
  } else if (tokMax !== undefined) {
    value = tokMax;
    from = `${tokFile} model_max_length`;
  } else if (positions) {
    value = positions.value;
    from = positions.from;
  }
  if (value === undefined) {
    throw new DetectionError(
      "config.json",
      "max_position_embeddings",
      `is missing, and neither ${tokFile} model_max_length nor sentence_bert_config.json ` +
        "max_seq_length gives the longest input",
      sayIt("max_sequence_length", "512"),
    );
  }
  if (positions && positions.value < value) {
    value = positions.value;
    from = `${from}, capped by ${positions.from}`;
  }
  return rec.set("max_sequence_length", value, from);
}

/** The position table's size (less RoBERTa's padding offset), from config.json. */
function positionLimit(ctx: Ctx): { value: number; from: string } | undefined {
  const c = ctx.config;
  const text = isJsonObject(c?.text_config) ? c.text_config : undefined;
  const encoder = isJsonObject(ctx.gliner?.encoder_config) ? ctx.gliner.encoder_config : undefined;
  const [raw, where, owner] = typeof c?.max_position_embeddings === "number"
    ? [c.max_position_embeddings, "config.json max_position_embeddings", c]
    : typeof text?.max_position_embeddings === "number"
    ? [text.max_position_embeddings, "config.json text_config.max_position_embeddings", text]
    : typeof encoder?.max_position_embeddings === "number"
    ? [
      encoder.max_position_embeddings,
      "gliner_config.json encoder_config.max_position_embeddings",
      encoder,
    ]
    : [undefined, "", undefined];
  if (typeof raw !== "number") return undefined;
  const type = owner?.model_type;
  const pad = owner?.pad_token_id;
  if (typeof type === "string" && OFFSET_POSITIONS.has(type) && typeof pad === "number") {
    return { value: raw - pad - 1, from: `${where} (${raw}, less ${type}'s padding offset)` };
  }
  return { value: raw, from: where };
}
