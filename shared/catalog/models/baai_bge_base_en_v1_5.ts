import type { ModelConfigInput } from "../schema.ts";

export default {
  id: "BAAI/bge-base-en-v1.5",
  family: "dense",
  hub: { repo: "BAAI/bge-base-en-v1.5", revision: "main" },
  files: { model: "onnx/model.onnx", tokenizer: "tokenizer.json" },
  inputs: ["text"],
  outputs: ["dense"],
  dims: { dense: 768 },
  max_sequence_length: 512,
  pooling: "cls",
  normalize: true,
  prompts: { query: "Represent this sentence for searching relevant passages: " },
  profiles: {
    default: { is_default: true, output_types: ["dense"], output_similarity: { dense: "cosine" } },
  },
  batch_token_budget: 4096,
  bundle: "default",
  licence: "MIT",
  verified_offline: false,
  description: "Base-size English retrieval encoder (768-d, CLS pooling) with a query instruction.",
} satisfies ModelConfigInput;
