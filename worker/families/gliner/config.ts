/** GLiNER settings: span width, window size, threshold and prompt token ids. */
import type { AdapterContext } from "../types.ts";
import { readJsonFile, type TextTokenizer } from "../text/tokenizer.ts";
import { DEFAULT_RELATION_PROMPT } from "./relations.ts";

/** What the GLiNER adapter needs to know about its model. */
export interface GlinerSettings {
  /** Widest span in words (`max_width`; the logits' third dimension). */
  maxWidth: number;
  /** Words per window (`max_len`); longer texts are split into windows. */
  maxWords: number;
  /** Default score threshold when the request sets none. */
  threshold: number;
  /** Id of the token put before each label (`<<ENT>>`). */
  entId: number;
  /** Id of the token that ends the label prompt (`<<SEP>>`). */
  sepId: number;
  /** Words put before the text in the relation pass (`family_options.relation_prompt`). */
  relationPrompt: string;
}

/**
 * Read `gliner_config.json` and `added_tokens.json` when the model has them; catalog
 * `family_options` and the tokenizer's own added tokens are the fallbacks.
 */
export async function loadGlinerSettings(
  ctx: AdapterContext,
  tok: TextTokenizer,
): Promise<GlinerSettings> {
  const fo = ctx.config.family_options;
  const cfg = (await readJsonFile(ctx.files.gliner_config, ctx.jsonBounds) ?? {}) as Record<
    string,
    unknown
  >;
  const added = (await readJsonFile(ctx.files.added_tokens, ctx.jsonBounds) ?? {}) as Record<
    string,
    unknown
  >;
  const entToken = typeof cfg.ent_token === "string" ? cfg.ent_token : "<<ENT>>";
  const sepToken = typeof cfg.sep_token === "string" ? cfg.sep_token : "<<SEP>>";
  const tokenId = (token: string): number => {
    const id = typeof added[token] === "number" ? added[token] : tok.tokenId(token);
    if (typeof id !== "number") throw new Error(`GLiNER model has no '${token}' token`);
    return id;
  };
  return {
    maxWidth: positive(cfg.max_width ?? fo.max_width ?? 12, "max_width"),
    maxWords: positive(cfg.max_len ?? fo.max_words ?? 384, "max_len"),
    threshold: typeof fo.threshold === "number" ? fo.threshold : 0.5,
    entId: tokenId(entToken),
    sepId: tokenId(sepToken),
    relationPrompt: typeof fo.relation_prompt === "string"
      ? fo.relation_prompt
      : DEFAULT_RELATION_PROMPT,
  };
}

function positive(v: unknown, name: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) {
    throw new Error(`GLiNER ${name} must be a positive integer, got ${JSON.stringify(v)}`);
  }
  return v;
}
