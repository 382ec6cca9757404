import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "BAAI/bge-reranker-base",
  family: "reranker",
  hub: { repo: "BAAI/bge-reranker-base", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  inputs: ["text"],
  outputs: ["score"],
  dims: {},
  max_sequence_length: 512,
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["score"] },
  },
  batch_token_budget: 4096,
  bundle: "default",
  licence: "MIT",
  verified_offline: false,
  // The logit is unbounded; a sigmoid maps it to 0..1 (same ranking).
  family_options: { activation: "sigmoid" },
  description: "XLM-R based cross-encoder reranker (English and Chinese), scores mapped to 0..1.",
} satisfies ModelConfigInput;
