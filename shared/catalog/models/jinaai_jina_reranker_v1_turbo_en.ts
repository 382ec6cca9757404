import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "jinaai/jina-reranker-v1-turbo-en",
  family: "reranker",
  hub: { repo: "jinaai/jina-reranker-v1-turbo-en", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  inputs: ["text"],
  outputs: ["score"],
  dims: {},
  max_sequence_length: 8192,
  pooling: "none",
  normalize: false,
  profiles: {
    default: { is_default: true, output_types: ["score"] },
  },
  batch_token_budget: 8192,
  bundle: "default",
  licence: "Apache-2.0",
  verified_offline: false,
  family_options: { activation: "none" },
  description:
    "Compact English cross-encoder reranker that accepts long pairs (up to 8192 tokens).",
} satisfies ModelConfigInput;
